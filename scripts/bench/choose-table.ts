import { formatSize } from '../../services/core/config/size.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { medianInterval, percentText } from '../lib/overhead.js';
import { ALL_CEILING_SHAPES, type CeilingCell, type CeilingSummary, type ShapeName } from './ceiling-model.js';
import { fixed, median } from './format.js';
import type { BenchPlan } from './plan.js';

// docs/transports.md's "Which to choose": one row per transport from one ceiling run, each figure the suite's own
// median over the rounds with its 95 % interval, ordered by the large shape's MB/s. Printed as markdown, so the page
// takes the run's table as it came.

/** A figure of a section, and how many digits it is shown with. */
interface Figure {
  of: (section: SectionResult) => number | null | undefined;
  digits: number;
}

const FIGURES: Record<ShapeName, Figure> = {
  large: { of: (s) => s.throughputMBps, digits: 0 },
  small: { of: (s) => s.imagesPerSecond, digits: 0 },
  latency: { of: (s) => s.latency?.p50Ms, digits: 2 },
};

/** With thousands separators: "1,604". */
const grouped = (value: number, digits: number): string =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** The rounds' values of one figure of a transport's cells of one shape: only sections that completed. */
function values(
  cells: readonly CeilingCell[],
  figure: (section: SectionResult) => number | null | undefined,
): number[] {
  return cells.flatMap((c) => {
    const value = c.ours?.ok ? figure(c.ours) : undefined;
    return value === null || value === undefined ? [] : [value];
  });
}

/** "1,604 (1,571–1,633)": the median and its interval; "fails: why" when no round completed; "-" when not run. */
function figureText(cells: readonly CeilingCell[], figure: Figure): string {
  if (cells.length === 0) return '-';
  const each = values(cells, figure.of);
  if (each.length === 0) {
    const failure = cells.find((c) => c.ours?.failure)?.ours?.failure;
    return `fails: ${(failure ?? 'no section completed').slice(0, 80).replaceAll('|', '/')}`;
  }
  const ci = medianInterval(each);
  const failed = cells.length - each.length;
  return (
    grouped(median(each)!, figure.digits) +
    (ci === null ? '' : ` (${grouped(ci.low, figure.digits)}–${grouped(ci.high, figure.digits)})`) +
    (failed === 0 ? '' : `, ${failed} of ${cells.length} rounds failed`)
  );
}

/** "0.32 + 0.55 + 0.41": the large shape's CPU ms per image, transmitter + receiver (+ broker), medians. */
function cpuText(cells: readonly CeilingCell[]): string {
  const side = (pick: (s: SectionResult) => number | null | undefined): number | null => median(values(cells, pick));
  const tx = side((s) => s.cost.transmitter?.cpuMsPerImage);
  const rx = side((s) => s.cost.receiver?.cpuMsPerImage);
  const broker = side((s) => s.cost.broker?.cpuMsPerImage);
  if (tx === null || rx === null) return '-';
  return `${fixed(tx, 2)} + ${fixed(rx, 2)}${broker === null ? '' : ` + ${fixed(broker, 2)}`}`;
}

/**
 * The table's lines: a header naming the shapes, then a row per transport with each shape's median and interval, the
 * large shape's CPU per image, and its overhead against the library's ceiling client.
 */
export function chooseTableLines(
  plan: BenchPlan,
  cells: readonly CeilingCell[],
  summary: readonly CeilingSummary[],
): string[] {
  const shapes = new Set(plan.ceilingShapes.map((shape) => shape.name));
  const shapeOf = (name: ShapeName) => ALL_CEILING_SHAPES.find((shape) => shape.name === name)!;
  const heading = (name: ShapeName, text: (size: string) => string): string => text(formatSize(shapeOf(name).bytes));
  const window = (name: ShapeName): number => shapeOf(name).window;
  const own = (transport: string, shape: ShapeName): CeilingCell[] =>
    cells.filter((c) => c.transport === transport && c.shape === shape);
  const largeMedian = (transport: string): number => median(values(own(transport, 'large'), FIGURES.large.of)) ?? -1;
  const rows = [...plan.ceilingTransports]
    .sort((a, b) => largeMedian(b.name) - largeMedian(a.name))
    .map((t) => {
      const overhead = summary.find((s) => s.transport === t.name && s.shape === 'large')?.overhead;
      return [
        t.label,
        shapes.has('large') ? figureText(own(t.name, 'large'), FIGURES.large) : '-',
        shapes.has('large') ? cpuText(own(t.name, 'large')) : '-',
        shapes.has('large') ? percentText(overhead?.overhead ?? null) : '-',
        shapes.has('small') ? figureText(own(t.name, 'small'), FIGURES.small) : '-',
        shapes.has('latency') ? figureText(own(t.name, 'latency'), FIGURES.latency) : '-',
      ];
    });
  return [
    '',
    `Which to choose (markdown, for docs/transports.md): the suite's medians of ${plan.ceilingRounds} rounds with ` +
      `their 95 % intervals (none under 6 rounds).`,
    '',
    `| transport | ${heading('large', (s) => `${s} × WINDOW ${window('large')}: MB/s`)} | ` +
      `CPU ms/image: TX + RX (+ broker) | below its library | ` +
      `${heading('small', (s) => `${s} × WINDOW ${window('small')}: images/s`)} | ` +
      `${heading('latency', (s) => `${s} one at a time: one-way p50 ms`)} |`,
    '|---|---|---|---|---|---|',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ];
}
