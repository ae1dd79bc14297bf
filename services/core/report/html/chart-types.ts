import type { RunRole } from './views.js';

/** A side whose cost a bar shows. */
export type Side = 'transmitter' | 'receiver' | 'broker';

// The chart specifications the page's script turns into Chart.js charts: typed here, computed by
// chart-specs.ts from the line families (chart-series.ts, chart-percentiles.ts) and the bars.

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

/** A point of a line chart; y null draws a gap. */
export interface Point {
  x: number;
  y: number | null;
}

/** A line chart's dataset: one figure (p50, p99, …) of one transport in one run. */
export interface LineDataset {
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
  /**
   * A p99 line drawn over windows of consecutive seconds merged for want of 100 times a second (its bucketSeconds);
   * windowUpperBound when a window held a second of its own p99 and shows an upper bound.
   */
  windowSeconds?: number;
  windowUpperBound?: boolean;
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
export interface BarDataset {
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
export type ChartSpec =
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
 * How a line chart tells the before run from the after: dashed, or faint where its dashes already mark a figure (p99,
 * round trip).
 */
export type BeforeStyle = 'dashed' | 'faint';

/** One line a section contributes to a chart, among its others. */
export interface SectionLine {
  /** Named in its label ("p50", "p99", "min", …); "" for a chart's only line of a section. */
  figure: string;
  points: Point[];
  /** A dash that marks the figure, in either run (p99, round trip). */
  dash?: number[];
  /** An edge of the min–max band: 'max' is filled down to the 'min' line pushed just before it. */
  band?: 'min' | 'max';
  /** A p99 line over windows of this many seconds (tail-windows.ts); upperBound as {@link LineDataset}'s. */
  windows?: { seconds: number; upperBound: boolean };
}

/** What one section gives a line chart: its lines, and why it has none when that is not a lack of arrivals. */
export interface SectionDrawing {
  lines: SectionLine[];
  /** Why there is nothing to draw, said in the legend and under the chart; "no data" when not given. */
  missing?: string;
  /** Charts over time: the seconds each point covers from its x, and the section's span in seconds. */
  bucketSeconds?: number;
  spanSeconds?: number;
}
