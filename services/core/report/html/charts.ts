import { MIN_SAMPLES_FOR } from '../../model/stats.js';
import { failedShownSuffix, FAILED_SHOWN, noDataSuffix } from './chart-lines.js';
import { NO_SERIES, SERIES_MAX_POINTS } from './chart-series.js';
import type { ChartName, ChartSpec, LineDataset } from './chart-types.js';
import { escapeHtml, shortDate } from './page.js';
import { hasBroker, hasOpenLoop, type RunRole, type RunView, type TransportView } from './views.js';

// The page's charts section: a card per chart, with its note, its key to the runs and what it
// lacks; the page's script draws into each card's canvas.

/** How a chart's key draws the two runs: lines with the before dashed, faint lines, or bars. */
type KeyStyle = 'line' | 'faint' | 'bar';

function runKey(views: readonly RunView[], style: KeyStyle): string {
  if (views.length === 1) return '';
  const [before, after] = [views[0]!, views[1]!];
  const sample = (role: 'before' | 'after'): string =>
    `<span class="key-${style === 'faint' ? 'line key-faint' : style} key-${role}" aria-hidden="true"></span>`;
  const short = (view: RunView): string => escapeHtml(shortDate(view.report.run.startedAt));
  return (
    `<p class="run-key"><span class="key-item">${sample('after')}after (${short(after)})</span> <span ` +
    `class="key-item">${sample('before')}before (${short(before)})</span></p>`
  );
}

/**
 * Under a chart: the transports it has no data for (and why), and those it draws from a failed repeat, in every run or
 * in one.
 */
function chartNote(views: readonly RunView[], spec: ChartSpec, transports: readonly TransportView[]): string {
  const missing = (t: TransportView, ti: number, role: RunRole): string | null => {
    if (spec.kind === 'bars')
      return spec.datasets.some((d) => d.run === role && d.data[ti] !== null) ? null : 'no data';
    const line = spec.datasets.find((d) => d.run === role && d.transport === t.key);
    return line === undefined ? 'no data' : line.missing;
  };
  const failedShown = (t: TransportView, role: RunRole): boolean =>
    spec.kind !== 'bars' && spec.datasets.some((d) => d.run === role && d.transport === t.key && d.failedRepeat);
  const groups = new Map<string, string[]>();
  transports.forEach((t, ti) => {
    const suffixes = [
      noDataSuffix(
        views,
        views.map((v) => missing(t, ti, v.role)),
      ),
      failedShownSuffix(
        views,
        views.map((v) => failedShown(t, v.role)),
      ),
    ];
    for (const suffix of suffixes) if (suffix !== '') groups.set(suffix, [...(groups.get(suffix) ?? []), t.title]);
  });
  if (groups.size === 0) return '';
  const items = [...groups].map(
    ([suffix, titles]) => `<span class="tag failed">${escapeHtml(suffix)}</span> ${escapeHtml(titles.join(', '))}`,
  );
  return `<p class="no-data">${items.join(' ')}</p>`;
}

/**
 * What a tail chart says of its windows (tail-windows.ts): each transport's window length where a second had too few
 * images for a p99; '' when every line is drawn by the second (or bucket).
 */
function windowsNote(views: readonly RunView[], spec: ChartSpec, transports: readonly TransportView[]): string {
  if (spec.kind !== 'over-time') return '';
  const byLength = new Map<number, string[]>();
  let upperBound = false;
  let roundTripsMissing = false;
  for (const t of transports)
    for (const view of views) {
      const windowed = spec.datasets.find(
        (d) => d.transport === t.key && d.run === view.role && d.windowSeconds !== undefined,
      );
      if (windowed === undefined) continue;
      const seconds = windowed.windowSeconds!;
      const own = spec.datasets.filter((d) => d.transport === t.key && d.run === view.role);
      upperBound ||= own.some((d) => d.windowUpperBound);
      roundTripsMissing ||= own.some(
        (d) => d.figure === 'RTT p99' && d.windowSeconds === undefined && d.data.every((p) => p.y === null),
      );
      const name = views.length === 1 ? t.title : `${t.title} ${view.role}`;
      byLength.set(seconds, [...(byLength.get(seconds) ?? []), name]);
    }
  if (byLength.size === 0) return '';
  const lengths = [...byLength]
    .sort(([a], [b]) => a - b)
    .map(([seconds, names]) => `${names.join(', ')}: ${seconds.toLocaleString('en-US')} s`);
  return (
    ` Where a second holds fewer than ${MIN_SAMPLES_FOR.p99} images, each p99 point is a window of consecutive ` +
    `seconds long enough for ${MIN_SAMPLES_FOR.p99} (${lengths.join('; ')}), its p99 from their histograms added.` +
    (upperBound
      ? ` A window that holds a second of ${MIN_SAMPLES_FOR.p99} or more shows the largest p99 of its seconds (and ` +
        `the others' max): an upper bound.`
      : '') +
    (roundTripsMissing
      ? ` The round trips are drawn by the second only (the transmitter keeps no histogram of a second): none ` +
        `where a second holds fewer than ${MIN_SAMPLES_FOR.p99}.`
      : '')
  );
}

/** The page's charts section: a card per chart of `specs`. */
export function renderCharts(
  views: readonly RunView[],
  transports: readonly TransportView[],
  specs: readonly ChartSpec[],
): string {
  const repeats = Math.max(...views.map((v) => v.report.run.repeat));
  const whichSection =
    repeats > 1
      ? 'The median completed repeat of each transport (by total transfer time).'
      : 'Each transport’s section.';
  const anyFailedShown = transports.some((t) =>
    t.perRun.some((r) => r !== undefined && r.median === undefined && r.drawn !== undefined),
  );
  const anyWithoutSeries = transports.some((t) =>
    t.perRun.some((r) => r?.drawn !== undefined && r.drawn.series === undefined),
  );
  // Said once above the charts: in every card's note it would push the charts of a row out of line.
  const intro = [
    `Bars come from each transport’s ${repeats > 1 ? 'median ' : ''}completed repeat (every image intact) only: ` +
      `none for a transport without one.`,
    anyFailedShown
      ? `Lines of a transport with no completed repeat show its last repeat with any arrival, tagged ` +
        `“${FAILED_SHOWN}”: for diagnosis, not a result.`
      : '',
    anyWithoutSeries
      ? `A section from a file written before per-second series were recorded has nothing to draw over time ` +
        `(tagged “${NO_SERIES}”); its latency distribution comes from its per-image times.`
      : '',
  ]
    .filter(Boolean)
    .join(' ');
  const card = (name: ChartName, title: string, note: string, key: KeyStyle, extra = ''): string => {
    const spec = specs.find((s) => s.name === name)!;
    return (
      `<figure class="card chart-card chart-${name}">
<figcaption><h3>${escapeHtml(title)}</h3>${extra}<p class="note">${escapeHtml(note)}</p>${runKey(views, key)}` +
      `</figcaption>
<div class="chart-box"><canvas data-chart="${name}" role="img" aria-label="${escapeHtml(title)}"></canvas></div>
${chartNote(views, spec, transports)}</figure>`
    );
  };
  // Past SERIES_MAX_POINTS seconds a point merges several, whose percentiles do not merge: the notes say what is drawn
  // instead.
  const bucketed = (d: LineDataset): boolean => d.windowSeconds === undefined && (d.bucketSeconds ?? 1) > 1;
  const overTime = specs.flatMap((s) => (s.kind === 'over-time' ? s.datasets : []));
  const merged = overTime.some(bucketed);
  // A p99 line drawn over windows merged its seconds' histograms: only bucketed p99s are the upper bound.
  const mergedP99 = overTime.some((d) => bucketed(d) && d.figure.endsWith('p99') && d.data.some((p) => p.y !== null));
  const windowsOf = (name: ChartName): string => windowsNote(views, specs.find((s) => s.name === name)!, transports);
  const mergedNote = merged
    ? ` Over ` +
      SERIES_MAX_POINTS.toLocaleString('en-US') +
      ` s a point merges consecutive seconds: the median of their p50s` +
      (mergedP99 ? `, the largest of their p99s (an upper bound: percentiles do not merge).` : '.')
    : '';
  const p99Needs = `a second needs ${MIN_SAMPLES_FOR.p99} images for a p99`;
  return (
    `<section class="charts" aria-label="Charts">
<h2>Charts</h2>
<p class="note">${escapeHtml(intro)}</p>
<div class="chart-grid">
` +
    card(
      'time-over-run',
      'Transmission time over the run',
      `${whichSection} One-way times of intact images by the second they arrived in: the line is the p50, the ` +
        `band the fastest to the slowest, dashed the p99 (${p99Needs}); gaps where none arrived.${mergedNote}` +
        windowsOf('time-over-run'),
      'faint',
      '<label class="toggle"><input type="checkbox" data-log-toggle="time-over-run"> log scale</label>',
    ) +
    (`
` +
      card(
        'latency-percentiles',
        'Latency distribution',
        `${whichSection} Intact images only, slowest to the right; the axis stretches the tail (p99, p99.9).`,
        'line',
      ) +
      `
` +
      card(
        'mbps-over-time',
        'MB/s over time',
        `${whichSection} 10⁶ intact bytes per second, by the second they arrived in; 0 where nothing intact arrived.` +
          (merged ? ' Over 2,000 s a point is the mean of the seconds it merges.' : ''),
        'line',
      ) +
      (`
` +
        card(
          'p99-over-time',
          'p99 over time',
          `${whichSection} The 99th percentile of each second (${p99Needs}): one-way solid, round trip (stamp → ` +
            `ack processed, transmitter clock) dashed.${mergedNote}${windowsOf('p99-over-time')}`,
          'faint',
        ) +
        `
` +
        card(
          'throughput',
          'Throughput',
          `MB/s: 10⁶ intact bytes per second over the total transfer time; higher is better.` +
            (hasOpenLoop(transports) ? ' Under RATE: the offered load as delivered, not a capacity.' : ''),
          'bar',
        ) +
        `
`) +
      card(
        'cpu-per-image',
        'CPU per image',
        `User + system CPU time of each side over the recorded images, divided by their count; lower is better.` +
          (hasBroker(transports) ? ' Broker: the server the transport goes through, by its own counters.' : ''),
        'bar',
      ) +
      `
${card('peak-rss', 'Peak memory', 'Largest resident set size (RSS) of each side during the section, in MiB.', 'bar')}
</div>
</section>`)
  );
}
