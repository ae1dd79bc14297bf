import { MIN_STABLE_IMAGES, MIN_STABLE_SPAN_MS, OVERLOAD_RATE_SHARE, type SectionResult } from '../../model/section.js';
import { MIN_SAMPLES_FOR } from '../../model/stats.js';
import { MIN_STABLE_REPEATS, percentileWithheld, shortRun, STABLE_SPREAD_SHARE, type RunReport } from '../report.js';
import { SHORT_RUN_NOTE } from '../wording.js';
import { settingText } from './deadline-table.js';
import { figureCells, headerCells, transportCell } from './figure-table.js';
import { escapeHtml } from './page.js';
import {
  BROKER_COLUMN,
  BROKER_SPLIT_COLUMNS,
  CLIENT_COLUMNS,
  CLOCK_COLUMN,
  COLUMNS,
  FRAME_AGE_COLUMNS,
  frameAgeOf,
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

/** Sections of the transport whose `flag` is set: OVERLOADED, or over the deadline share, under RATE. */
function sectionsWhere(report: RunReport, transport: string, flag: (s: SectionResult) => boolean): SectionResult[] {
  return report.sections.filter((s) => s.transport === transport && flag(s));
}

/** Under RATE the MB/s is the offered load as delivered: its header says so. */
function atRate(c: Column): Column {
  return c.header === 'MB/s' || c.header === 'images/s'
    ? {
        ...c,
        header: `${c.header} at RATE`,
        hint: `${c.hint}. Under RATE: what was delivered at the offered load, not a capacity`,
      }
    : c;
}

function resultHtml(run: TransportInRun | undefined, report: RunReport): string {
  if (run === undefined) return '<span class="badge absent">not run</span>';
  if (run.summary.ok) {
    const { notSteadyRepeats, repeats, transport } = run.summary;
    const overloaded = sectionsWhere(report, transport, (s) => s.openLoop?.overloaded === true).length;
    const missed = sectionsWhere(report, transport, (s) => s.openLoop?.deadline?.overDeadline === true);
    const deadline = missed[0]?.openLoop?.deadline;
    const notes = [
      notSteadyRepeats > 0
        ? `warm-up NOT STEADY in ${notSteadyRepeats} of ${repeats}: figures may include warm-up`
        : '',
      overloaded > 0
        ? `OVERLOADED at RATE` +
          (repeats > 1 ? ` in ${overloaded} of ${repeats}` : '') +
          `: sent or delivered under ${OVERLOAD_RATE_SHARE * 100} % of RATE; see frame age`
        : '',
      deadline != null
        ? `MISSED DEADLINE` +
          (repeats > 1 ? ` in ${missed.length} of ${repeats}` : '') +
          `: over ${settingText(deadline.allowedLateShare * 100)} % of frames older than ` +
          `${settingText(deadline.deadlineMs)} ms from their due time or ` +
          `undelivered; see Deadline and jitter`
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

/** The summary card: a sortable row per transport, with the before value and the change for two runs. */
export function renderTableSection(views: readonly RunView[], transports: readonly TransportView[]): string {
  const twoRuns = views.length > 1;
  const last = views.length - 1;
  const openLoop = hasOpenLoop(transports);
  // Under RATE the frame age leads, the time on the link beside it, in place of the one-way figures.
  const firstOneWay = COLUMNS.findIndex((c) => c.header === 'p50 ms');
  const afterOneWay = COLUMNS.findIndex((c) => c.header === 'max ms') + 1;
  const oneWay = openLoop ? FRAME_AGE_COLUMNS : COLUMNS.slice(firstOneWay, afterOneWay);
  // Across two clocks, the clock error sits right after the one-way figures it bounds.
  const columns = [
    ...COLUMNS.slice(0, firstOneWay),
    ...oneWay,
    ...(hasTwoClocks(transports) ? [CLOCK_COLUMN] : []),
    ...COLUMNS.slice(afterOneWay).map((c) => (openLoop ? atRate(c) : c)),
    ...(hasBroker(transports) ? [BROKER_COLUMN] : []),
    ...(hasBrokerSplit(transports) ? BROKER_SPLIT_COLUMNS : []),
    ...(hasClients(transports) ? CLIENT_COLUMNS : []),
    ...(openLoop ? OPEN_LOOP_COLUMNS : []),
  ];
  const head = [
    ...headerCells(columns),
    `<th scope="col" data-type="text" class="text"><button type="button">Result</button></th>`,
  ].join('');
  const rows = transports.map((t, index) => {
    const latest = t.perRun[last];
    const failed = latest !== undefined && !latest.summary.ok;
    const result = resultHtml(latest, views[last]!.report);
    // The before result only when it differs: "before: ok" on every row would bury the changes.
    const earlier = twoRuns ? resultHtml(t.perRun[0], views[0]!.report) : '';
    const beforeResult = twoRuns && earlier !== result ? `<span class="was">before: ${earlier}</span>` : '';
    const sortResult = latest === undefined ? 'absent' : latest.summary.ok ? 'ok' : 'failed';
    return `<tr data-transport="${escapeHtml(t.key)}" data-index="${index}"${failed ? ' class="failed"' : ''}>
${transportCell(t)}
${figureCells(t, columns, twoRuns).join('')}
<td class="text result" data-sort="${sortResult}">${result}${beforeResult}</td>
</tr>`;
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
      t.perRun.some(
        (r) =>
          percentileWithheld(r?.median?.latency) ||
          percentileWithheld(r?.median?.rtt) ||
          (openLoop && percentileWithheld(frameAgeOf(r?.median))),
      ),
    )
      ? `A percentile shows – where the sample is too small for it: p90 needs ${MIN_SAMPLES_FOR.p90} images, ` +
        `p99 ${MIN_SAMPLES_FOR.p99}, p99.9 ` +
        MIN_SAMPLES_FOR.p999.toLocaleString('en-US') +
        ` (with fewer, it is the max itself).`
      : '',
    transports.some((t) => t.perRun.some((r) => shortRun(r?.median))) ? SHORT_RUN_NOTE : '',
    openLoop
      ? 'Under RATE, the frame age leads: each frame’s age at arrival counted from its due time, a wait before it ' +
        'was handed to the link included (coordinated omission corrected); on the link: from the stamp taken as it ' +
        'was handed to the link. The deadline, late frames, gaps and jitter are in Deadline and jitter below. MB/s ' +
        'and images/s are what was delivered at the offered load (RATE × size when it kept up), not the ' +
        'transport’s capacity: the closed loop measures that.'
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
<thead><tr>${head}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
</div>
</section>`;
}
