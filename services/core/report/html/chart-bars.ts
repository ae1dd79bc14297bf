import type { BarDataset, ChartName, ChartSpec, Side } from './chart-types.js';
import { withAlpha, type RunView, type TransportInRun, type TransportView } from './views.js';

// The bar charts, a figure per transport (throughput) or per side (CPU, memory): one dataset per
// side and run.

// The broker's purple stays clear of both other sides and of the failure red.
const SIDE_COLORS: Record<Side, string> = { transmitter: '#3f6fb5', receiver: '#e0892f', broker: '#7b5ea7' };
const SIDE_NAMES = { transmitter: 'Transmitter', receiver: 'Receiver', broker: 'Broker' } as const;

/** What one bar chart shows: its figure per transport, per side (or one figure: side null). */
export interface BarFigure {
  name: ChartName;
  yTitle: string;
  unit: string;
  digits: number;
  sides: readonly (Side | null)[];
  value: (run: TransportInRun | undefined, side: Side | null) => number | null;
}

/** A bar chart: a dataset per side and run, a bar per transport. */
export function barSpec(views: readonly RunView[], transports: readonly TransportView[], figure: BarFigure): ChartSpec {
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
