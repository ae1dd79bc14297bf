import { MIN_STABLE_IMAGES, MIN_STABLE_SPAN_MS, OVERLOAD_RATE_SHARE } from '../../model/section.js';
import { MIN_SAMPLES_FOR } from '../../model/stats.js';
import { MIN_STABLE_REPEATS, percentileWithheld, shortRun, STABLE_SPREAD_SHARE, type RunReport } from '../report.js';
import { SHORT_RUN_NOTE } from '../wording.js';
import { escapeHtml } from './page.js';
import {
  BROKER_COLUMN,
  BROKER_SPLIT_COLUMNS,
  CLIENT_COLUMNS,
  CLOCK_COLUMN,
  COLUMNS,
  OPEN_LOOP_COLUMNS,
  type Column,
} from './summary-columns.js';
import {
  failureReason,
  hasBroker,
  hasBrokerSplit,
  hasClients,
  hasOpenLoop,
  hasTwoClocks,
  type RunView,
  type TransportInRun,
  type TransportView,
} from './views.js';

// The summary table: a sortable row per transport, the before and after values with their change.

const formatNumber = (value: number | null, digits: number): string =>
  value === null
    ? '–'
    : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function resultHtml(run: TransportInRun | undefined, report: RunReport): string {
  if (run === undefined) return '<span class="badge absent">not run</span>';
  if (run.summary.ok) {
    const { notSteadyRepeats, repeats } = run.summary;
    const overloaded = report.sections.filter(
      (s) => s.transport === run.summary.transport && s.openLoop?.overloaded === true,
    ).length;
    const notes = [
      notSteadyRepeats > 0
        ? `warm-up NOT STEADY in ${notSteadyRepeats} of ${repeats}: figures may include warm-up`
        : '',
      overloaded > 0
        ? `OVERLOADED at RATE` +
          (repeats > 1 ? ` in ${overloaded} of ${repeats}` : '') +
          `: sent or delivered under ${OVERLOAD_RATE_SHARE * 100} % of RATE; see p99 from due`
        : '',
    ].filter(Boolean);
    return [
      '<span class="badge ok">ok</span>',
      ...notes.map((note) => `<span class="reason">${escapeHtml(note)}</span>`),
    ].join(' ');
  }
  const { completedRepeats, repeats } = run.summary;
  // With repeats, a FAILED row may still have figures: they are its completed repeats'.
  const completed =
    repeats > 1 ? ` <span class="completed">${completedRepeats} of ${repeats} repeats completed</span>` : '';
  return (
    `<span class="badge failed">FAILED</span> <span class="reason">` +
    escapeHtml(failureReason(run.summary, report)) +
    `</span>${completed}`
  );
}

function changeHtml(before: number | null, after: number | null, column: Column): string {
  if (before === null || after === null || column.lowerIsBetter === null) return '';
  const change = after - before;
  // Counts move by whole images: a percentage of 0 lost images says nothing.
  if (column.digits === 0) {
    if (change === 0) return '';
    return (
      `<span class="change ` +
      (change < 0 === column.lowerIsBetter ? 'better' : 'worse') +
      `">${change > 0 ? '+' : '−'}${Math.abs(change)}</span>`
    );
  }
  if (before === 0) return change === 0 ? '<span class="change same">±0</span>' : '';
  const percent = (change / before) * 100;
  const rounded = Math.abs(percent) < 0.05 ? 0 : percent;
  const direction = Math.abs(rounded) < 1 ? 'same' : change < 0 === column.lowerIsBetter ? 'better' : 'worse';
  const text = rounded === 0 ? '±0%' : `${rounded > 0 ? '+' : '−'}${Math.abs(rounded).toFixed(1)}%`;
  return `<span class="change ${direction}">${text}</span>`;
}

/** The summary card: a sortable row per transport, with the before value and the change for two runs. */
export function renderTableSection(views: readonly RunView[], transports: readonly TransportView[]): string {
  const twoRuns = views.length > 1;
  const last = views.length - 1;
  // Across two clocks, the clock error sits right after the one-way figures it bounds.
  const beforeRtt = COLUMNS.findIndex((c) => c.header.startsWith('RTT'));
  const oneWayColumns = hasTwoClocks(transports)
    ? [...COLUMNS.slice(0, beforeRtt), CLOCK_COLUMN, ...COLUMNS.slice(beforeRtt)]
    : COLUMNS;
  const openLoop = hasOpenLoop(transports);
  // Under RATE the MB/s is the offered load as delivered: its header says so.
  const atRate = (c: Column): Column =>
    openLoop && (c.header === 'MB/s' || c.header === 'images/s')
      ? {
          ...c,
          header: `${c.header} at RATE`,
          hint: `${c.hint}. Under RATE: what was delivered at the offered load, not a capacity`,
        }
      : c;
  const columns = [
    ...oneWayColumns.map(atRate),
    ...(hasBroker(transports) ? [BROKER_COLUMN] : []),
    ...(hasBrokerSplit(transports) ? BROKER_SPLIT_COLUMNS : []),
    ...(hasClients(transports) ? CLIENT_COLUMNS : []),
    ...(openLoop ? OPEN_LOOP_COLUMNS : []),
  ];
  const headerCells = [
    `<th scope="col" data-type="text" class="text"><button type="button">Transport</button></th>`,
    ...columns.map(
      (c) =>
        `<th scope="col" data-type="number" title="${escapeHtml(c.hint)}"><button ` +
        `type="button">${escapeHtml(c.header)}</button></th>`,
    ),
    `<th scope="col" data-type="text" class="text"><button type="button">Result</button></th>`,
  ].join('');
  const rows = transports.map((t, index) => {
    const latest = t.perRun[last];
    const failed = latest !== undefined && !latest.summary.ok;
    const cells = columns.map((column) => {
      const values = t.perRun.map((r) => (r === undefined ? null : column.value(r)));
      const now = values[last]!;
      const spread = latest === undefined ? null : (column.spread?.(latest) ?? null);
      const title =
        spread !== null && spread.min !== spread.max
          ? ` title="completed repeats: ` +
            formatNumber(spread.min, column.digits) +
            `–${formatNumber(spread.max, column.digits)}"`
          : '';
      const mark = latest !== undefined && now !== null && column.indicative?.(latest) ? '~' : '';
      const main = `<span class="now">${mark}${formatNumber(now, column.digits)}</span>`;
      const was = twoRuns
        ? `<span class="was">${formatNumber(values[0]!, column.digits)}</span>${changeHtml(values[0]!, now, column)}`
        : '';
      return `<td class="num" data-sort="${now ?? ''}"${title}>${main}${was}</td>`;
    });
    const result = resultHtml(latest, views[last]!.report);
    // The before result only when it differs: "before: ok" on every row would bury the changes.
    const earlier = twoRuns ? resultHtml(t.perRun[0], views[0]!.report) : '';
    const beforeResult = twoRuns && earlier !== result ? `<span class="was">before: ${earlier}</span>` : '';
    const sortResult = latest === undefined ? 'absent' : latest.summary.ok ? 'ok' : 'failed';
    return (
      `<tr data-transport="${escapeHtml(t.key)}" data-index="${index}"${failed ? ' class="failed"' : ''}>
<td class="text transport" data-sort="${escapeHtml(t.title)}"><span class="swatch" style="background:${t.color}` +
      `"></span>${escapeHtml(t.title)}</td>
${cells.join('')}
<td class="text result" data-sort="${sortResult}">${result}${beforeResult}</td>
</tr>`
    );
  });
  const repeats = Math.max(...views.map((v) => v.report.run.repeat));
  const anyIncomplete = transports.some((t) => t.perRun.some((r) => r !== undefined && r.median === undefined));
  const notes = [
    repeats > 1
      ? 'Latency, round trip (RTT), total, throughput and CPU come from the median completed repeat, every image ' +
        'intact (hover a cell for the spread across completed repeats); OK, Lost and Corrupt count every repeat.'
      : '',
    anyIncomplete
      ? 'A transport with no completed repeat has no figures (–): a failed repeat’s partial figures are not a result.'
      : '',
    transports.some((t) => t.perRun.some((r) => r?.median !== undefined && r.summary.throughputIndicative))
      ? `~ marks an indicative MB/s: fewer than ${MIN_STABLE_REPEATS} completed repeats, or their MB/s beyond ` +
        `±${STABLE_SPREAD_SHARE * 100} % of the median (or a section under ${MIN_STABLE_IMAGES} images ` +
        `or ${MIN_STABLE_SPAN_MS} ms); run with REPEAT=${MIN_STABLE_REPEATS} or more for a figure its repeats ` +
        `vouch for.`
      : '',
    transports.some((t) =>
      t.perRun.some((r) => percentileWithheld(r?.median?.latency) || percentileWithheld(r?.median?.rtt)),
    )
      ? `A percentile shows – where the sample is too small for it: p90 needs ${MIN_SAMPLES_FOR.p90} images, ` +
        `p99 ${MIN_SAMPLES_FOR.p99}, p99.9 ` +
        MIN_SAMPLES_FOR.p999.toLocaleString('en-US') +
        ` (with fewer, it is the max itself).`
      : '',
    transports.some((t) => t.perRun.some((r) => shortRun(r?.median))) ? SHORT_RUN_NOTE : '',
    openLoop
      ? 'Under RATE, MB/s and images/s are what was delivered at the offered load (RATE × size when it kept up), ' +
        'not the transport’s capacity: the closed loop measures that.'
      : '',
    'Connect and First image are the cold start of a new connection, before its warm-up, apart from the steady ' +
      'figures.',
    twoRuns
      ? 'Each cell shows the after value, then the before value and the change: green is better, red is worse.'
      : '',
    'Click a column header to sort.',
  ].filter(Boolean);
  return `<section class="card summary" aria-label="Summary">
<h2>Summary</h2>
<p class="note">${escapeHtml(notes.join(' '))}</p>
<div class="table-scroll">
<table class="summary-table sortable${twoRuns ? ' two-runs' : ''}">
<thead><tr>${headerCells}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
</div>
</section>`;
}

/** True when a distribution has times but too few for one of its percentiles. */
