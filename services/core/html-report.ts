import { TIMING_DEFINITIONS, sectionTitle, type HostFacts, type RunReport, type TransportSummary } from './report.js';
import type { SectionResult } from './section.js';
import { formatSize } from './size.js';

// report.html: one self-contained page per run (or a before/after pair) with charts and the
// summary table. Pure: the caller reads results.json and the inlined libraries. The page fetches
// nothing, so it opens from file:// on a machine without network, and a strict CSP proves it.
//
// The page carries two JSON blocks: the runs exactly as given (the data of record), and chart
// specifications computed here (typed, testable, downsampled for long runs); the inline script
// only turns specifications into Chart.js charts and sorts the table.

/** Library sources the page inlines. */
export interface HtmlReportLibraries {
  /** Chart.js 4's UMD build (defines the global `Chart`). */
  chartJs: string;
}

/** The page's Content-Security-Policy: nothing may load, only the inline script and style run. */
export const HTML_REPORT_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/** Names of the charts, as their canvases' data-chart attributes and window.__charts keys. */
export const CHART_NAMES = ['per-image', 'latency-percentiles', 'throughput', 'cpu-per-image', 'peak-rss'] as const;

/** One of {@link CHART_NAMES}. */
export type ChartName = (typeof CHART_NAMES)[number];

type RunRole = 'only' | 'before' | 'after';

/** Above this many images a per-image line is drawn as the min and max of each bucket of images. */
const PER_IMAGE_MAX_BUCKETS = 1000;
/** Above this many times a percentile curve keeps about this many points, spaced evenly on its log axis. */
const PERCENTILE_MAX_POINTS = 2000;
/** Positions on the percentile axis, 1/(1 − p): 0 %, 50 %, 75 %, 90 %, 95 %, 99 %, 99.9 %, … */
const PERCENTILE_TICKS = [1, 2, 4, 10, 20, 100, 1000, 1e4, 1e5, 1e6, 1e7];

// Tableau 10 without its red (red means failure on this page); the baseline is neutral grey.
const TRANSPORT_COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#76b7b2', '#edc948', '#9c755f', '#ff9da7'];
const BASELINE_COLOR = '#6f7782';
const SIDE_COLORS = { transmitter: '#3f6fb5', receiver: '#e0892f' } as const;

interface RunView {
  report: RunReport;
  role: RunRole;
  /** "Before", "After", or "" for a lone run. */
  name: string;
}

/** One transport in one run. */
interface TransportInRun {
  summary: TransportSummary;
  median: SectionResult | undefined;
}

interface TransportView {
  key: string;
  title: string;
  color: string;
  /** Aligned with the run views; undefined where that run did not include the transport. */
  perRun: (TransportInRun | undefined)[];
}

/** A point of a line chart; y null draws a gap. */
interface Point {
  x: number;
  y: number | null;
}

/** A line chart's dataset: one transport in one run. */
interface LineDataset {
  label: string;
  legendLabel: string;
  transport: string;
  run: RunRole;
  color: string;
  /** True when this dataset has points; anyData when any run of the transport has. */
  hasData: boolean;
  anyData: boolean;
  data: Point[];
  /** Per point: the image arrived corrupt (per-image chart only). */
  corrupt?: boolean[];
  borderColor: string;
  backgroundColor: string;
  pointBackgroundColor: string;
  borderWidth: number;
  borderDash: number[];
  pointRadius: number | number[];
  pointStyle: string | string[];
  pointHoverRadius: number;
  spanGaps: false;
  tension: 0;
}

/** A bar chart's dataset: one figure (one side, one run) for every transport. */
interface BarDataset {
  label: string;
  run: RunRole;
  side: 'transmitter' | 'receiver' | null;
  /** Transport keys, one per bar. */
  transports: string[];
  data: (number | null)[];
  backgroundColor: string | string[];
  borderColor: string | string[];
  borderWidth: number;
  borderRadius: number;
  maxBarThickness: number;
}

/** What the page needs to draw one chart. */
type ChartSpec =
  | { name: ChartName; kind: 'per-image'; xTitle: string; yTitle: string; xMax: number; datasets: LineDataset[] }
  | { name: ChartName; kind: 'percentiles'; xTitle: string; yTitle: string; xMax: number; datasets: LineDataset[] }
  | { name: ChartName; kind: 'bars'; yTitle: string; unit: string; digits: number; legend: boolean; labels: (string | string[])[]; titles: string[]; datasets: BarDataset[] };

/**
 * report.html for one run, or for two (before, after) overlaid: header, charts, sortable summary
 * table; every script, style and datum inline.
 */
export function renderHtmlReport(runs: readonly RunReport[], libraries: HtmlReportLibraries): string {
  if (runs.length < 1 || runs.length > 2) throw new RangeError(`renderHtmlReport takes one run, or two (before, after); got ${runs.length}`);
  const views = runViewsOf(runs);
  const transports = transportViewsOf(views);
  const specs = chartSpecs(views, transports);
  const title = views.length === 1 ? `image-transfer-bench · ${formatDate(views[0]!.report.run.startedAt)}` : `image-transfer-bench · before / after`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(HTML_REPORT_CSP)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${PAGE_CSS}</style>
</head>
<body>
<main>
${renderHeader(views, transports)}
${renderCharts(views, transports, specs)}
${renderTableSection(views, transports)}
${renderFootnotes()}
</main>
<script type="application/json" id="itb-results">${jsonForScript(runs)}</script>
<script type="application/json" id="itb-chart-specs">${jsonForScript(specs)}</script>
<script>${scriptForInline(libraries.chartJs)}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}

/** Text safe inside an HTML element or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** JSON safe inside a <script> element: no "<" at all, so no "</script" and no "<!--". */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/**
 * JavaScript source safe inside a <script> element: "</script" would end the element and "<!--"
 * can put the HTML parser into its escaped state. Both only occur in strings, regular expressions
 * and comments, where "<\/" and "<\u0021" mean the same characters.
 */
export function scriptForInline(source: string): string {
  return source.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\u0021--');
}

function runViewsOf(runs: readonly RunReport[]): RunView[] {
  if (runs.length === 1) return [{ report: runs[0]!, role: 'only', name: '' }];
  return [
    { report: runs[0]!, role: 'before', name: 'Before' },
    { report: runs[1]!, role: 'after', name: 'After' },
  ];
}

function medianOf(report: RunReport, summary: TransportSummary): SectionResult | undefined {
  return summary.medianSection === null ? undefined : report.sections[summary.medianSection];
}

/** Every transport of either run, the latest run's order first; colours follow that order. */
function transportViewsOf(views: readonly RunView[]): TransportView[] {
  const keys: string[] = [];
  for (const view of [...views].reverse()) for (const t of view.report.transports) if (!keys.includes(t.transport)) keys.push(t.transport);
  let colorIndex = 0;
  return keys.map((key) => {
    const perRun = views.map((view): TransportInRun | undefined => {
      const summary = view.report.transports.find((t) => t.transport === key);
      return summary === undefined ? undefined : { summary, median: medianOf(view.report, summary) };
    });
    const latest = [...perRun].reverse().find((r) => r !== undefined)!.summary;
    const color = latest.baseline ? BASELINE_COLOR : TRANSPORT_COLORS[colorIndex++ % TRANSPORT_COLORS.length]!;
    return { key, title: sectionTitle(latest), color, perRun };
  });
}

/** A colour given as #rrggbb, with an alpha. */
function withAlpha(hex: string, alpha: number): string {
  const n = Number.parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

// ---------------------------------------------------------------------------------------------
// Chart specifications

/** The per-image line of one section: every image's time, or min and max per bucket on long runs. */
function perImagePoints(section: SectionResult): { points: Point[]; corrupt: boolean[] } {
  const images = section.images;
  const bucketSize = Math.max(1, Math.ceil(images.length / PER_IMAGE_MAX_BUCKETS));
  const points: Point[] = [];
  const corrupt: boolean[] = [];
  for (let start = 0; start < images.length; start += bucketSize) {
    const bucket = images.slice(start, start + bucketSize);
    // An image with no time (lost, or acknowledged but its record gone) breaks the line.
    const timed = bucket.filter((i) => i.timeMs !== null);
    let picked = timed;
    if (bucketSize > 1 && timed.length > 0) {
      const fastest = timed.reduce((a, b) => (b.timeMs! < a.timeMs! ? b : a));
      const slowest = timed.reduce((a, b) => (b.timeMs! > a.timeMs! ? b : a));
      picked = fastest === slowest ? [fastest] : [fastest, slowest];
    }
    const gap = bucket.find((i) => i.timeMs === null);
    const entries = [...picked.map((i) => ({ x: i.image, y: i.timeMs, corrupt: i.status === 'corrupt' })), ...(gap ? [{ x: gap.image, y: null, corrupt: false }] : [])].sort((a, b) => a.x - b.x);
    for (const e of entries) {
      points.push({ x: e.x, y: e.y });
      corrupt.push(e.corrupt);
    }
  }
  return { points, corrupt };
}

/**
 * The latency percentile curve of one section's intact images: the i-th fastest of n at
 * p = (i + 0.5) / n (Hazen's plotting position, so the slowest is not at p = 1), placed at
 * x = 1 / (1 − p), which spreads the tail over a log axis.
 */
function percentilePoints(section: SectionResult): Point[] {
  const times = section.images.flatMap((i) => (i.status === 'ok' && i.timeMs !== null ? [i.timeMs] : [])).sort((a, b) => a - b);
  const n = times.length;
  let indexes: number[];
  if (n <= PERCENTILE_MAX_POINTS) {
    indexes = times.map((_, i) => i);
  } else {
    // Evenly spaced in log(x) from 1 to 2n: i = n − 0.5 − n / x.
    const picked = new Set<number>();
    for (let k = 0; k <= PERCENTILE_MAX_POINTS; k++) {
      const x = (2 * n) ** (k / PERCENTILE_MAX_POINTS);
      picked.add(Math.min(n - 1, Math.max(0, Math.round(n - 0.5 - n / x))));
    }
    picked.add(n - 1);
    indexes = [...picked].sort((a, b) => a - b);
  }
  return indexes.map((i) => ({ x: n / (n - i - 0.5), y: times[i]! }));
}

function noDataSuffix(views: readonly RunView[], has: readonly boolean[]): string {
  if (has.every(Boolean)) return '';
  if (views.length === 1 || has.every((h) => !h)) return 'no data';
  return `no data ${views[has.indexOf(false)]!.role}`;
}

function lineDatasets(views: readonly RunView[], transports: readonly TransportView[], pointsOf: (section: SectionResult) => { points: Point[]; corrupt?: boolean[] }): LineDataset[] {
  const datasets: LineDataset[] = [];
  for (const t of transports) {
    const series = t.perRun.map((r) => (r?.median === undefined ? undefined : pointsOf(r.median)));
    const has = series.map((s) => s !== undefined && s.points.some((p) => p.y !== null));
    const suffix = noDataSuffix(views, has);
    const legendLabel = suffix === '' ? t.title : `${t.title} (${suffix})`;
    // The latest run first: Chart.js draws the first dataset on top.
    for (let i = views.length - 1; i >= 0; i--) {
      const view = views[i]!;
      if (t.perRun[i] === undefined) continue;
      const s = series[i];
      const points = s?.points ?? [];
      const before = view.role === 'before';
      const radius = points.length <= 60 ? (before ? 2 : 2.5) : points.length <= 300 ? 1.2 : 0;
      const corrupt = s?.corrupt;
      const anyCorrupt = corrupt?.some(Boolean) ?? false;
      datasets.push({
        label: before ? `${t.title} · before` : view.role === 'after' ? `${t.title} · after` : t.title,
        legendLabel,
        transport: t.key,
        run: view.role,
        color: t.color,
        hasData: has[i]!,
        anyData: has.some(Boolean),
        data: points,
        ...(corrupt && anyCorrupt ? { corrupt } : {}),
        borderColor: before ? withAlpha(t.color, 0.6) : t.color,
        backgroundColor: before ? withAlpha(t.color, 0.6) : t.color,
        pointBackgroundColor: before ? '#ffffff' : t.color,
        borderWidth: before ? 1.5 : 2,
        borderDash: before ? [6, 4] : [],
        pointRadius: anyCorrupt ? corrupt!.map((c) => (c ? 6 : radius)) : radius,
        pointStyle: anyCorrupt ? corrupt!.map((c) => (c ? 'crossRot' : 'circle')) : 'circle',
        pointHoverRadius: 4,
        spanGaps: false,
        tension: 0,
      });
    }
  }
  return datasets;
}

interface BarFigure {
  name: ChartName;
  yTitle: string;
  unit: string;
  digits: number;
  sides: readonly ('transmitter' | 'receiver' | null)[];
  value: (run: TransportInRun | undefined, side: 'transmitter' | 'receiver' | null) => number | null;
}

function barSpec(views: readonly RunView[], transports: readonly TransportView[], figure: BarFigure): ChartSpec {
  const datasets: BarDataset[] = [];
  for (const side of figure.sides) {
    views.forEach((view, runIndex) => {
      const before = view.role === 'before';
      const sideColor = side === null ? null : SIDE_COLORS[side];
      const colors = transports.map((t) => sideColor ?? t.color);
      const sideName = side === null ? figure.unit : side === 'transmitter' ? 'Transmitter' : 'Receiver';
      datasets.push({
        label: view.role === 'only' ? sideName : `${sideName} · ${view.role}`,
        run: view.role,
        side,
        transports: transports.map((t) => t.key),
        data: transports.map((t) => figure.value(t.perRun[runIndex], side)),
        backgroundColor: side === null ? colors.map((c) => (before ? withAlpha(c, 0.35) : c)) : before ? withAlpha(sideColor!, 0.35) : sideColor!,
        borderColor: side === null ? colors : sideColor!,
        borderWidth: before ? 1.5 : 0,
        borderRadius: 3,
        maxBarThickness: 56,
      });
    });
  }
  const labels = transports.map((t, ti) => {
    const none = datasets.every((d) => d.data[ti] === null);
    // "TCP (baseline)" on two lines: bar labels are narrow and would run into their neighbours.
    // A bar missing in one run only is plain to see; the note under the chart names it.
    const lines = t.title.split(/ (?=\()/);
    return none ? [...lines, '(no data)'] : lines.length === 1 ? t.title : lines;
  });
  return {
    name: figure.name,
    kind: 'bars',
    yTitle: figure.yTitle,
    unit: figure.unit,
    digits: figure.digits,
    legend: figure.sides.some((s) => s !== null),
    labels,
    titles: transports.map((t) => t.title),
    datasets,
  };
}

function chartSpecs(views: readonly RunView[], transports: readonly TransportView[]): ChartSpec[] {
  const medians = transports.flatMap((t) => t.perRun.flatMap((r) => (r?.median === undefined ? [] : [r.median])));
  const perImage = lineDatasets(views, transports, perImagePoints);
  const percentiles = lineDatasets(views, transports, (s) => ({ points: percentilePoints(s) }));
  const maxImages = Math.max(1, ...medians.map((s) => s.images.length));
  const maxX = Math.max(1, ...percentiles.flatMap((d) => d.data.map((p) => p.x)));
  const cost = (side: 'transmitter' | 'receiver' | null, r: TransportInRun | undefined) => (side === null ? undefined : (r?.median?.cost[side] ?? undefined));
  return [
    { name: 'per-image', kind: 'per-image', xTitle: 'image number', yTitle: 'transmission time (ms)', xMax: maxImages, datasets: perImage },
    {
      name: 'latency-percentiles',
      kind: 'percentiles',
      xTitle: 'percentile (log scale of 1 / (1 − p): the tail spreads out)',
      yTitle: 'transmission time (ms, log scale)',
      xMax: PERCENTILE_TICKS.find((tick) => tick >= maxX * 0.9999) ?? maxX,
      datasets: percentiles,
    },
    barSpec(views, transports, { name: 'throughput', yTitle: 'MB/s', unit: 'MB/s', digits: 1, sides: [null], value: (r) => r?.median?.throughputMBps ?? null }),
    barSpec(views, transports, { name: 'cpu-per-image', yTitle: 'CPU ms per image', unit: 'ms', digits: 2, sides: ['transmitter', 'receiver'], value: (r, side) => cost(side, r)?.cpuMsPerImage ?? null }),
    barSpec(views, transports, {
      name: 'peak-rss',
      yTitle: 'peak RSS (MiB)',
      unit: 'MiB',
      digits: 0,
      sides: ['transmitter', 'receiver'],
      value: (r, side) => {
        const bytes = cost(side, r)?.peakRssBytes;
        return bytes === undefined ? null : bytes / 1024 / 1024;
      },
    }),
  ];
}

// ---------------------------------------------------------------------------------------------
// Header

/** "2026-11-23 08:00:00 UTC" from an ISO timestamp; the text as given when it is not one. */
function formatDate(iso: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?Z$/.exec(iso);
  return match ? `${match[1]} ${match[2]} UTC` : iso;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "23 Nov 08:00" from an ISO timestamp (UTC), for keys where space is short. */
function shortDate(iso: string): string {
  const match = /^\d{4}-(\d{2})-(\d{2})T(\d{2}:\d{2})/.exec(iso);
  return match ? `${Number(match[2])} ${MONTHS[Number(match[1]) - 1] ?? match[1]} ${match[3]}` : iso;
}

function formatDuration(fromIso: string, toIso: string): string | null {
  const ms = Date.parse(toIso) - Date.parse(fromIso);
  if (!Number.isFinite(ms) || ms < 0) return null;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.floor((ms % 60_000) / 1000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

function hostText(host: HostFacts): string {
  return `${host.hostname} · ${host.cpuModel}, ${host.cores} cores, ${formatSize(host.totalMemoryBytes)} · ${host.platform} ${host.kernel} · Node ${host.nodeVersion}`;
}

function librariesText(hosts: RunReport['run']['hosts']): string {
  const names = [...new Set([...Object.keys(hosts.receiver.libraries), ...Object.keys(hosts.transmitter.libraries)])].sort();
  if (names.length === 0) return '-';
  return names
    .map((name) => {
      const rx = hosts.receiver.libraries[name];
      const tx = hosts.transmitter.libraries[name];
      if (rx === tx || tx === undefined) return `${name} ${rx}`;
      if (rx === undefined) return `${name} ${tx}`;
      return `${name} ${rx} (transmitter ${tx})`;
    })
    .join(' · ');
}

function factRows(view: RunView, transports: readonly TransportView[]): [string, string][] {
  const { run, finishedAt } = view.report;
  const took = formatDuration(run.startedAt, finishedAt);
  const titleOf = (key: string): string => transports.find((t) => t.key === key)?.title ?? key;
  const { transmitter, receiver } = run.hosts;
  const sameClock = transmitter.bootId !== null && transmitter.bootId === receiver.bootId;
  return [
    ['Date', `${formatDate(run.startedAt)}${took === null ? '' : ` (took ${took})`}`],
    ['Image', `${run.imageDescription}, ${formatSize(run.imageSizeBytes)} (${run.imageSizeBytes.toLocaleString('en-US')} bytes)`],
    ['Images per transport', String(run.imageCount)],
    ['Window', `${run.window} in flight`],
    ['Warm-up', `${run.warmup} unrecorded images`],
    ['Repeat', run.repeat > 1 ? `${run.repeat} (interleaved; the median repeat is shown)` : String(run.repeat)],
    ['Transports', run.transports.map(titleOf).join(', ')],
    ['Transmitter host', hostText(transmitter)],
    ['Receiver host', hostText(receiver)],
    ['Clock', sameClock ? 'one kernel: both sides share a monotonic clock' : 'different or unknown kernels: send times moved onto the receiver clock'],
    ['Libraries', librariesText(run.hosts)],
  ];
}

/** One line on how a run went: every transport intact, or which failed (and why) and why the run stopped. */
function renderVerdict(view: RunView): string {
  const { report } = view;
  const failed = report.transports.filter((t) => !t.ok);
  const stopReason = report.stopReason ?? null;
  const prefix = view.name === '' ? '' : `${view.name}: `;
  if (stopReason === null && failed.length === 0 && report.sections.length > 0) {
    return `<p class="verdict ok"><strong>${escapeHtml(prefix)}every transport delivered every image intact.</strong></p>`;
  }
  const headline = [
    ...(stopReason === null ? [] : ['run incomplete']),
    ...(failed.length === 0 ? [] : [`${failed.length} of ${report.transports.length} transports FAILED`]),
    ...(report.sections.length === 0 ? ['no section ran'] : []),
  ].join(', ');
  const details = [
    ...(stopReason === null ? [] : [stopReason]),
    ...failed.map((t) => `${sectionTitle(t)}: ${failureReason({ summary: t, median: medianOf(report, t) }, report)}`),
  ];
  return `<p class="verdict failed"><strong>${escapeHtml(prefix + headline)}</strong>${details.length > 0 ? ` <span class="details">${details.map(escapeHtml).join(' · ')}</span>` : ''}</p>`;
}

/** The facts of one run in two side-by-side tables, or of two runs in one table, a column each. */
function renderFacts(views: readonly RunView[], transports: readonly TransportView[]): string {
  const rows = views.map((v) => factRows(v, transports));
  const first = rows[0]!;
  if (views.length === 1) {
    const half = Math.ceil(first.length / 2);
    const table = (part: [string, string][]): string =>
      `<table class="facts-table"><tbody>\n${part.map(([label, value]) => `<tr><th scope="row">${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`).join('\n')}\n</tbody></table>`;
    // Hosts and libraries are long: they go in the wider right-hand table.
    return `<div class="facts-grid">${table(first.slice(0, half - 1))}${table(first.slice(half - 1))}</div>`;
  }
  const body = first
    .map(([label], i) => {
      const values = rows.map((r) => r[i]![1]);
      const differs = new Set(values).size > 1;
      const flagged = differs && label !== 'Date';
      // A fact both runs share is written once, across both columns.
      const cells = differs ? values.map((v) => `<td>${escapeHtml(v)}</td>`).join('') : `<td colspan="${values.length}">${escapeHtml(values[0]!)}</td>`;
      return `<tr${flagged ? ' class="differs"' : ''}><th scope="row">${escapeHtml(label)}${flagged ? ' <span class="tag">differs</span>' : ''}</th>${cells}</tr>`;
    })
    .join('\n');
  const head = `<thead><tr><td></td>${views.map((v) => `<th scope="col">${escapeHtml(v.name)}</th>`).join('')}</tr></thead>`;
  return `<table class="facts-table two-runs"><colgroup><col class="label-column"><col><col></colgroup>${head}<tbody>\n${body}\n</tbody></table>`;
}

function renderHeader(views: readonly RunView[], transports: readonly TransportView[]): string {
  const subtitle =
    views.length === 1
      ? `Run of ${escapeHtml(formatDate(views[0]!.report.run.startedAt))}`
      : `Before (${escapeHtml(formatDate(views[0]!.report.run.startedAt))}) against after (${escapeHtml(formatDate(views[1]!.report.run.startedAt))})`;
  return `<header class="page-header">
<h1>image-transfer-bench report</h1>
<p class="subtitle">${subtitle}</p>
${[...views].reverse().map(renderVerdict).join('\n')}
</header>
<section class="card facts" aria-label="Run facts">
${renderFacts(views, transports)}
</section>`;
}

// ---------------------------------------------------------------------------------------------
// Charts

function runKey(views: readonly RunView[], style: 'line' | 'bar'): string {
  if (views.length === 1) return '';
  const [before, after] = [views[0]!, views[1]!];
  const sample = (role: 'before' | 'after'): string => `<span class="key-${style} key-${role}" aria-hidden="true"></span>`;
  const short = (view: RunView): string => escapeHtml(shortDate(view.report.run.startedAt));
  return `<p class="run-key"><span class="key-item">${sample('after')}after (${short(after)})</span> <span class="key-item">${sample('before')}before (${short(before)})</span></p>`;
}

/** Under a chart: the transports it has no data for, in every run or in one. */
function noDataNote(views: readonly RunView[], spec: ChartSpec, transports: readonly TransportView[]): string {
  const hasData = (t: TransportView, ti: number, role: RunRole): boolean =>
    spec.kind === 'bars' ? spec.datasets.some((d) => d.run === role && d.data[ti] !== null) : spec.datasets.some((d) => d.run === role && d.transport === t.key && d.hasData);
  const groups = new Map<string, string[]>();
  transports.forEach((t, ti) => {
    const suffix = noDataSuffix(views, views.map((v) => hasData(t, ti, v.role)));
    if (suffix !== '') groups.set(suffix, [...(groups.get(suffix) ?? []), t.title]);
  });
  if (groups.size === 0) return '';
  const items = [...groups].map(([suffix, titles]) => `<span class="tag failed">${escapeHtml(suffix)}</span> ${escapeHtml(titles.join(', '))}`);
  return `<p class="no-data">${items.join(' ')}</p>`;
}

function renderCharts(views: readonly RunView[], transports: readonly TransportView[], specs: readonly ChartSpec[]): string {
  const repeats = Math.max(...views.map((v) => v.report.run.repeat));
  const whichSection = repeats > 1 ? 'The median repeat of each transport (by total transfer time).' : 'Each transport’s section.';
  const card = (name: ChartName, title: string, note: string, extra = ''): string => {
    const spec = specs.find((s) => s.name === name)!;
    return `<figure class="card chart-card chart-${name}">
<figcaption><h3>${escapeHtml(title)}</h3>${extra}<p class="note">${escapeHtml(note)}</p>${runKey(views, spec.kind === 'bars' ? 'bar' : 'line')}</figcaption>
<div class="chart-box"><canvas data-chart="${name}" role="img" aria-label="${escapeHtml(title)}"></canvas></div>
${noDataNote(views, spec, transports)}</figure>`;
  };
  const perImage = specs.find((s) => s.name === 'per-image');
  const bucketed = perImage !== undefined && perImage.kind === 'per-image' && perImage.xMax > PER_IMAGE_MAX_BUCKETS;
  return `<section class="charts" aria-label="Charts">
<h2>Charts</h2>
<div class="chart-grid">
${card('per-image', 'Transmission time per image', `${whichSection} Gaps are images that never arrived; × marks a corrupt image.${bucketed ? ' Long runs: the fastest and slowest image of each stretch.' : ''}`, '<label class="toggle"><input type="checkbox" data-log-toggle="per-image"> log scale</label>')}
${card('latency-percentiles', 'Latency distribution', `${whichSection} Intact images only, slowest to the right; the axis stretches the tail (p99, p99.9).`)}
${card('throughput', 'Throughput', 'MB/s: 10⁶ intact bytes per second over the total transfer time; higher is better.')}
${card('cpu-per-image', 'CPU per image', 'User + system CPU time of each side over the recorded images, divided by their count; lower is better.')}
${card('peak-rss', 'Peak memory', 'Largest resident set size (RSS) of each side during the section, in MiB.')}
</div>
</section>`;
}

// ---------------------------------------------------------------------------------------------
// Summary table

interface Column {
  header: string;
  hint: string;
  digits: number;
  /** Lower is better (latency, time, CPU); false when higher is; null when a change is not good or bad. */
  lowerIsBetter: boolean | null;
  value: (r: TransportInRun) => number | null;
  /** Min–max across repeats, shown on hover. */
  spread?: (r: TransportInRun) => { min: number; max: number } | null;
}

const COLUMNS: readonly Column[] = [
  { header: 'OK', hint: 'intact images, all repeats', digits: 0, lowerIsBetter: false, value: (r) => r.summary.okCount },
  { header: 'Lost', hint: 'images that never arrived, all repeats', digits: 0, lowerIsBetter: true, value: (r) => r.summary.lostCount },
  { header: 'Corrupt', hint: 'images with a checksum or size mismatch, all repeats', digits: 0, lowerIsBetter: true, value: (r) => r.summary.corruptCount },
  { header: 'p50 ms', hint: 'median transmission time', digits: 3, lowerIsBetter: true, value: (r) => r.median?.latency?.p50Ms ?? null, spread: (r) => r.summary.spread.p50Ms },
  { header: 'p90 ms', hint: '90th percentile', digits: 3, lowerIsBetter: true, value: (r) => r.median?.latency?.p90Ms ?? null },
  { header: 'p99 ms', hint: '99th percentile', digits: 3, lowerIsBetter: true, value: (r) => r.median?.latency?.p99Ms ?? null, spread: (r) => r.summary.spread.p99Ms },
  { header: 'p99.9 ms', hint: '99.9th percentile', digits: 3, lowerIsBetter: true, value: (r) => r.median?.latency?.p999Ms ?? null },
  { header: 'max ms', hint: 'slowest intact image', digits: 3, lowerIsBetter: true, value: (r) => r.median?.latency?.maxMs ?? null },
  { header: 'Total ms', hint: 'arrival of the last image − send start of the first', digits: 3, lowerIsBetter: true, value: (r) => r.median?.totalMs ?? null, spread: (r) => r.summary.spread.totalMs },
  { header: 'MB/s', hint: '10⁶ intact bytes per second of total transfer time', digits: 1, lowerIsBetter: false, value: (r) => r.median?.throughputMBps ?? null, spread: (r) => r.summary.spread.throughputMBps },
  { header: 'images/s', hint: 'intact images per second of total transfer time', digits: 1, lowerIsBetter: false, value: (r) => r.median?.imagesPerSecond ?? null },
  { header: 'TX CPU ms/img', hint: 'transmitter CPU (user + system) per image', digits: 3, lowerIsBetter: true, value: (r) => r.median?.cost.transmitter?.cpuMsPerImage ?? null },
  { header: 'RX CPU ms/img', hint: 'receiver CPU (user + system) per image', digits: 3, lowerIsBetter: true, value: (r) => r.median?.cost.receiver?.cpuMsPerImage ?? null },
];

const formatNumber = (value: number | null, digits: number): string => (value === null ? '–' : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }));

/** Why a transport is not ok: its failure, or what went missing when nothing failed outright. */
function failureReason(run: TransportInRun, report: RunReport): string {
  const { summary } = run;
  if (summary.failure !== null) return summary.failure;
  const own = report.sections.filter((s) => s.transport === summary.transport);
  const duplicates = own.reduce((n, s) => n + s.duplicateCount, 0);
  const strays = own.reduce((n, s) => n + s.strayCount, 0);
  const parts = [
    summary.lostCount > 0 ? `${summary.lostCount} lost` : '',
    summary.corruptCount > 0 ? `${summary.corruptCount} corrupt` : '',
    duplicates > 0 ? `${duplicates} duplicate frames` : '',
    strays > 0 ? `${strays} stray frames` : '',
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(', ') : 'not every image arrived intact';
}

function resultHtml(run: TransportInRun | undefined, report: RunReport): string {
  if (run === undefined) return '<span class="badge absent">not run</span>';
  if (run.summary.ok) return '<span class="badge ok">ok</span>';
  return `<span class="badge failed">FAILED</span> <span class="reason">${escapeHtml(failureReason(run, report))}</span>`;
}

function changeHtml(before: number | null, after: number | null, column: Column): string {
  if (before === null || after === null || column.lowerIsBetter === null) return '';
  const change = after - before;
  // Counts move by whole images: a percentage of 0 lost images says nothing.
  if (column.digits === 0) {
    if (change === 0) return '';
    return `<span class="change ${(change < 0) === column.lowerIsBetter ? 'better' : 'worse'}">${change > 0 ? '+' : '−'}${Math.abs(change)}</span>`;
  }
  if (before === 0) return change === 0 ? '<span class="change same">±0</span>' : '';
  const percent = (change / before) * 100;
  const rounded = Math.abs(percent) < 0.05 ? 0 : percent;
  const direction = Math.abs(rounded) < 1 ? 'same' : (change < 0) === column.lowerIsBetter ? 'better' : 'worse';
  const text = rounded === 0 ? '±0%' : `${rounded > 0 ? '+' : '−'}${Math.abs(rounded).toFixed(1)}%`;
  return `<span class="change ${direction}">${text}</span>`;
}

function renderTableSection(views: readonly RunView[], transports: readonly TransportView[]): string {
  const twoRuns = views.length > 1;
  const last = views.length - 1;
  const headerCells = [
    `<th scope="col" data-type="text" class="text"><button type="button">Transport</button></th>`,
    ...COLUMNS.map((c) => `<th scope="col" data-type="number" title="${escapeHtml(c.hint)}"><button type="button">${escapeHtml(c.header)}</button></th>`),
    `<th scope="col" data-type="text" class="text"><button type="button">Result</button></th>`,
  ].join('');
  const rows = transports.map((t, index) => {
    const latest = t.perRun[last];
    const failed = latest !== undefined && !latest.summary.ok;
    const cells = COLUMNS.map((column) => {
      const values = t.perRun.map((r) => (r === undefined ? null : column.value(r)));
      const now = values[last]!;
      const spread = latest === undefined ? null : (column.spread?.(latest) ?? null);
      const title = spread !== null && spread.min !== spread.max ? ` title="repeats: ${formatNumber(spread.min, column.digits)}–${formatNumber(spread.max, column.digits)}"` : '';
      const main = `<span class="now">${formatNumber(now, column.digits)}</span>`;
      const was = twoRuns ? `<span class="was">${formatNumber(values[0]!, column.digits)}</span>${changeHtml(values[0]!, now, column)}` : '';
      return `<td class="num" data-sort="${now ?? ''}"${title}>${main}${was}</td>`;
    });
    const result = resultHtml(latest, views[last]!.report);
    // The before result only when it differs: "before: ok" on every row would bury the changes.
    const earlier = twoRuns ? resultHtml(t.perRun[0], views[0]!.report) : '';
    const beforeResult = twoRuns && earlier !== result ? `<span class="was">before: ${earlier}</span>` : '';
    const sortResult = latest === undefined ? 'absent' : latest.summary.ok ? 'ok' : 'failed';
    return `<tr data-transport="${escapeHtml(t.key)}" data-index="${index}"${failed ? ' class="failed"' : ''}>
<td class="text transport" data-sort="${escapeHtml(t.title)}"><span class="swatch" style="background:${t.color}"></span>${escapeHtml(t.title)}</td>
${cells.join('')}
<td class="text result" data-sort="${sortResult}">${result}${beforeResult}</td>
</tr>`;
  });
  const repeats = Math.max(...views.map((v) => v.report.run.repeat));
  const notes = [
    repeats > 1 ? 'Latency, total, throughput and CPU come from the median repeat (hover a cell for the spread across repeats); OK, Lost and Corrupt count every repeat.' : '',
    twoRuns ? 'Each cell shows the after value, then the before value and the change: green is better, red is worse.' : '',
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

function renderFootnotes(): string {
  return `<footer class="footnotes">
<p>${TIMING_DEFINITIONS.map(escapeHtml).join('<br>')}</p>
<p>Percentiles come from an HDR histogram (3 significant digits); max from the raw times. MB/s counts 10⁶ bytes of intact images per second of total transfer time. This page is self-contained: it loads nothing from any network.</p>
</footer>`;
}

// ---------------------------------------------------------------------------------------------
// Page style and script (inline; the CSP allows nothing else)

const PAGE_CSS = `
:root { --ink: #1d2330; --muted: #5d6576; --faint: #8a92a3; --line: #e3e6ed; --bg: #f4f5f8; --card: #ffffff;
  --ok: #1f7a4d; --ok-bg: #e5f4ec; --bad: #b42318; --bad-bg: #fdecea; --accent: #3f6fb5; }
* { box-sizing: border-box; }
html { background: var(--bg); }
body { margin: 0; color: var(--ink); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1320px; margin: 0 auto; padding: 28px 28px 40px; }
h1 { font-size: 24px; margin: 0 0 2px; letter-spacing: -0.01em; }
h2 { font-size: 17px; margin: 0 0 10px; }
h3 { font-size: 15px; margin: 0; }
.subtitle { color: var(--muted); margin: 0 0 12px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 16px 18px; margin: 0 0 18px; box-shadow: 0 1px 2px rgba(16, 24, 40, 0.04); }
.verdict { margin: 0 0 10px; padding: 9px 14px; border-radius: 8px; font-weight: 600; }
.verdict.ok { background: var(--ok-bg); color: var(--ok); }
.verdict.failed { background: var(--bad-bg); color: var(--bad); }
.verdict .details { font-weight: 400; margin-left: 6px; }
.facts-grid { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1.3fr); gap: 0 36px; }
.facts-table { border-collapse: collapse; width: 100%; align-self: start; }
.facts-table th, .facts-table td { text-align: left; padding: 5px 12px 5px 0; vertical-align: top; border-bottom: 1px solid #f0f1f5; }
.facts-table tbody tr:last-child th, .facts-table tbody tr:last-child td { border-bottom: 0; }
.facts-table tbody th { width: 150px; color: var(--muted); font-weight: 500; white-space: nowrap; }
.facts-table thead th { font-size: 11.5px; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted); font-weight: 600; }
.facts-table.two-runs { table-layout: fixed; }
.facts-table.two-runs col.label-column { width: 190px; }
.facts-table tr.differs td { background: #fff8e6; }
.tag { display: inline-block; font-size: 11px; font-weight: 600; padding: 0 6px; border-radius: 999px; background: #fde9b8; color: #7a5200; vertical-align: 1px; }
.tag.failed { background: var(--bad-bg); color: var(--bad); }
.charts > h2 { margin-top: 6px; }
.chart-grid { display: grid; grid-template-columns: repeat(6, minmax(0, 1fr)); gap: 18px; margin-bottom: 18px; }
.chart-card { margin: 0; display: flex; flex-direction: column; }
.chart-per-image, .chart-latency-percentiles { grid-column: span 3; }
.chart-throughput, .chart-cpu-per-image, .chart-peak-rss { grid-column: span 2; }
@media (max-width: 1000px) { .chart-card { grid-column: 1 / -1 !important; } }
figcaption { position: relative; margin-bottom: 8px; }
figcaption .note { margin: 2px 0 0; color: var(--muted); font-size: 12.5px; min-height: 36px; }
.chart-box { position: relative; height: 320px; }
.chart-throughput .chart-box, .chart-cpu-per-image .chart-box, .chart-peak-rss .chart-box { height: 290px; }
.toggle { position: absolute; top: 0; right: 0; font-size: 12px; color: var(--muted); cursor: pointer; user-select: none; }
.toggle input { vertical-align: -2px; margin: 0 3px 0 0; }
.run-key { margin: 5px 0 0; font-size: 12px; color: var(--muted); }
.key-item { white-space: nowrap; margin-right: 14px; }
.key-line { display: inline-block; width: 24px; height: 0; border-top: 2px solid var(--ink); vertical-align: middle; margin-right: 6px; }
.key-line.key-before { border-top: 2px dashed var(--faint); }
.key-bar { display: inline-block; width: 11px; height: 11px; border-radius: 2px; background: var(--ink); vertical-align: -1px; margin-right: 6px; }
.key-bar.key-before { background: rgba(29, 35, 48, 0.22); border: 1.5px solid var(--ink); }
.no-data { margin: 8px 0 0; font-size: 12.5px; color: var(--muted); }
.summary .note { margin: -4px 0 10px; color: var(--muted); font-size: 12.5px; }
.table-scroll { overflow-x: auto; }
.summary-table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; font-size: 13px; }
.summary-table th, .summary-table td { padding: 7px 7px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; vertical-align: top; }
.summary-table thead th { white-space: normal; vertical-align: bottom; line-height: 1.25; }
.summary-table th.text, .summary-table td.text { text-align: left; }
.summary-table thead th { position: sticky; top: 0; background: #f8f9fb; border-bottom: 1px solid #d5d9e2; font-weight: 600; color: #3a4150; }
.summary-table thead th button { all: unset; cursor: pointer; display: inline-block; }
.summary-table thead th button::after { content: "↕"; color: #b8bec9; margin-left: 4px; font-size: 11px; }
.summary-table thead th[aria-sort="ascending"] button::after { content: "▲"; color: var(--accent); }
.summary-table thead th[aria-sort="descending"] button::after { content: "▼"; color: var(--accent); }
.summary-table thead th button:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; border-radius: 2px; }
.summary-table tbody tr:hover td { background: #f7f9fc; }
.summary-table tbody tr.failed td { background: #fff7f6; }
.summary-table tbody tr.failed td:first-child { box-shadow: inset 3px 0 0 var(--bad); }
.summary-table td.transport { font-weight: 600; }
.summary-table td.result { white-space: normal; width: 250px; min-width: 210px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 7px; vertical-align: 0; }
.badge { display: inline-block; font-size: 11.5px; font-weight: 700; padding: 1px 7px; border-radius: 999px; letter-spacing: 0.02em; }
.badge.ok { background: var(--ok-bg); color: var(--ok); }
.badge.failed { background: var(--bad); color: #fff; }
.badge.absent { background: #eef0f4; color: var(--muted); }
.reason { color: var(--bad); }
.now { display: block; }
.was { display: block; font-size: 11.5px; color: var(--faint); }
.change { display: block; font-size: 11.5px; font-weight: 600; }
.change.better { color: var(--ok); }
.change.worse { color: var(--bad); }
.change.same { color: var(--faint); }
.footnotes { color: var(--faint); font-size: 12px; margin-top: 6px; }
.footnotes p { margin: 0 0 6px; }
`;

// Plain ES2020 for the browser: no template literals here, so this TypeScript template stays literal.
const PAGE_SCRIPT = String.raw`
(function () {
  'use strict';
  var charts = {};
  window.__charts = charts;
  var specs = JSON.parse(document.getElementById('itb-chart-specs').textContent);
  var PERCENTILE_TICKS = ${JSON.stringify(PERCENTILE_TICKS)};
  var INK = '#2b3140', MUTED = '#5d6576', FAINT = '#9aa1ad';

  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.font.size = 12;
  Chart.defaults.color = MUTED;
  Chart.defaults.borderColor = '#eceef3';
  Chart.defaults.animation = false;
  Chart.defaults.responsive = true;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.plugins.tooltip.backgroundColor = 'rgba(29, 35, 48, 0.92)';
  Chart.defaults.plugins.tooltip.padding = 8;
  Chart.defaults.plugins.tooltip.boxPadding = 4;

  function fixed(value, digits) {
    return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  function ms(value) {
    return value >= 100 ? fixed(value, 1) : value >= 10 ? fixed(value, 2) : fixed(value, 3);
  }
  function percentileText(x) {
    var p = (1 - 1 / x) * 100;
    return String(Number(p.toFixed(p >= 99 ? 3 : 2))) + '%';
  }
  function axisTitle(text) {
    return { display: true, text: text, color: MUTED, font: { size: 12 } };
  }

  // One legend entry per transport; clicking it hides or shows both runs of that transport.
  var transportLegend = {
    position: 'bottom',
    labels: {
      usePointStyle: true,
      pointStyle: 'line',
      pointStyleWidth: 24,
      padding: 14,
      generateLabels: function (chart) {
        var seen = {};
        var items = [];
        chart.data.datasets.forEach(function (ds, i) {
          if (seen[ds.transport]) return;
          seen[ds.transport] = true;
          var visible = chart.data.datasets.some(function (d, j) { return d.transport === ds.transport && chart.isDatasetVisible(j); });
          items.push({ text: ds.legendLabel, datasetIndex: i, strokeStyle: ds.color, fillStyle: ds.color, lineWidth: 3, pointStyle: 'line', hidden: !visible, fontColor: ds.anyData ? INK : FAINT });
        });
        return items;
      },
    },
    onClick: function (event, item, legend) {
      var chart = legend.chart;
      var key = chart.data.datasets[item.datasetIndex].transport;
      chart.data.datasets.forEach(function (d, j) { if (d.transport === key) chart.setDatasetVisibility(j, item.hidden); });
      chart.update();
    },
  };

  function perImageConfig(spec) {
    return {
      type: 'line',
      data: { datasets: spec.datasets },
      options: {
        interaction: { mode: 'nearest', axis: 'x', intersect: false },
        scales: {
          x: { type: 'linear', min: 1, max: spec.xMax, title: axisTitle(spec.xTitle), ticks: { precision: 0 }, grid: { display: false } },
          y: { type: 'linear', beginAtZero: true, title: axisTitle(spec.yTitle) },
        },
        plugins: {
          legend: transportLegend,
          tooltip: {
            callbacks: {
              title: function (items) { return items.length ? 'image ' + items[0].parsed.x : ''; },
              label: function (ctx) {
                var corrupt = ctx.dataset.corrupt && ctx.dataset.corrupt[ctx.dataIndex];
                return ctx.dataset.label + ': ' + ms(ctx.parsed.y) + ' ms' + (corrupt ? ' (CORRUPT)' : '');
              },
            },
          },
        },
      },
    };
  }

  function percentilesConfig(spec) {
    return {
      type: 'line',
      data: { datasets: spec.datasets },
      options: {
        interaction: { mode: 'nearest', intersect: false },
        scales: {
          x: {
            type: 'logarithmic', min: 1, max: spec.xMax, title: axisTitle(spec.xTitle), grid: { color: '#eceef3' },
            afterBuildTicks: function (axis) {
              // On a long axis 75 % and 95 % crowd the left end; 50 %, 90 %, 99 %, … remain.
              var positions = axis.max >= 1000 ? PERCENTILE_TICKS.filter(function (v) { return v !== 4 && v !== 20; }) : PERCENTILE_TICKS;
              axis.ticks = positions.filter(function (v) { return v >= axis.min && v <= axis.max * 1.0001; }).map(function (v) { return { value: v }; });
            },
            ticks: { autoSkip: false, maxRotation: 0, callback: function (value) { return percentileText(value); } },
          },
          y: { type: 'logarithmic', title: axisTitle(spec.yTitle) },
        },
        plugins: {
          legend: transportLegend,
          tooltip: {
            callbacks: {
              title: function (items) { return items.length ? 'p' + percentileText(items[0].parsed.x).replace('%', '') : ''; },
              label: function (ctx) { return ctx.dataset.label + ': ' + ms(ctx.parsed.y) + ' ms'; },
            },
          },
        },
      },
    };
  }

  // Writes each bar's value above it; all of them or none, so no bar looks unlabelled by mistake.
  function barValues(digits) {
    return {
      id: 'itbBarValues',
      afterDatasetsDraw: function (chart) {
        var ctx = chart.ctx;
        var labels = [];
        ctx.save();
        ctx.font = '11px ' + Chart.defaults.font.family;
        chart.data.datasets.forEach(function (ds, i) {
          if (!chart.isDatasetVisible(i)) return;
          chart.getDatasetMeta(i).data.forEach(function (bar, j) {
            var value = ds.data[j];
            if (value === null || value === undefined) return;
            labels.push({ text: fixed(value, digits), x: bar.x, y: bar.y, width: bar.width });
          });
        });
        var fits = labels.every(function (label) { return ctx.measureText(label.text).width <= label.width + 4; });
        if (fits) {
          ctx.fillStyle = MUTED;
          ctx.textAlign = 'center';
          ctx.textBaseline = 'bottom';
          labels.forEach(function (label) { ctx.fillText(label.text, label.x, label.y - 3); });
        }
        ctx.restore();
      },
    };
  }

  function barsConfig(spec) {
    return {
      type: 'bar',
      data: { labels: spec.labels, datasets: spec.datasets },
      options: {
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: { grid: { display: false }, ticks: { color: INK, maxRotation: 0, autoSkip: false } },
          y: { beginAtZero: true, grace: '12%', title: axisTitle(spec.yTitle) },
        },
        plugins: {
          legend: { display: spec.legend, position: 'bottom', labels: { boxWidth: 12, boxHeight: 12, padding: 14 } },
          tooltip: {
            callbacks: {
              title: function (items) { return items.length ? spec.titles[items[0].dataIndex] : ''; },
              label: function (ctx) {
                var value = ctx.dataset.data[ctx.dataIndex];
                return ctx.dataset.label + ': ' + (value === null ? 'no data' : fixed(value, spec.digits) + ' ' + spec.unit);
              },
            },
          },
        },
      },
      plugins: [barValues(spec.digits)],
    };
  }

  var builders = { 'per-image': perImageConfig, percentiles: percentilesConfig, bars: barsConfig };
  specs.forEach(function (spec) {
    var canvas = document.querySelector('canvas[data-chart="' + spec.name + '"]');
    charts[spec.name] = new Chart(canvas, builders[spec.kind](spec));
  });

  document.querySelectorAll('input[data-log-toggle]').forEach(function (input) {
    input.addEventListener('change', function () {
      var chart = charts[input.getAttribute('data-log-toggle')];
      chart.options.scales.y.type = input.checked ? 'logarithmic' : 'linear';
      chart.update();
    });
  });

  // Sortable tables: numbers by value, text alphabetically; empty cells always last.
  document.querySelectorAll('table.sortable').forEach(function (table) {
    var body = table.tBodies[0];
    var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    headers.forEach(function (th, column) {
      var button = th.querySelector('button');
      if (!button) return;
      button.addEventListener('click', function () {
        var ascending = th.getAttribute('aria-sort') !== 'ascending';
        headers.forEach(function (other) { other.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
        var numeric = th.getAttribute('data-type') === 'number';
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var ka = a.cells[column].getAttribute('data-sort') || '';
          var kb = b.cells[column].getAttribute('data-sort') || '';
          if (ka === '' || kb === '') {
            if (ka === kb) return Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index'));
            return ka === '' ? 1 : -1;
          }
          var order = numeric ? Number(ka) - Number(kb) : ka.localeCompare(kb);
          if (order === 0) return Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index'));
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
})();
`;
