import { renderTable } from '../../services/core/report/text/format.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { formatSize } from '../../services/core/config/size.js';
import { percentText, type OverheadSummary } from '../lib/overhead.js';
import type { BenchChart } from '../lib/sweep-page.js';
import {
  ceilingFigureOf,
  type CeilingCell,
  type CeilingShape,
  type CeilingSummary,
  type ShapeName,
} from './ceiling-model.js';
import type { BenchPlan } from './options.js';
import { fixed, median } from './format.js';
import type { LoopbackFigures } from './loopback.js';

// The ceiling part's tables and chart bars, from its cells and summaries.

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
        `of ${plan.ceilingRounds} rounds, each suite run followed by its ceiling client in the same ` +
        `minute.${plan.indicativeNote} Harness overhead = 1 − median ours ÷ median ceiling (the bars' own figures), ` +
        `with the range of each round's own overhead: ` +
        plan.ceilingTransports
          .map(
            (t, i) =>
              `${t.label} ${percentText(own[i]?.overhead ?? null)}` +
              (own[i]?.overheadMin == null
                ? ''
                : ` (${percentText(own[i]!.overheadMin)} – ${percentText(own[i]!.overheadMax ?? null)})`),
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
  const of = (t: string, shape: CeilingShape['name']): CeilingSummary =>
    summary.find((s) => s.transport === t && s.shape === shape)!;
  const ownCells = (t: string, shape: CeilingShape['name']) =>
    cells.filter((c) => c.transport === t && c.shape === shape);
  const range = (o: OverheadSummary): string =>
    o.overheadMin === null ? '-' : `${percentText(o.overheadMin)} – ${percentText(o.overheadMax)}`;
  const result = (own: readonly CeilingCell[]): string => {
    const failed = own.find((c) => 'failed' in c.ceiling)?.ceiling as { failed: string } | undefined;
    const oursOk =
      ceilingOnly || own.every((c) => c.ours?.ok && (c.oursUnverified === undefined || c.oursUnverified.ok));
    return [oursOk ? 'ok' : 'FAILED', ...(failed ? [`ceiling FAILED: ${failed.failed.slice(0, 100)}`] : [])].join('; ');
  };
  const medianOfCells = (own: readonly CeilingCell[], f: (s: SectionResult) => number | null | undefined): string =>
    fixed(median(own.flatMap((c) => (c.ours ? (f(c.ours) ?? []) : []))), 3);
  const large = (): string[][] =>
    plan.ceilingTransports.map((t) => {
      const s = of(t.name, 'large');
      const own = ownCells(t.name, 'large');
      return ceilingOnly
        ? [
            t.name,
            fixed(s.overhead.ceilingMedian, 1),
            fixed(median(own.flatMap((c) => ceilingFigureOf(c)?.senderCpuMs ?? [])), 0),
            result(own),
          ]
        : [
            t.name,
            fixed(s.overhead.ceilingMedian, 1),
            fixed(s.overhead.oursMedian, 1),
            percentText(s.overhead.overhead),
            range(s.overhead),
            fixed(s.overheadUnverified?.oursMedian, 1),
            percentText(s.overheadUnverified?.overhead ?? null),
            medianOfCells(own, (x) => x.cost.transmitter?.cpuMsPerImage),
            medianOfCells(own, (x) => x.cost.receiver?.cpuMsPerImage),
            result(own),
          ];
    });
  const small = (): string[][] =>
    plan.ceilingTransports.map((t) => {
      const s = of(t.name, 'small');
      const own = ownCells(t.name, 'small');
      return ceilingOnly
        ? [t.name, fixed(s.overhead.ceilingMedian, 0), result(own)]
        : [
            t.name,
            fixed(s.overhead.ceilingMedian, 0),
            fixed(s.overhead.oursMedian, 0),
            percentText(s.overhead.overhead),
            range(s.overhead),
            result(own),
          ];
    });
  const latency = (): string[][] =>
    plan.ceilingTransports.map((t) => {
      const s = of(t.name, 'latency');
      const own = ownCells(t.name, 'latency');
      const ceilingP50 = fixed(median(own.flatMap((c) => ceilingFigureOf(c)?.rttP50Ms ?? [])), 3);
      return ceilingOnly
        ? [t.name, ceilingP50, result(own)]
        : [
            t.name,
            ceilingP50,
            medianOfCells(own, (x) => x.rtt?.p50Ms),
            percentText(s.overhead.overhead),
            range(s.overhead),
            medianOfCells(own, (x) => x.latency?.p50Ms),
            result(own),
          ];
    });
  const shapeText = (shape: CeilingShape): string =>
    `${formatSize(shape.bytes)} × ${shape.count.toLocaleString('en-US')} ` +
    `after ${shape.warmup.toLocaleString('en-US')} untimed (all acknowledged before the first timed one), ` +
    `WINDOW=${shape.window}`;
  const tables: Record<ShapeName, (shape: CeilingShape) => string[]> = {
    large: (shape) => [
      '',
      `Large: ${shapeText(shape)}` +
        (ceilingOnly
          ? ''
          : '; then the suite again with VERIFY=false (the ceiling verifies nothing). CPU: ms per image, each side') +
        `.`,
      ceilingOnly
        ? renderTable(['Transport', 'ceiling MB/s', 'ceiling sender CPU ms', 'Result'], large())
        : renderTable(
            [
              'Transport',
              'ceiling MB/s',
              'ours MB/s',
              'overhead',
              'overhead range',
              'ours unverified MB/s',
              'overhead unverified',
              'TX CPU',
              'RX CPU',
              'Result',
            ],
            large(),
          ),
    ],
    small: (shape) => [
      '',
      `Small: ${shapeText(shape)}: images per second (per-message cost).`,
      ceilingOnly
        ? renderTable(['Transport', 'ceiling images/s', 'Result'], small())
        : renderTable(
            ['Transport', 'ceiling images/s', 'ours images/s', 'overhead', 'overhead range', 'Result'],
            small(),
          ),
    ],
    latency: (shape) => [
      '',
      `Latency: ${shapeText(shape)}: the round trip (stamp → ack) p50` +
        (ceilingOnly
          ? ''
          : '; overhead = 1 − median ceiling ÷ median ours (the share of our round trip the library alone would ' +
            'not spend); one-way p50 beside it') +
        `.`,
      ceilingOnly
        ? renderTable(['Transport', 'ceiling RTT p50 ms', 'Result'], latency())
        : renderTable(
            [
              'Transport',
              'ceiling RTT p50 ms',
              'ours RTT p50 ms',
              'overhead',
              'overhead range',
              'ours one-way p50 ms',
              'Result',
            ],
            latency(),
          ),
    ],
  };
  return [
    ceilingOnly
      ? `Ceiling clients only (--ceiling-only): each library's thinnest correct sender and receiver ` +
        `(scripts/ceiling/), two processes; ${plan.ceilingRounds} rounds, the transports' order rotated; medians of ` +
        `the rounds.${plan.indicativeNote}`
      : `Ceiling: each suite run followed in the same minute by its library's ceiling client (scripts/ceiling/: ` +
        `the thinnest correct sender and receiver of the same library, the same images, WINDOW, ack and write ` +
        `calls, no verification; its span from the first timed send to the last timed arrival, as the suite's), ` +
        `two processes each; ${plan.ceilingRounds} rounds, the transports' order rotated; medians of the ` +
        `rounds.${plan.indicativeNote} Harness overhead = 1 − median ours ÷ median ceiling, from the medians shown; ` +
        `its range: each round's own pair's overhead, least to most. Each figure's distribution over the rounds ` +
        `(min, quartiles, max) is in results.json.`,
    ...plan.ceilingShapes.flatMap((shape) => tables[shape.name](shape)),
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
