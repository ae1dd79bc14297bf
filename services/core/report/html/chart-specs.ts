import type { Side } from './chart-types.js';
import { barSpec } from './chart-bars.js';
import { lineDatasets } from './chart-lines.js';
import { PERCENTILE_TICKS, percentileDrawing } from './chart-percentiles.js';
import { mbpsOverTimeDrawing, p99OverTimeDrawing, tailWindowsOnce, timeOverRunDrawing } from './chart-series.js';
import type { ChartSpec } from './chart-types.js';
import { hasBroker, type RunView, type TransportInRun, type TransportView } from './views.js';

// Every chart of the page, in the order the page shows them.

/** The specification of every chart in CHART_NAMES, for the runs and transports shown. */
export function chartSpecs(views: readonly RunView[], transports: readonly TransportView[]): ChartSpec[] {
  const tails = tailWindowsOnce();
  const timeOverRun = lineDatasets(views, transports, (s) => timeOverRunDrawing(s, tails), 'faint');
  const mbpsOverTime = lineDatasets(views, transports, mbpsOverTimeDrawing, 'dashed');
  const p99OverTime = lineDatasets(views, transports, (s) => p99OverTimeDrawing(s, tails), 'faint');
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
