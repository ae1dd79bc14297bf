import { renderTable } from '../../services/core/report/text/format.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { formatSize } from '../../services/core/config/size.js';
import { percentText, type MedianInterval } from '../lib/overhead.js';
import type { BenchChart } from '../lib/sweep-page.js';
import type { CeilingFigures } from '../ceiling/drive.js';
import {
  ceilingFigureOf,
  type CeilingCell,
  type CeilingShape,
  type CeilingSummary,
  type ShapeName,
} from './ceiling-model.js';
import type { BenchPlan } from './plan.js';
import { fixed, median } from './format.js';
import type { LoopbackFigures } from './loopback.js';

// The ceiling part's tables and chart bars, from its cells and summaries.

/** Beyond this half-width (points) an overhead's interval is marked wide: it cannot tell 5 % from 15 %. */
const WIDE_HALF_WIDTH_POINTS = 5;

/** A median's 95 % confidence interval, "12 % – 19 %"; "-" without one (under 6 paired rounds). */
export function intervalText(ci: MedianInterval | null): string {
  return ci === null ? '-' : `${percentText(ci.low)} – ${percentText(ci.high)}`;
}

/**
 * The interval's half-width in whole points, "±4"; over WIDE_HALF_WIDTH_POINTS (as shown, so "±5" never is) "±7 wide",
 * and with the `rounds` it came from, "±7 wide, ~20 rounds": about how many would narrow it to WIDE_HALF_WIDTH_POINTS,
 * as a median's interval narrows with the square root of the rounds. "-" without one.
 */
export function halfWidthText(ci: MedianInterval | null, rounds?: number): string {
  if (ci === null) return '-';
  const halfWidthPoints = ((ci.high - ci.low) / 2) * 100;
  const points = Math.round(halfWidthPoints);
  if (points <= WIDE_HALF_WIDTH_POINTS) return `±${points}`;
  if (rounds === undefined) return `±${points} wide`;
  return `±${points} wide, ~${Math.ceil(rounds * (halfWidthPoints / WIDE_HALF_WIDTH_POINTS) ** 2)} rounds`;
}

/** The bars of the bench's page: each transport's median beside its ceiling's, MB/s (large) and images/s (small). */
export function ceilingCharts(plan: BenchPlan, summary: readonly CeilingSummary[], ceilingOnly: boolean): BenchChart[] {
  const large = plan.ceilingShapes.find((shape) => shape.name === 'large');
  const small = plan.ceilingShapes.find((shape) => shape.name === 'small');
  const bars = (shape: CeilingShape, title: string, yLabel: string): BenchChart => {
    const own = plan.ceilingTransports.map(
      (t) => summary.find((s) => s.transport === t.name && s.shape === shape.name)?.overhead,
    );
    return {
      kind: 'bars',
      id: `ceiling-${shape.name}`,
      title,
      note:
        `${formatSize(shape.bytes)} × ${shape.count.toLocaleString('en-US')} ` +
        `after ${shape.warmup.toLocaleString('en-US')} untimed, WINDOW=${shape.window}; medians ` +
        `of ${plan.ceilingRounds} rounds, each round's suite run followed by every ceiling client in the same ` +
        `order.${plan.indicativeNote} Harness overhead = 1 − median ours ÷ median ceiling (the bars' own figures), ` +
        `with the 95 % confidence interval of the median of each round's own overhead: ` +
        plan.ceilingTransports
          .map(
            (t, i) =>
              `${t.label} ${percentText(own[i]?.overhead ?? null)}` +
              (own[i]?.pairCI == null ? '' : ` (${intervalText(own[i]!.pairCI)})`),
          )
          .join(', ') +
        `.`,
      yLabel,
      categories: plan.ceilingTransports.map((t) => t.label),
      series: [
        { label: 'ceiling (the library alone)', values: own.map((o) => o?.ceilingMedian ?? null) },
        ...(ceilingOnly ? [] : [{ label: 'ours (the suite)', values: own.map((o) => o?.oursMedian ?? null) }]),
      ],
    };
  };
  return [
    ...(large ? [bars(large, 'Each transport beside its library’s ceiling: MB/s of large images', 'MB/s')] : []),
    ...(small
      ? [bars(small, 'Each transport beside its library’s ceiling: images/s of small images', 'images/s')]
      : []),
  ];
}

/** What the ceiling tables are made from: the plan, every cell, the summaries, and whether only ceilings ran. */
interface TablesInput {
  plan: BenchPlan;
  cells: readonly CeilingCell[];
  summary: readonly CeilingSummary[];
  ceilingOnly: boolean;
}

const summaryOf = (input: TablesInput, t: string, shape: ShapeName): CeilingSummary =>
  input.summary.find((s) => s.transport === t && s.shape === shape)!;

const cellsOf = (input: TablesInput, t: string, shape: ShapeName): CeilingCell[] =>
  input.cells.filter((c) => c.transport === t && c.shape === shape);

/** "ok" or "FAILED", and the ceiling's failure when it had one. */
function resultText(input: TablesInput, own: readonly CeilingCell[]): string {
  const failed = own.find((c) => 'failed' in c.ceiling)?.ceiling as { failed: string } | undefined;
  const oursOk =
    input.ceilingOnly || own.every((c) => c.ours?.ok && (c.oursUnverified === undefined || c.oursUnverified.ok));
  return [oursOk ? 'ok' : 'FAILED', ...(failed ? [`ceiling FAILED: ${failed.failed.slice(0, 100)}`] : [])].join('; ');
}

const medianOfCells = (own: readonly CeilingCell[], f: (s: SectionResult) => number | null | undefined): string =>
  fixed(median(own.flatMap((c) => (c.ours ? (f(c.ours) ?? []) : []))), 3);

/** Per image, as ours' cost is: each round's figure ÷ its own image count, then the median of the rounds. */
function ceilingPerImage(own: readonly CeilingCell[], f: (c: CeilingFigures) => number | null): string {
  return fixed(
    median(
      own.flatMap((c) => {
        const figures = ceilingFigureOf(c);
        const value = figures === undefined ? null : f(figures);
        return value === null || figures === undefined || figures.count <= 0 ? [] : [value / figures.count];
      }),
    ),
    3,
  );
}

/** The overhead's four columns: the figure, its interval, its half-width. */
function overheadColumns(overhead: CeilingSummary['overhead'] | null | undefined): string[] {
  return [
    percentText(overhead?.overhead ?? null),
    intervalText(overhead?.pairCI ?? null),
    halfWidthText(overhead?.pairCI ?? null, overhead?.pairedRounds),
  ];
}

function largeRows(input: TablesInput): string[][] {
  return input.plan.ceilingTransports.map((t) => {
    const s = summaryOf(input, t.name, 'large');
    const own = cellsOf(input, t.name, 'large');
    const ceilingCpu = [ceilingPerImage(own, (f) => f.senderCpuMs), ceilingPerImage(own, (f) => f.receiverCpuMs)];
    if (input.ceilingOnly) return [t.name, fixed(s.overhead.ceilingMedian, 1), ...ceilingCpu, resultText(input, own)];
    return [
      t.name,
      fixed(s.overhead.ceilingMedian, 1),
      fixed(s.overhead.oursMedian, 1),
      ...overheadColumns(s.overhead),
      fixed(s.overheadUnverified?.oursMedian, 1),
      ...overheadColumns(s.overheadUnverified),
      medianOfCells(own, (x) => x.cost.transmitter?.cpuMsPerImage),
      medianOfCells(own, (x) => x.cost.receiver?.cpuMsPerImage),
      ...ceilingCpu,
      medianOfCells(own, (x) => (x.verifyMs === null || x.imageCount <= 0 ? null : x.verifyMs / x.imageCount)),
      resultText(input, own),
    ];
  });
}

function smallRows(input: TablesInput): string[][] {
  return input.plan.ceilingTransports.map((t) => {
    const s = summaryOf(input, t.name, 'small');
    const own = cellsOf(input, t.name, 'small');
    if (input.ceilingOnly) return [t.name, fixed(s.overhead.ceilingMedian, 0), resultText(input, own)];
    return [
      t.name,
      fixed(s.overhead.ceilingMedian, 0),
      fixed(s.overhead.oursMedian, 0),
      ...overheadColumns(s.overhead),
      resultText(input, own),
    ];
  });
}

function latencyRows(input: TablesInput): string[][] {
  return input.plan.ceilingTransports.map((t) => {
    const s = summaryOf(input, t.name, 'latency');
    const own = cellsOf(input, t.name, 'latency');
    const ceilingP50 = fixed(median(own.flatMap((c) => ceilingFigureOf(c)?.rttP50Ms ?? [])), 3);
    if (input.ceilingOnly) return [t.name, ceilingP50, resultText(input, own)];
    return [
      t.name,
      ceilingP50,
      medianOfCells(own, (x) => x.rtt?.p50Ms),
      ...overheadColumns(s.overhead),
      medianOfCells(own, (x) => x.latency?.p50Ms),
      resultText(input, own),
    ];
  });
}

const shapeText = (shape: CeilingShape): string =>
  `${formatSize(shape.bytes)} × ${shape.count.toLocaleString('en-US')} ` +
  `after ${shape.warmup.toLocaleString('en-US')} untimed (all acknowledged before the first timed one), ` +
  `WINDOW=${shape.window}`;

const LARGE_COLUMNS = [
  'Transport',
  'ceiling MB/s',
  'ours MB/s',
  'overhead',
  '95 % CI',
  '±',
  'ours unverified MB/s',
  'overhead unverified',
  'unverified 95 % CI',
  '±',
  'TX CPU',
  'RX CPU',
  'ceiling TX CPU',
  'ceiling RX CPU',
  'RX hash',
  'Result',
];

function largeTable(input: TablesInput, shape: CeilingShape): string[] {
  return [
    '',
    `Large: ${shapeText(shape)}` +
      (input.ceilingOnly
        ? '. CPU: ms per image, each process from its first timed image to the last ack'
        : (input.plan.ceilingUnverified
            ? '; then the suite again with VERIFY=false (the ceiling verifies nothing)'
            : '; no VERIFY=false pass (--unverified adds one: the suite again unverified, as the ceiling is)') +
          '. CPU: ms per image, each side, ' +
          "from its first recorded image to the last ack; ceiling TX CPU: the ceiling client's sending process, " +
          'per image over the same span; ceiling RX CPU: ' +
          "the ceiling client's receiving process, per image over the same span; RX hash: our receiver's " +
          'checksum time per image, inside its RX CPU') +
      `.`,
    input.ceilingOnly
      ? renderTable(['Transport', 'ceiling MB/s', 'ceiling TX CPU', 'ceiling RX CPU', 'Result'], largeRows(input))
      : renderTable(LARGE_COLUMNS, largeRows(input)),
  ];
}

function smallTable(input: TablesInput, shape: CeilingShape): string[] {
  return [
    '',
    `Small: ${shapeText(shape)}: images per second (per-message cost).`,
    input.ceilingOnly
      ? renderTable(['Transport', 'ceiling images/s', 'Result'], smallRows(input))
      : renderTable(
          ['Transport', 'ceiling images/s', 'ours images/s', 'overhead', '95 % CI', '±', 'Result'],
          smallRows(input),
        ),
  ];
}

function latencyTable(input: TablesInput, shape: CeilingShape): string[] {
  return [
    '',
    `Latency: ${shapeText(shape)}: the round trip (stamp → ack) p50` +
      (input.ceilingOnly
        ? ''
        : '; overhead = 1 − median ceiling ÷ median ours (the share of our round trip the library alone would ' +
          'not spend); one-way p50 beside it') +
      `.`,
    input.ceilingOnly
      ? renderTable(['Transport', 'ceiling RTT p50 ms', 'Result'], latencyRows(input))
      : renderTable(
          [
            'Transport',
            'ceiling RTT p50 ms',
            'ours RTT p50 ms',
            'overhead',
            '95 % CI',
            '±',
            'ours one-way p50 ms',
            'Result',
          ],
          latencyRows(input),
        ),
  ];
}

const TABLES: Record<ShapeName, (input: TablesInput, shape: CeilingShape) => string[]> = {
  large: largeTable,
  small: smallTable,
  latency: latencyTable,
};

/** The paragraph above the tables: what was run, and how overhead and its interval are taken. */
function ceilingPreamble(plan: BenchPlan, ceilingOnly: boolean): string {
  return ceilingOnly
    ? `Ceiling clients only (--ceiling-only): each library's thinnest correct sender and receiver ` +
        `(each transport's ceiling.ts), two processes; ${plan.ceilingRounds} rounds, the transports' order rotated; ` +
        `medians of the rounds.${plan.indicativeNote}`
    : `Ceiling: per round and shape, one suite run over every transport in the round's order, then each one's ` +
        `library ceiling client in the same order, so each lags its own section alike (each transport's ` +
        `ceiling.ts: the thinnest correct sender and receiver of the same library, the same images, WINDOW, ack and ` +
        `write calls, no verification; its span from the first timed send to the last timed arrival, as the ` +
        `suite's), two processes each; ${plan.ceilingRounds} rounds, the transports' order rotated; medians of the ` +
        `rounds.${plan.indicativeNote} Harness overhead = 1 − median ours ÷ median ceiling, from the medians shown. ` +
        `95 % CI: a distribution-free confidence interval of the median of the rounds' own pair overheads (order ` +
        `statistics of the binomial; needs 6 rounds or more); a half-width over ${WIDE_HALF_WIDTH_POINTS} points is ` +
        `marked wide, with about how many rounds would narrow it to ${WIDE_HALF_WIDTH_POINTS} (it narrows with the ` +
        `square root of the rounds: --rounds=). Each figure's distribution over the rounds (min, quartiles, max) and ` +
        `the least and most of the rounds' own overheads are in results.json.`;
}

/**
 * The ceiling's three tables: MB/s (with verification and without), images/s of small images, and the round trip one at
 * a time.
 */
export function ceilingLines(
  plan: BenchPlan,
  cells: readonly CeilingCell[],
  summary: readonly CeilingSummary[],
  ceilingOnly: boolean,
): string[] {
  const input: TablesInput = { plan, cells, summary, ceilingOnly };
  return [
    ceilingPreamble(plan, ceilingOnly),
    ...plan.ceilingShapes.flatMap((shape) => TABLES[shape.name](input, shape)),
  ];
}

/**
 * The loopback's own ceiling (median of the rounds' measurements) and every transport's large-shape MB/s, ours and its
 * ceiling client's, as a share of it: none when the large shape did not run.
 */
export function loopbackLines(
  plan: BenchPlan,
  summary: readonly CeilingSummary[],
  loopback: readonly LoopbackFigures[],
): string[] {
  if (loopback.length === 0) return [];
  const nodeNet = median(loopback.flatMap((l) => l.nodeNetMBps ?? []));
  const iperf3 = median(loopback.flatMap((l) => l.iperf3MBps ?? []));
  const limit = Math.max(nodeNet ?? 0, iperf3 ?? 0);
  const share = (mbps: number | null): string =>
    mbps === null || limit === 0 ? '-' : `${fixed((100 * mbps) / limit, 0)} %`;
  const problems = [...new Set(loopback.flatMap((l) => l.problems))];
  const large = summary.filter((s) => s.shape === 'large');
  const shape = plan.ceilingShapes.find((each) => each.name === 'large');
  const shapeText = shape === undefined ? 'large-shape' : `${formatSize(shape.bytes)} × WINDOW=${shape.window}`;
  return [
    '',
    `The loopback's own ceiling, measured before each round's transports (median of ${loopback.length}): a node:net ` +
      `pair (two processes, 4 MiB writes) ${fixed(nodeNet, 0)} MB/s, iperf3 ${fixed(iperf3, 0)} MB/s. Each ` +
      `transport's ${shapeText} MB/s as a share ` +
      'of the higher:',
    ...problems.map((problem) => `  (${problem})`),
    renderTable(
      ['Transport', 'ours MB/s', 'ceiling client MB/s', 'ours / loopback', 'ceiling client / loopback'],
      large.map((s) => [
        s.transport,
        fixed(s.overhead.oursMedian, 1),
        fixed(s.overhead.ceilingMedian, 1),
        share(s.overhead.oursMedian),
        share(s.overhead.ceilingMedian),
      ]),
      false,
    ),
  ];
}
