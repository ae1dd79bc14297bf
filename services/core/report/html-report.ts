import {
  MIN_STABLE_REPEATS,
  nodeDescription,
  peersText,
  SHORT_RUN_NOTE,
  shortRun,
  STABLE_SPREAD_SHARE,
  TIMING_DEFINITIONS,
  sectionTitle,
  type HostFacts,
  type RunReport,
  type TransportSummary,
} from './report.js';
import { MIN_STABLE_IMAGES, MIN_STABLE_SPAN_MS, OVERLOAD_RATE_SHARE, type SectionResult } from '../model/section.js';
import { bucketSeries, latencyCurve, type SeriesBucket } from '../model/series.js';
import { formatSize } from '../config/size.js';
import { MIN_SAMPLES_FOR, type LatencySummary } from '../model/stats.js';
import { describeWarmup } from '../model/warmup.js';

// report.html: one self-contained page per run (or a before/after pair) with charts and the
// summary table. Pure: the caller reads results.json and the inlined libraries. The page fetches
// nothing, so it opens from file:// on a machine without network, and a strict CSP proves it.
//
// The page carries two JSON blocks: the runs as given less their bulk (per-image records and
// per-second series, which results.json keeps: a day's soak would put megabytes of them in the
// page), and chart specifications computed here (typed, testable, downsampled for long runs); the
// page's script (assets/report-page/report.js) only turns specifications into Chart.js charts and
// sorts the table. Its size is bounded by the number of transports, not of images or seconds.

/** Sources the page inlines: the chart library and the page's own style and script. */
export interface HtmlReportLibraries {
  /** Chart.js 4's UMD build (defines the global `Chart`). */
  chartJs: string;
  /** The page's style sheet (assets/report-page/report.css). */
  pageCss: string;
  /** The page's script (assets/report-page/report.js): runs after Chart.js and draws from the itb-chart-specs block. */
  pageScript: string;
}

/** The page's Content-Security-Policy: nothing may load, only the inline script and style run. */
export const HTML_REPORT_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/** Names of the charts, as their canvases' data-chart attributes and window.__charts keys. */
export const CHART_NAMES = [
  'time-over-run',
  'latency-percentiles',
  'mbps-over-time',
  'p99-over-time',
  'throughput',
  'cpu-per-image',
  'peak-rss',
] as const;

/** One of {@link CHART_NAMES}. */
export type ChartName = (typeof CHART_NAMES)[number];

type RunRole = 'only' | 'before' | 'after';

/** Most points of a line over time: beyond it consecutive seconds merge (bucketSeries). */
const SERIES_MAX_POINTS = 2000;
/** Most points of a percentile curve: beyond it they are spaced evenly on its log axis (latencyCurve). */
const PERCENTILE_MAX_POINTS = 2000;
/** What a chart over time says of a section from a file written before per-second series were recorded. */
const NO_SERIES = 'no series in this file';
/** Positions on the percentile axis, 1/(1 − p): 0 %, 50 %, 75 %, 90 %, 95 %, 99 %, 99.9 %, … */
const PERCENTILE_TICKS = [1, 2, 4, 10, 20, 100, 1000, 1e4, 1e5, 1e6, 1e7];

// One colour per transport of a TRANSPORTS=all run (twelve besides the baseline): Tableau 10 without
// its red (red means failure on this page) and its grey (the baseline's), then four of Tableau 20's
// darker shades. The baseline is neutral grey.
const TRANSPORT_COLORS = [
  '#4e79a7',
  '#f28e2b',
  '#59a14f',
  '#b07aa1',
  '#76b7b2',
  '#edc948',
  '#9c755f',
  '#ff9da7',
  '#2c5f8a',
  '#a0522d',
  '#3d7a36',
  '#17becf',
];
const BASELINE_COLOR = '#6f7782';
// The broker's purple stays clear of both other sides and of the failure red.
const SIDE_COLORS = { transmitter: '#3f6fb5', receiver: '#e0892f', broker: '#7b5ea7' } as const;
const SIDE_NAMES = { transmitter: 'Transmitter', receiver: 'Receiver', broker: 'Broker' } as const;

type Side = keyof typeof SIDE_COLORS;

/** The tag on a line chart for a transport drawn from a failed repeat. */
const FAILED_SHOWN = 'FAILED repeat shown';

interface RunView {
  report: RunReport;
  role: RunRole;
  /** "Before", "After", or "" for a lone run. */
  name: string;
}

/** One transport in one run. */
interface TransportInRun {
  summary: TransportSummary;
  /** The median completed repeat, the only source of figures (table, bars); undefined when no repeat completed. */
  median: SectionResult | undefined;
  /**
   * What the line charts draw: the median, or with no completed repeat the last repeat with any
   * arrival, so a failure can still be diagnosed from its times.
   */
  drawn: SectionResult | undefined;
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

/** A line chart's dataset: one figure (p50, p99, …) of one transport in one run. */
interface LineDataset {
  label: string;
  legendLabel: string;
  transport: string;
  run: RunRole;
  color: string;
  /** The figure it draws, named in its label ("p99", "min", …); "" for a transport's only line. */
  figure: string;
  /** True when the transport has points in this run; anyData when in any run. */
  hasData: boolean;
  anyData: boolean;
  /** Why the transport draws nothing in this run ("no data", "no series in this file", …); null when it draws. */
  missing: string | null;
  /** True when the points come from a failed repeat (the transport has no completed one). */
  failedRepeat: boolean;
  data: Point[];
  /** Charts over time: the seconds each point covers from its x, the last up to spanSeconds. */
  bucketSeconds?: number;
  spanSeconds?: number;
  borderColor: string;
  backgroundColor: string;
  pointBackgroundColor: string;
  borderWidth: number;
  borderDash: number[];
  /** '-1' on the upper edge of a min–max band: filled down to its lower edge, the dataset before it. */
  fill: '-1' | false;
  pointRadius: number;
  pointStyle: string;
  pointHoverRadius: number;
  spanGaps: false;
  tension: 0;
}

/** A bar chart's dataset: one figure (one side, one run) for every transport. */
interface BarDataset {
  label: string;
  run: RunRole;
  side: Side | null;
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
  | {
      name: ChartName;
      kind: 'over-time';
      xTitle: string;
      yTitle: string;
      unit: 'ms' | 'MB/s';
      xMax: number;
      datasets: LineDataset[];
    }
  | {
      name: ChartName;
      kind: 'percentiles';
      xTitle: string;
      yTitle: string;
      xMax: number;
      ticks: number[];
      datasets: LineDataset[];
    }
  | {
      name: ChartName;
      kind: 'bars';
      yTitle: string;
      unit: string;
      digits: number;
      legend: boolean;
      labels: (string | string[])[];
      titles: string[];
      datasets: BarDataset[];
    };

/**
 * report.html for one run, or for two (before, after) overlaid: header, charts, sortable summary
 * table; every script, style and datum inline.
 */
export function renderHtmlReport(runs: readonly RunReport[], libraries: HtmlReportLibraries): string {
  if (runs.length < 1 || runs.length > 2)
    throw new RangeError(`renderHtmlReport takes one run, or two (before, after); got ${runs.length}`);
  const views = runViewsOf(runs);
  const transports = transportViewsOf(views);
  const specs = chartSpecs(views, transports);
  const title =
    views.length === 1
      ? `image-transfer-bench · ${formatDate(views[0]!.report.run.startedAt)}`
      : `image-transfer-bench · before / after`;
  return `${pageHead(title, libraries.pageCss)}
<body>
<main>
${renderHeader(views, transports)}
${renderCharts(views, transports, specs)}
${renderTableSection(views, transports)}
${renderFootnotes()}
</main>
<script type="application/json" id="itb-results">${jsonForScript(runs.map(withoutBulk))}</script>
<script type="application/json" id="itb-chart-specs">${jsonForScript(specs)}</script>
<script>${scriptForInline(libraries.chartJs)}</script>
<script>${scriptForInline(libraries.pageScript)}</script>
</body>
</html>
`;
}

/** A self-contained page's start, up to its body: no request leaves it (HTML_REPORT_CSP), its style inlined. */
export function pageHead(title: string, pageCss: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(HTML_REPORT_CSP)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${styleForInline(pageCss)}</style>
</head>`;
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

/**
 * CSS safe inside a <style> element, which "</style" would end. Valid CSS has it only in strings,
 * where "<\/" means the same characters, and in comments, where the change is harmless.
 */
export function styleForInline(source: string): string {
  return source.replace(/<\/(style)/gi, '<\\/$1');
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

function transportInRun(report: RunReport, summary: TransportSummary): TransportInRun {
  const median = medianOf(report, summary);
  const lastArrived = [...report.sections]
    .reverse()
    .find((s) => s.transport === summary.transport && s.okCount + s.corruptCount > 0);
  return { summary, median, drawn: median ?? lastArrived };
}

/** One image's record as files written before per-second series held it inline (SectionResult.images then). */
interface LegacyImageRecord {
  timeMs: number | null;
  status: 'ok' | 'corrupt' | 'lost';
}

/** A section as any results.json of this schema may hold it: with every image's record (older files) or not. */
type StoredSection = Omit<SectionResult, 'images'> & { images?: readonly LegacyImageRecord[] };

/** The per-image records of a section from an older file; undefined in a file that keeps them apart. */
function legacyImages(section: SectionResult): readonly LegacyImageRecord[] | undefined {
  return (section as StoredSection).images;
}

/** A run as the page carries it: its sections without per-image records and per-second series. */
function withoutBulk(report: RunReport): unknown {
  return {
    ...report,
    sections: report.sections.map((section) => {
      const { images: _images, series: _series, ...rest } = section as StoredSection;
      return rest;
    }),
  };
}

/** True when the figures to show include a broker's cost, in any run: the broker's bars and column appear only then. */
function hasBroker(transports: readonly TransportView[]): boolean {
  return transports.some((t) => t.perRun.some((r) => (r?.median?.cost.broker ?? null) !== null));
}

/** True when any run shown crossed two clocks (two kernels): the clock-error column appears only then. */
function hasTwoClocks(transports: readonly TransportView[]): boolean {
  return transports.some((t) => t.perRun.some((r) => (r?.median?.oneWayClockErrorMs ?? null) !== null));
}

/** True when any run shown had several clients: the fairness columns appear only then. */
function hasClients(transports: readonly TransportView[]): boolean {
  return transports.some((t) => t.perRun.some((r) => (r?.drawn?.clientFairness ?? null) !== null));
}

/** True when any run shown was open-loop (RATE): its columns appear only then. */
function hasOpenLoop(transports: readonly TransportView[]): boolean {
  return transports.some((t) => t.perRun.some((r) => (r?.drawn?.openLoop ?? null) !== null));
}

/** Every transport of either run, the latest run's order first; colours follow that order. */
function transportViewsOf(views: readonly RunView[]): TransportView[] {
  const keys: string[] = [];
  for (const view of [...views].reverse())
    for (const t of view.report.transports) if (!keys.includes(t.transport)) keys.push(t.transport);
  let colorIndex = 0;
  return keys.map((key) => {
    const perRun = views.map((view): TransportInRun | undefined => {
      const summary = view.report.transports.find((t) => t.transport === key);
      return summary === undefined ? undefined : transportInRun(view.report, summary);
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

/**
 * How a line chart tells the before run from the after: dashed, or faint where its dashes already mark a figure (p99,
 * round trip).
 */
type BeforeStyle = 'dashed' | 'faint';

/** One line a section contributes to a chart, among its others. */
interface SectionLine {
  /** Named in its label ("p50", "p99", "min", …); "" for a chart's only line of a section. */
  figure: string;
  points: Point[];
  /** A dash that marks the figure, in either run (p99, round trip). */
  dash?: number[];
  /** An edge of the min–max band: 'max' is filled down to the 'min' line pushed just before it. */
  band?: 'min' | 'max';
}

/** What one section gives a line chart: its lines, and why it has none when that is not a lack of arrivals. */
interface SectionDrawing {
  lines: SectionLine[];
  /** Why there is nothing to draw, said in the legend and under the chart; "no data" when not given. */
  missing?: string;
  /** Charts over time: the seconds each point covers from its x, and the section's span in seconds. */
  bucketSeconds?: number;
  spanSeconds?: number;
}

/**
 * A section's per-second series as chart buckets, drawn by `lines`; none in a file written before series were recorded.
 */
function seriesDrawing(
  section: SectionResult,
  lines: (buckets: readonly SeriesBucket[]) => SectionLine[],
  missing?: string,
): SectionDrawing {
  if (section.series === undefined) return { lines: [], missing: NO_SERIES };
  const buckets = bucketSeries(section.series, SERIES_MAX_POINTS);
  const last = buckets.at(-1);
  return {
    lines: lines(buckets),
    ...(missing === undefined ? {} : { missing }),
    bucketSeconds: buckets[0]?.seconds ?? 1,
    spanSeconds: last === undefined ? 0 : last.startSecond + last.seconds,
  };
}

/** One figure of every bucket, at its first second; null (a gap) where a bucket has none. */
function bucketPoints(
  buckets: readonly SeriesBucket[],
  figure: (bucket: SeriesBucket) => number | null | undefined,
): Point[] {
  return buckets.map((b) => ({ x: b.startSecond, y: figure(b) ?? null }));
}

/** Chart (a): one-way times over the run: the p50 line, the min–max band, the p99 dashed. */
function timeOverRunDrawing(section: SectionResult): SectionDrawing {
  return seriesDrawing(section, (buckets) => [
    { figure: 'p50', points: bucketPoints(buckets, (b) => b.oneWay?.p50Ms) },
    { figure: 'p99', points: bucketPoints(buckets, (b) => b.oneWay?.p99Ms), dash: [5, 4] },
    { figure: 'min', points: bucketPoints(buckets, (b) => b.oneWay?.minMs), band: 'min' },
    { figure: 'max', points: bucketPoints(buckets, (b) => b.oneWay?.maxMs), band: 'max' },
  ]);
}

/** Chart (b): MB/s of every bucket; 0 where nothing intact arrived. */
function mbpsOverTimeDrawing(section: SectionResult): SectionDrawing {
  return seriesDrawing(section, (buckets) => [{ figure: '', points: bucketPoints(buckets, (b) => b.throughputMBps) }]);
}

/** Chart (c): the p99 of every bucket, one-way solid, round trip dashed. */
function p99OverTimeDrawing(section: SectionResult): SectionDrawing {
  return seriesDrawing(
    section,
    (buckets) => [
      { figure: 'p99', points: bucketPoints(buckets, (b) => b.oneWay?.p99Ms) },
      { figure: 'RTT p99', points: bucketPoints(buckets, (b) => b.rtt?.p99Ms), dash: [5, 4] },
    ],
    // Seconds arrived in, but none with enough images for a p99.
    `no second of ${MIN_SAMPLES_FOR.p99} images`,
  );
}

/**
 * The latency percentile curve of a section's intact images, at x = 1 / (1 − p), which spreads
 * the tail over a log axis: from its HDR histogram, or in an older file from its per-image times.
 */
function percentileDrawing(section: SectionResult): SectionDrawing {
  if (section.histograms !== undefined) {
    const encoded = section.histograms.oneWayNs;
    // A histogram bucket's highest value can pass the true slowest time (by under 0.1 %): the table's max caps it, as
    // it caps the table's percentiles.
    const maxMs = section.latency?.maxMs ?? Infinity;
    const points =
      encoded === null
        ? []
        : latencyCurve(encoded, PERCENTILE_MAX_POINTS).map((p) => ({
            x: 100 / (100 - p.percentile),
            y: Math.min(maxMs, p.ms),
          }));
    return { lines: [{ figure: '', points }] };
  }
  return { lines: [{ figure: '', points: legacyPercentilePoints(legacyImages(section) ?? []) }] };
}

/**
 * The percentile curve from per-image records (files written before histograms were): the i-th
 * fastest of n at p = (i + 0.5) / n (Hazen's plotting position, as latencyCurve places them).
 */
function legacyPercentilePoints(images: readonly LegacyImageRecord[]): Point[] {
  const times = images.flatMap((i) => (i.status === 'ok' && i.timeMs !== null ? [i.timeMs] : [])).sort((a, b) => a - b);
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

/**
 * What a chart lacks of a transport: per run, why it draws nothing (null where it draws); the
 * run is named when only some runs lack it.
 */
function noDataSuffix(views: readonly RunView[], missing: readonly (string | null)[]): string {
  const reasons = [...new Set(missing.filter((m): m is string => m !== null))];
  return reasons
    .map((reason) => {
      const runs = views.filter((_, i) => missing[i] === reason);
      return views.length === 1 || runs.length === views.length
        ? reason
        : `${reason} ${runs.map((v) => v.role).join(', ')}`;
    })
    .join('; ');
}

/** "FAILED repeat shown" (with the run, when only one of two is) for the runs drawn from a failed repeat. */
function failedShownSuffix(views: readonly RunView[], failed: readonly boolean[]): string {
  if (!failed.some(Boolean)) return '';
  if (views.length === 1 || failed.every(Boolean)) return FAILED_SHOWN;
  return `${FAILED_SHOWN} ${views[failed.indexOf(true)]!.role}`;
}

function lineDatasets(
  views: readonly RunView[],
  transports: readonly TransportView[],
  drawingOf: (section: SectionResult) => SectionDrawing,
  beforeStyle: BeforeStyle,
): LineDataset[] {
  const datasets: LineDataset[] = [];
  for (const t of transports) {
    const drawings = t.perRun.map((r) => (r?.drawn === undefined ? undefined : drawingOf(r.drawn)));
    const has = drawings.map((d) => d?.lines.some((line) => line.points.some((p) => p.y !== null)) ?? false);
    const missing = drawings.map((d, i) => (has[i] ? null : (d?.missing ?? 'no data')));
    // Only a failed repeat that draws something needs the tag; one with no points is plain "no data".
    const failed = t.perRun.map((r, i) => has[i]! && r !== undefined && r.median === undefined);
    const suffix = [noDataSuffix(views, missing), failedShownSuffix(views, failed)].filter(Boolean).join('; ');
    const legendLabel = suffix === '' ? t.title : `${t.title} (${suffix})`;
    // The latest run first: Chart.js draws the first dataset on top.
    for (let i = views.length - 1; i >= 0; i--) {
      const view = views[i]!;
      if (t.perRun[i] === undefined) continue;
      const drawing = drawings[i];
      // A section with nothing to draw still gets a line: its legend entry says why.
      const lines: readonly SectionLine[] =
        drawing === undefined || drawing.lines.length === 0 ? [{ figure: '', points: [] }] : drawing.lines;
      const before = view.role === 'before';
      const faint = before && beforeStyle === 'faint';
      const drawn = t.perRun[i]!.drawn;
      // The tooltip names the failed repeat, so a reader hovering a point cannot take it for a result.
      const failedNote =
        failed[i] && drawn !== undefined
          ? view.report.run.repeat > 1
            ? ` (FAILED repeat ${drawn.repeat})`
            : ' (FAILED)'
          : '';
      const name = before ? `${t.title} · before` : view.role === 'after' ? `${t.title} · after` : t.title;
      const lineColor = before ? withAlpha(t.color, faint ? 0.45 : 0.6) : t.color;
      const bandColor = withAlpha(t.color, before ? 0.07 : 0.14);
      for (const line of lines) {
        const points = line.points;
        const radius =
          line.band !== undefined ? 0 : points.length <= 60 ? (before ? 2 : 2.5) : points.length <= 300 ? 1.2 : 0;
        datasets.push({
          label: `${name}${line.figure === '' ? '' : ` ${line.figure}`}${failedNote}`,
          legendLabel,
          transport: t.key,
          run: view.role,
          color: t.color,
          figure: line.figure,
          hasData: has[i]!,
          anyData: has.some(Boolean),
          missing: missing[i] ?? null,
          failedRepeat: failed[i]!,
          data: points,
          ...(drawing?.bucketSeconds === undefined
            ? {}
            : { bucketSeconds: drawing.bucketSeconds, spanSeconds: drawing.spanSeconds ?? 0 }),
          borderColor: line.band !== undefined ? bandColor : lineColor,
          backgroundColor: line.band !== undefined ? bandColor : lineColor,
          pointBackgroundColor: before && !faint ? '#ffffff' : lineColor,
          borderWidth: line.band !== undefined ? 0 : before ? (faint ? 1.25 : 1.5) : line.dash !== undefined ? 1.5 : 2,
          borderDash: line.dash ?? (before && !faint ? [6, 4] : []),
          fill: line.band === 'max' ? '-1' : false,
          pointRadius: radius,
          pointStyle: 'circle',
          pointHoverRadius: line.band !== undefined ? 0 : 4,
          spanGaps: false,
          tension: 0,
        });
      }
    }
  }
  return datasets;
}

interface BarFigure {
  name: ChartName;
  yTitle: string;
  unit: string;
  digits: number;
  sides: readonly (Side | null)[];
  value: (run: TransportInRun | undefined, side: Side | null) => number | null;
}

function barSpec(views: readonly RunView[], transports: readonly TransportView[], figure: BarFigure): ChartSpec {
  const datasets: BarDataset[] = [];
  for (const side of figure.sides) {
    views.forEach((view, runIndex) => {
      const before = view.role === 'before';
      const sideColor = side === null ? null : SIDE_COLORS[side];
      const colors = transports.map((t) => sideColor ?? t.color);
      const sideName = side === null ? figure.unit : SIDE_NAMES[side];
      datasets.push({
        label: view.role === 'only' ? sideName : `${sideName} · ${view.role}`,
        run: view.role,
        side,
        transports: transports.map((t) => t.key),
        data: transports.map((t) => figure.value(t.perRun[runIndex], side)),
        backgroundColor:
          side === null
            ? colors.map((c) => (before ? withAlpha(c, 0.35) : c))
            : before
              ? withAlpha(sideColor!, 0.35)
              : sideColor!,
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
  const timeOverRun = lineDatasets(views, transports, timeOverRunDrawing, 'faint');
  const mbpsOverTime = lineDatasets(views, transports, mbpsOverTimeDrawing, 'dashed');
  const p99OverTime = lineDatasets(views, transports, p99OverTimeDrawing, 'faint');
  const percentiles = lineDatasets(views, transports, percentileDrawing, 'dashed');
  const maxX = Math.max(1, ...percentiles.flatMap((d) => d.data.map((p) => p.x)));
  const maxSeconds = Math.max(1, ...mbpsOverTime.map((d) => d.spanSeconds ?? 0));
  const xTitle = 'time since the first recorded image was sent (by arrival, receiver clock)';
  // Bars are figures: the median completed repeat's, never a failed repeat's partial ones.
  const cost = (side: Side | null, r: TransportInRun | undefined) =>
    side === null ? undefined : (r?.median?.cost[side] ?? undefined);
  const cpuSides: Side[] = hasBroker(transports) ? ['transmitter', 'receiver', 'broker'] : ['transmitter', 'receiver'];
  return [
    {
      name: 'time-over-run',
      kind: 'over-time',
      xTitle,
      yTitle: 'transmission time (ms)',
      unit: 'ms',
      xMax: maxSeconds,
      datasets: timeOverRun,
    },
    {
      name: 'latency-percentiles',
      kind: 'percentiles',
      xTitle: 'percentile (log scale of 1 / (1 − p): the tail spreads out)',
      yTitle: 'transmission time (ms, log scale)',
      xMax: PERCENTILE_TICKS.find((tick) => tick >= maxX * 0.9999) ?? maxX,
      ticks: PERCENTILE_TICKS,
      datasets: percentiles,
    },
    {
      name: 'mbps-over-time',
      kind: 'over-time',
      xTitle,
      yTitle: 'MB/s',
      unit: 'MB/s',
      xMax: maxSeconds,
      datasets: mbpsOverTime,
    },
    {
      name: 'p99-over-time',
      kind: 'over-time',
      xTitle,
      yTitle: 'p99 (ms)',
      unit: 'ms',
      xMax: maxSeconds,
      datasets: p99OverTime,
    },
    barSpec(views, transports, {
      name: 'throughput',
      yTitle: 'MB/s',
      unit: 'MB/s',
      digits: 1,
      sides: [null],
      value: (r) => r?.median?.throughputMBps ?? null,
    }),
    barSpec(views, transports, {
      name: 'cpu-per-image',
      yTitle: 'CPU ms per image',
      unit: 'ms',
      digits: 2,
      sides: cpuSides,
      value: (r, side) => cost(side, r)?.cpuMsPerImage ?? null,
    }),
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
  return (
    `${host.hostname} · ${host.cpuModel}, ${host.cores} cores, ${formatSize(host.totalMemoryBytes)} ` +
    `· ${host.platform} ${host.kernel} · ${nodeDescription(host)}`
  );
}

function librariesText(hosts: RunReport['run']['hosts']): string {
  const names = [
    ...new Set([...Object.keys(hosts.receiver.libraries), ...Object.keys(hosts.transmitter.libraries)]),
  ].sort();
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

/** Two kernels: how one-way times were put on one clock, and the largest error bound that left. */
function clockFact(report: RunReport): string {
  const bounds = report.sections.flatMap((s) => (s.oneWayClockErrorMs == null ? [] : [s.oneWayClockErrorMs]));
  const largest =
    bounds.length === 0
      ? ''
      : `: one-way figures within ± ${Math.max(...bounds).toFixed(3)} ms at most (Clock ± column)`;
  return (
    `different or unknown kernels: send times moved onto the receiver clock by the offset estimated before each ` +
    `section${largest}; the round trip (RTT) is on the transmitter clock alone, the clock-free figure`
  );
}

/** The first fact of the right-hand table of a lone run's facts: from here on the values are long. */
const RIGHT_HAND_FACTS_FROM = 'Repeat';

function factRows(view: RunView, transports: readonly TransportView[], withArrivalNotes: boolean): [string, string][] {
  const { run, finishedAt } = view.report;
  const took = formatDuration(run.startedAt, finishedAt);
  const titleOf = (key: string): string => transports.find((t) => t.key === key)?.title ?? key;
  const { transmitter, receiver } = run.hosts;
  const sameClock = transmitter.bootId !== null && transmitter.bootId === receiver.bootId;
  return [
    ['Date', `${formatDate(run.startedAt)}${took === null ? '' : ` (took ${took})`}`],
    [
      'Image',
      `${run.imageDescription}, ${formatSize(run.imageSizeBytes)} (` +
        run.imageSizeBytes.toLocaleString('en-US') +
        ` bytes)`,
    ],
    ['Images per transport', String(run.imageCount)],
    ['Window', `${run.window} in flight`],
    [
      'Send schedule',
      run.config.ratePerSecond === undefined
        ? 'closed loop: the next image goes as soon as the window has room'
        : `open loop at RATE ` +
          run.config.ratePerSecond.toLocaleString('en-US') +
          ` images/s; an image due while WINDOW are in flight waits for a slot and goes late, its wait counted ` +
          `from its due time; MB/s is the load delivered, not a capacity`,
    ],
    ['Warm-up', describeWarmup(run.warmup)],
    [
      'Integrity',
      run.config.verify === false
        ? 'NOT VERIFIED (VERIFY=false): a corrupt image would count as intact'
        : 'size and xxHash64 of every image, checked by the receiver after its ack, on the thread that stamps ' +
          'arrivals: bytes arriving during a hash are stamped after it (RX hashing %)',
    ],
    [
      RIGHT_HAND_FACTS_FROM,
      run.repeat > 1
        ? `${run.repeat}, interleaved: the transport order rotated each repeat (A B C, B C A, C A B, …); figures ` +
          `from each transport’s median COMPLETED repeat`
        : String(run.repeat),
    ],
    ['Transports', run.transports.map(titleOf).join(', ')],
    ['Transmitter host', hostText(transmitter)],
    ['Receiver host', hostText(receiver)],
    ['Peers', peersText(run)],
    ['Link', run.config.link ?? 'not recorded'],
    ['Clock', sameClock ? 'one kernel: both sides share a monotonic clock' : clockFact(view.report)],
    ['Libraries', librariesText(run.hosts)],
    // When either of two runs has notes both get the row: the two-run table pairs rows by position.
    ...(withArrivalNotes
      ? [['Batched arrivals', run.arrivalNotes.length > 0 ? run.arrivalNotes.join(' · ') : 'none'] as [string, string]]
      : []),
  ];
}

/** One line on how a run went: every transport intact, or which failed (and why) and why the run stopped. */
function renderVerdict(view: RunView): string {
  const { report } = view;
  const failed = report.transports.filter((t) => !t.ok);
  const stopReason = report.stopReason ?? null;
  const prefix = view.name === '' ? '' : `${view.name}: `;
  if (stopReason === null && failed.length === 0 && report.sections.length > 0) {
    return (
      `<p class="verdict ok"><strong>${escapeHtml(prefix)}every transport delivered every image ` +
      `intact.</strong></p>`
    );
  }
  const headline = [
    ...(stopReason === null ? [] : ['run incomplete']),
    ...(failed.length === 0 ? [] : [`${failed.length} of ${report.transports.length} transports FAILED`]),
    ...(report.sections.length === 0 ? ['no section ran'] : []),
  ].join(', ');
  const details = [
    ...(stopReason === null ? [] : [stopReason]),
    ...failed.map((t) => `${sectionTitle(t)}: ${failureReason(t, report)}`),
  ];
  return (
    `<p class="verdict failed"><strong>${escapeHtml(prefix + headline)}</strong>` +
    (details.length > 0 ? ` <span class="details">${details.map(escapeHtml).join(' · ')}</span>` : '') +
    `</p>`
  );
}

/** The facts of one run in two side-by-side tables, or of two runs in one table, a column each. */
function renderFacts(views: readonly RunView[], transports: readonly TransportView[]): string {
  const withArrivalNotes = views.some((v) => v.report.run.arrivalNotes.length > 0);
  const rows = views.map((v) => factRows(v, transports, withArrivalNotes));
  const first = rows[0]!;
  if (views.length === 1) {
    const split = first.findIndex(([label]) => label === RIGHT_HAND_FACTS_FROM);
    const table = (part: [string, string][]): string =>
      `<table class="facts-table"><tbody>\n` +
      part
        .map(([label, value]) => `<tr><th scope="row">${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`)
        .join('\n') +
      `\n</tbody></table>`;
    // Repeats, hosts, libraries and arrival notes are long: they go in the wider right-hand table.
    return `<div class="facts-grid">${table(first.slice(0, split))}${table(first.slice(split))}</div>`;
  }
  const body = first
    .map(([label], i) => {
      const values = rows.map((r) => r[i]![1]);
      const differs = new Set(values).size > 1;
      const flagged = differs && label !== 'Date';
      // A fact both runs share is written once, across both columns.
      const cells = differs
        ? values.map((v) => `<td>${escapeHtml(v)}</td>`).join('')
        : `<td colspan="${values.length}">${escapeHtml(values[0]!)}</td>`;
      return (
        `<tr${flagged ? ' class="differs"' : ''}><th scope="row">${escapeHtml(label)}` +
        (flagged ? ' <span class="tag">differs</span>' : '') +
        `</th>${cells}</tr>`
      );
    })
    .join('\n');
  const head =
    `<thead><tr><td></td>` + views.map((v) => `<th scope="col">${escapeHtml(v.name)}</th>`).join('') + `</tr></thead>`;
  return (
    `<table class="facts-table two-runs"><colgroup><col class="label-column"><col><col></colgroup>${head}` +
    `<tbody>\n${body}\n</tbody></table>`
  );
}

function renderHeader(views: readonly RunView[], transports: readonly TransportView[]): string {
  const subtitle =
    views.length === 1
      ? `Run of ${escapeHtml(formatDate(views[0]!.report.run.startedAt))}`
      : `Before (` +
        escapeHtml(formatDate(views[0]!.report.run.startedAt)) +
        `) against after (${escapeHtml(formatDate(views[1]!.report.run.startedAt))})`;
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

function renderCharts(
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
  const merged = specs.some((s) => s.kind === 'over-time' && s.datasets.some((d) => (d.bucketSeconds ?? 1) > 1));
  const mergedNote = merged
    ? ` Over ` +
      SERIES_MAX_POINTS.toLocaleString('en-US') +
      ` s a point merges consecutive seconds: the median of their p50s, the largest of their p99s (an upper ` +
      `bound: percentiles do not merge).`
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
        `band the fastest to the slowest, dashed the p99 (${p99Needs}); gaps where none arrived.${mergedNote}`,
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
            `ack processed, transmitter clock) dashed.${mergedNote}`,
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

// ---------------------------------------------------------------------------------------------
// Summary table

interface Column {
  header: string;
  hint: string;
  digits: number;
  /** Lower is better (latency, time, CPU); false when higher is; null when a change is not good or bad. */
  lowerIsBetter: boolean | null;
  value: (r: TransportInRun) => number | null;
  /** Min–max across completed repeats, shown on hover. */
  spread?: (r: TransportInRun) => { min: number; max: number } | null;
  /** True when the figure is only indicative: it is shown as "~value". */
  indicative?: (r: TransportInRun) => boolean;
}

// The header's hint quotes the definition output.log prints, so the two never drift apart.
const ROUND_TRIP_HINT =
  TIMING_DEFINITIONS.find((d) => d.startsWith('Round trip')) ?? 'round trip: stamp → ack processed';

const COLUMNS: readonly Column[] = [
  {
    header: 'OK',
    hint: 'intact images, all repeats',
    digits: 0,
    lowerIsBetter: false,
    value: (r) => r.summary.okCount,
  },
  {
    header: 'Lost',
    hint: 'images that never arrived, all repeats',
    digits: 0,
    lowerIsBetter: true,
    value: (r) => r.summary.lostCount,
  },
  {
    header: 'Corrupt',
    hint: 'images with a checksum or size mismatch, all repeats',
    digits: 0,
    lowerIsBetter: true,
    value: (r) => r.summary.corruptCount,
  },
  {
    header: 'p50 ms',
    hint: 'median transmission time',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.p50Ms ?? null,
    spread: (r) => r.summary.spread.p50Ms,
  },
  {
    header: 'p90 ms',
    hint: '90th percentile',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.p90Ms ?? null,
  },
  {
    header: 'p99 ms',
    hint: '99th percentile',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.p99Ms ?? null,
    spread: (r) => r.summary.spread.p99Ms,
  },
  {
    header: 'p99.9 ms',
    hint: '99.9th percentile',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.p999Ms ?? null,
  },
  {
    header: 'max ms',
    hint: 'slowest intact image',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.maxMs ?? null,
  },
  {
    header: 'RTT p50 ms',
    hint: `median round trip. ${ROUND_TRIP_HINT}`,
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.rtt?.p50Ms ?? null,
    spread: (r) => r.summary.spread.rttP50Ms,
  },
  {
    header: 'RTT p99 ms',
    hint: `99th percentile round trip. ${ROUND_TRIP_HINT}`,
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.rtt?.p99Ms ?? null,
  },
  {
    header: 'Total ms',
    hint: 'arrival of the last image − send start of the first',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.totalMs ?? null,
    spread: (r) => r.summary.spread.totalMs,
  },
  {
    header: 'MB/s',
    hint:
      `10⁶ intact bytes per second of total transfer time; ~ marks an indicative figure (fewer ` +
      `than ${MIN_STABLE_REPEATS} completed repeats within ±${STABLE_SPREAD_SHARE * 100} % of their median, or a ` +
      `section under ${MIN_STABLE_IMAGES} images or ${MIN_STABLE_SPAN_MS} ms)`,
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.median?.throughputMBps ?? null,
    spread: (r) => r.summary.spread.throughputMBps,
    indicative: (r) => r.summary.throughputIndicative,
  },
  {
    header: 'images/s',
    hint: 'intact images per second of total transfer time',
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.median?.imagesPerSecond ?? null,
    indicative: (r) => r.summary.throughputIndicative,
  },
  {
    header: 'Connect ms',
    hint: 'cold start: time a new connection took to connect, before its warm-up (median of the repeats)',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.summary.coldStart.connectMs,
  },
  {
    header: 'First image ms',
    hint: 'cold start: one-way time of the first image on a new connection, before its warm-up (median of the repeats)',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.summary.coldStart.firstImageMs,
  },
  {
    header: 'TX CPU ms/img',
    hint: 'transmitter CPU (user + system) per image',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.cost.transmitter?.cpuMsPerImage ?? null,
  },
  {
    header: 'RX CPU ms/img',
    hint: 'receiver CPU (user + system) per image',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.cost.receiver?.cpuMsPerImage ?? null,
  },
  {
    header: 'RX hashing %',
    hint:
      'share of the receiver’s busy time spent verifying images (after their acks, on the thread that stamps ' +
      'arrivals): with the window full, images behind it wait this share of the time, in their one-way times; – ' +
      'with VERIFY=false',
    digits: 0,
    lowerIsBetter: true,
    value: (r) => (r.median?.verifyBusyShare == null ? null : r.median.verifyBusyShare * 100),
  },
];

const CLOCK_COLUMN: Column = {
  header: 'Clock ± ms',
  hint:
    'two hosts, two clocks: every one-way figure (p50 … max, First image) is within ± this of the truth, the ' +
    'bound on the clock offset estimated before the section, widened by its drift until the end. The round trip ' +
    '(RTT) is on the transmitter clock alone and needs no offset.',
  digits: 3,
  lowerIsBetter: true,
  value: (r) => r.median?.oneWayClockErrorMs ?? null,
};

const BROKER_COLUMN: Column = {
  header: 'Broker CPU ms/img',
  hint: 'CPU (user + system) per image of the server the transport goes through (Redis), from its own counters',
  digits: 3,
  lowerIsBetter: true,
  value: (r) => r.median?.cost.broker?.cpuMsPerImage ?? null,
};

const OPEN_LOOP_COLUMNS: readonly Column[] = [
  {
    header: 'Sent/s',
    hint: 'RATE: images per second actually sent, first send to last',
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.drawn?.openLoop?.achievedRatePerSecond ?? null,
  },
  {
    header: 'Delivered/s',
    hint: 'RATE: images per second that arrived, first arrival to last',
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.drawn?.openLoop?.deliveredRatePerSecond ?? null,
  },
  {
    header: 'p99 from due ms',
    hint:
      'RATE: 99th percentile transmission time counted from each image’s due time, a wait for a window slot ' +
      'included (coordinated omission corrected)',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.drawn?.openLoop?.latencyFromDue?.p99Ms ?? null,
  },
];

const CLIENT_COLUMNS: readonly Column[] = [
  {
    header: 'Slowest client MB/s',
    hint: 'CLIENTS: the slowest client’s throughput over its own first stamp to last ack',
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.drawn?.clientFairness?.slowestMBps ?? null,
  },
  {
    header: 'Fastest client MB/s',
    hint: 'CLIENTS: the fastest client’s throughput over its own first stamp to last ack',
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.drawn?.clientFairness?.fastestMBps ?? null,
  },
  {
    header: 'Jain',
    hint:
      'CLIENTS: Jain’s fairness index over the clients’ throughputs: 1 when all are served alike, 1/clients when ' +
      'one has it all',
    digits: 3,
    lowerIsBetter: false,
    value: (r) => r.drawn?.clientFairness?.jainIndex ?? null,
  },
];

const formatNumber = (value: number | null, digits: number): string =>
  value === null
    ? '–'
    : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** Why a transport is not ok: its failure, or what went missing when nothing failed outright. */
function failureReason(summary: TransportSummary, report: RunReport): string {
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

function renderTableSection(views: readonly RunView[], transports: readonly TransportView[]): string {
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
function percentileWithheld(l: LatencySummary | null | undefined): boolean {
  return l != null && (l.p90Ms === null || l.p99Ms === null || l.p999Ms === null);
}

function renderFootnotes(): string {
  return (
    `<footer class="footnotes">
<p>${TIMING_DEFINITIONS.map(escapeHtml).join('<br>')}</p>
<p>Percentiles come from an HDR histogram (3 significant digits), each only where the sample supports it (p90 ` +
    `from ${MIN_SAMPLES_FOR.p90} times, p99 from ${MIN_SAMPLES_FOR.p99}, p99.9 from ` +
    MIN_SAMPLES_FOR.p999.toLocaleString('en-US') +
    `; with fewer it is the max itself, shown as –); max, mean and standard deviation (in results.json and ` +
    `output.log) from the raw times, the standard deviation being the sample one (n − 1). MB/s counts 10⁶ bytes of ` +
    `intact images per second of total transfer time. This page is self-contained: it loads nothing from any ` +
    `network.</p>
</footer>`
  );
}
