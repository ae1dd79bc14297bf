import { renderTable } from '../../services/core/report/text/format.js';
import { fixed, median } from './format.js';
import type { BenchPlan } from './plan.js';
import { medianSection, rotated, runSuite, type Cell } from './suite.js';

// The steady part: the default warm-up (WARMUP=auto) checked by position, run length and repeats.

/**
 * The steady part: default settings (the asset, WINDOW=1, WARMUP=auto). Position: every rotation
 * of TRANSPORTS, so each transport runs first and last once per round. Size: interleaved pairs of
 * a default-sized run and a long one. Stability: MB/s spread across repeats per IMAGE_COUNT.
 */
const STEADY = {
  positionRounds: 3,
  defaultCount: 10,
  longCount: 1000,
  sizePairs: 5,
  tolerance: 0.2,
  oldWarmup: '2',
  stabilityCounts: [10, 30, 100, 300, 1000],
  stabilityRepeat: 3,
};

const p50Of = (cell: Cell, transport: string): number | undefined =>
  medianSection(cell.report, transport)?.latency?.p50Ms;

/** The steady part: position, default-sized vs long, and MB/s spread by IMAGE_COUNT, with WARMUP=auto. */
export async function steady(plan: BenchPlan): Promise<{ lines: string[]; cells: Cell[] }> {
  const cells: Cell[] = [];
  const positionRows = await positionCheck(plan, cells);
  const sizeRows = await sizeCheck(plan, cells);
  const stabilityRows = await stabilityCheck(plan, cells);
  return {
    cells,
    lines: [
      `Steady figures by default (the asset, WINDOW=1, WARMUP=auto). Position: p50 one-way ms of ` +
        `a ${STEADY.defaultCount}-image run when the transport runs first vs last (every rotation of ` +
        `TRANSPORTS, ${STEADY.positionRounds} rounds; ok when first ÷ last is within ${STEADY.tolerance * 100} ` +
        `%):`,
      renderTable(
        ['Transport', 'p50 first', 'p50 last', 'first, each', 'last, each', 'first ÷ last', 'Result'],
        positionRows,
        false,
      ),
      '',
      `Default-sized vs long: p50 one-way ms of ${STEADY.defaultCount} images vs ${STEADY.longCount} ` +
        `images, ${STEADY.sizePairs} interleaved rounds; ok when the median ratio is ` +
        `within ${STEADY.tolerance * 100} %. For contrast, ${STEADY.defaultCount} images with the old default ` +
        `WARMUP=${STEADY.oldWarmup}:`,
      renderTable(
        [
          'Transport',
          `p50 ×${STEADY.defaultCount}`,
          `p50 ×${STEADY.longCount}`,
          'ratio per round',
          'median ratio',
          `p50 ×${STEADY.defaultCount} WARMUP=${STEADY.oldWarmup}`,
          'its median ratio',
          'Result',
        ],
        sizeRows,
        false,
      ),
      '',
      `MB/s spread across ${STEADY.stabilityRepeat} interleaved repeats ((max − min) ÷ 2 ÷ median) by IMAGE_COUNT:`,
      renderTable(['Transport', ...STEADY.stabilityCounts.map((c) => `×${c}`)], stabilityRows, false),
    ],
  };
}

/** Position: p50 of each transport when it ran first and when it ran last in its process pair; its runs to `cells`. */
async function positionCheck(plan: BenchPlan, cells: Cell[]): Promise<string[][]> {
  const first = new Map<string, number[]>(plan.transportNames.map((t) => [t, []]));
  const last = new Map<string, number[]>(plan.transportNames.map((t) => [t, []]));
  for (let round = 1; round <= STEADY.positionRounds; round++) {
    for (let shift = 0; shift < plan.transportNames.length; shift++) {
      const order = rotated(plan.transportNames, shift);
      const cell = await runSuite(plan.transportNames, `steady: position, round ${round}, ${order.join(',')}`, {
        TRANSPORTS: order.join(','),
        REPEAT: '1',
      });
      cells.push(cell);
      const head = p50Of(cell, order[0]!);
      const tail = p50Of(cell, order[order.length - 1]!);
      if (head !== undefined) first.get(order[0]!)!.push(head);
      if (tail !== undefined) last.get(order[order.length - 1]!)!.push(tail);
    }
  }
  return plan.transportNames.map((t) => {
    const f = median(first.get(t)!);
    const l = median(last.get(t)!);
    const ratio = f !== null && l !== null ? f / l : null;
    return [
      t,
      fixed(f, 3),
      fixed(l, 3),
      first
        .get(t)!
        .map((v) => v.toFixed(3))
        .join(' '),
      last
        .get(t)!
        .map((v) => v.toFixed(3))
        .join(' '),
      fixed(ratio, 2),
      ratio === null ? '-' : Math.abs(ratio - 1) <= STEADY.tolerance ? 'ok' : 'DIFFERS',
    ];
  });
}

/**
 * Size: a default-sized run's p50 against a long run's, in interleaved triples (order rotated), with the old default
 * warm-up (WARMUP=2) beside it for contrast; its runs to `cells`.
 */
async function sizeCheck(plan: BenchPlan, cells: Cell[]): Promise<string[][]> {
  const byRun = { short: 'default-sized', long: 'long', old: `default-sized, WARMUP=${STEADY.oldWarmup}` } as const;
  type RunKind = keyof typeof byRun;
  const p50s = new Map<string, Record<RunKind, number[]>>(
    plan.transportNames.map((t) => [t, { short: [], long: [], old: [] }]),
  );
  const ratios = new Map<string, { auto: number[]; old: number[] }>(
    plan.transportNames.map((t) => [t, { auto: [], old: [] }]),
  );
  const sizeEnv: Record<RunKind, Record<string, string>> = {
    short: { IMAGE_COUNT: String(STEADY.defaultCount), REPEAT: '1' },
    long: { IMAGE_COUNT: String(STEADY.longCount), REPEAT: '1' },
    old: { IMAGE_COUNT: String(STEADY.defaultCount), REPEAT: '1', WARMUP: STEADY.oldWarmup },
  };
  for (let pair = 1; pair <= STEADY.sizePairs; pair++) {
    const runs = {} as Record<RunKind, Cell>;
    for (const kind of rotated(['short', 'long', 'old'] as const, pair - 1)) {
      runs[kind] = await runSuite(
        plan.transportNames,
        `steady: ${byRun[kind]} (${sizeEnv[kind].IMAGE_COUNT} images), round ${pair}`,
        sizeEnv[kind],
      );
      cells.push(runs[kind]);
    }
    for (const t of plan.transportNames) {
      const [short, long, old] = (['short', 'long', 'old'] as const).map((kind) => p50Of(runs[kind], t));
      for (const [kind, value] of [
        ['short', short],
        ['long', long],
        ['old', old],
      ] as const)
        if (value !== undefined) p50s.get(t)![kind].push(value);
      if (short !== undefined && long !== undefined) ratios.get(t)!.auto.push(short / long);
      if (old !== undefined && long !== undefined) ratios.get(t)!.old.push(old / long);
    }
  }
  return plan.transportNames.map((t) => {
    const r = median(ratios.get(t)!.auto);
    const own = p50s.get(t)!;
    return [
      t,
      fixed(median(own.short), 3),
      fixed(median(own.long), 3),
      ratios
        .get(t)!
        .auto.map((v) => v.toFixed(2))
        .join(' '),
      fixed(r, 2),
      fixed(median(own.old), 3),
      fixed(median(ratios.get(t)!.old), 2),
      r === null ? '-' : Math.abs(r - 1) <= STEADY.tolerance ? 'ok' : 'FAILED',
    ];
  });
}

/** Stability: how far MB/s moves across repeats of one run, per IMAGE_COUNT; its runs to `cells`. */
async function stabilityCheck(plan: BenchPlan, cells: Cell[]): Promise<string[][]> {
  const stabilityCells: Cell[] = [];
  for (const count of STEADY.stabilityCounts) {
    const cell = await runSuite(plan.transportNames, `steady: MB/s spread at ${count} images`, {
      IMAGE_COUNT: String(count),
      REPEAT: String(STEADY.stabilityRepeat),
    });
    cells.push(cell);
    stabilityCells.push(cell);
  }
  return plan.transportNames.map((t) => [
    t,
    ...stabilityCells.map((cell) => {
      const summary = cell.report.transports.find((s) => s.transport === t);
      const range = summary?.spread.throughputMBps;
      const mid = medianSection(cell.report, t)?.throughputMBps;
      return range && mid ? `±${((100 * (range.max - range.min)) / 2 / mid).toFixed(0)} %` : '-';
    }),
  ]);
}
