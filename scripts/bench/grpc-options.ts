import { errorMessage } from '../../services/core/errors.js';
import { formatSize } from '../../services/core/config/size.js';
import { renderTable } from '../../services/core/report/text/format.js';
import type { CeilingFigures } from '../ceiling/drive.js';
import { GRPC_VARIANT_ENV, type GrpcCeilingVariant } from '../../services/transports/kit/ceiling-grpc.js';
import { runCeiling } from '../lib/ceiling-run.js';
import { percentText, summarizeOverhead, type Distribution, type MedianInterval } from '../lib/overhead.js';
import type { CeilingShape } from './ceiling-model.js';
import { halfWidthText } from './ceiling-tables.js';
import { fixed, median } from './format.js';
import { hostNoiseLines, timeHostTask } from './host-noise.js';
import type { BenchPlan } from './options.js';
import { rotated } from './suite.js';

// `npm run bench -- grpc-options`: which of grpc-js's settings that bear on large messages move the grpc pair's
// figures (issue 34, part 3). The grpc ceiling pair (scripts/ceiling/grpc.ts: the grpc transport's library, options
// and calls, without the harness, so a setting's effect is not diluted by it) runs with each variant in turn, the
// variants' order rotated each round, at 533 KiB × WINDOW=16 (MB/s) and 1 KB × WINDOW=256 (images/s). Each variant
// is held against the reference (the transport's settings) of the same round, and its change gets the ceiling
// tables' statistics: the change of the medians, the 95 % interval of the median of the rounds' own changes.

const MIB = 1024 * 1024;
/** Bound on one run, both processes' start included. */
const RUN_TIMEOUT_MS = 120_000;
/** The shapes this part measures, of the ceiling's: the window-bound one and the per-message one. */
const PART_SHAPES: readonly CeilingShape['name'][] = ['large', 'small'];

/** One setting tried: its name in the tables, what it changes, and the change. */
export interface GrpcOptionsVariant {
  name: string;
  change: string;
  variant: GrpcCeilingVariant;
}

/** The reference's name: the pair with the transport's settings, which every other variant is held against. */
export const REFERENCE = 'reference';

/** The variants, the reference first; each differs from it in one thing. */
export const GRPC_VARIANTS: readonly GrpcOptionsVariant[] = [
  {
    name: REFERENCE,
    change:
      "the grpc transport's settings: client grpc-node.flow_control_window 16 MiB, grpc.enable_retries 0, message " +
      "limits fitted to the image on both sides; the server's HTTP/2 receive windows opened on each connection " +
      "(through grpc-js's private http2Servers); writes without waiting",
    variant: {},
  },
  {
    name: 'server window 64 KiB',
    change:
      "the server's receive windows left at HTTP/2's 65,535 B, as grpc-js 1.14 ships (no option of its opens them; " +
      'grpc/grpc-node PR #3058 would, from grpc-node.flow_control_window)',
    variant: { serverWindowBytes: 65_535 },
  },
  {
    name: 'server window 16 MiB',
    change: "the server's receive windows 16 MiB rather than the largest HTTP/2 allows",
    variant: { serverWindowBytes: 16 * MIB },
  },
  {
    name: 'client window 64 KiB',
    change: "client grpc-node.flow_control_window 65,535 B (Node's default, as before the transport set it)",
    variant: { client: { 'grpc-node.flow_control_window': 65_535 } },
  },
  {
    name: 'client window 1 MiB',
    change: 'client grpc-node.flow_control_window 1 MiB',
    variant: { client: { 'grpc-node.flow_control_window': MIB } },
  },
  {
    name: 'client window 64 MiB',
    change: 'client grpc-node.flow_control_window 64 MiB',
    variant: { client: { 'grpc-node.flow_control_window': 64 * MIB } },
  },
  {
    name: 'server frame 16 MiB',
    change: 'the server sends SETTINGS maxFrameSize 16 MiB − 1: the client may send DATA frames that large',
    variant: { serverSettings: { maxFrameSize: 16 * MIB - 1 } },
  },
  {
    name: 'retries on',
    change: "client grpc.enable_retries 1 (grpc-js's default: transparent retries, the call buffered until committed)",
    variant: { client: { 'grpc.enable_retries': 1 } },
  },
  {
    name: 'no retry buffer',
    change:
      'client grpc.per_rpc_retry_buffer_size 0: the call commits at its first message, not once 1 MiB of messages ' +
      'is buffered (grpc-js buffers them even with retries off)',
    variant: { client: { 'grpc.per_rpc_retry_buffer_size': 0 } },
  },
  {
    name: 'limits unlimited',
    change: 'grpc.max_send_message_length and grpc.max_receive_message_length −1 (no limit) on both sides',
    variant: {
      client: { 'grpc.max_send_message_length': -1, 'grpc.max_receive_message_length': -1 },
      server: { 'grpc.max_send_message_length': -1, 'grpc.max_receive_message_length': -1 },
    },
  },
  {
    name: 'wait for drain',
    change: "the sender holds its next frames once call.write returns false, until 'drain', as the transport does",
    variant: { waitForDrain: true },
  },
];

/** One run: a variant at a shape in a round, and the pair's figures or why it failed. */
export interface GrpcOptionsCell {
  variant: string;
  shape: CeilingShape['name'];
  round: number;
  figures: CeilingFigures | { failed: string };
}

/** A variant at a shape over the rounds, against the reference. */
export interface GrpcOptionsSummary {
  variant: string;
  shape: CeilingShape['name'];
  figure: 'MB/s' | 'images/s';
  /** The variant's figure over the rounds (its median, quartiles, range). */
  distribution: Distribution | null;
  /** Median variant ÷ median reference − 1: positive when the variant is faster; null for the reference itself. */
  change: number | null;
  /** 95 % confidence interval of the median of each round's own change (null under 6 paired rounds). */
  changeCI: MedianInterval | null;
  /** Rounds where both the variant and the reference ran. */
  pairedRounds: number;
  /** CPU ms per image, median over the rounds: the sending process's and the receiving one's. */
  txCpuMsPerImage: number | null;
  rxCpuMsPerImage: number | null;
  failedRuns: number;
}

const figuresOf = (cell: GrpcOptionsCell | undefined): CeilingFigures | undefined =>
  cell === undefined || 'failed' in cell.figures ? undefined : cell.figures;

/**
 * Each variant's figure at each shape against the reference of the same round: the change of the medians and the
 * interval of the rounds' own changes (summarizeOverhead's, with the variant as "ours" and the reference as the
 * "ceiling", so the change is minus its overhead).
 */
export function summarizeGrpcOptions(
  variants: readonly string[],
  shapes: readonly CeilingShape['name'][],
  cells: readonly GrpcOptionsCell[],
): GrpcOptionsSummary[] {
  return shapes.flatMap((shape) => {
    const figure = shape === 'large' ? 'MB/s' : 'images/s';
    const value = (f: CeilingFigures | undefined): number | null =>
      f === undefined ? null : shape === 'large' ? f.MBps : f.imagesPerSecond;
    const ofShape = cells.filter((c) => c.shape === shape);
    const rounds = [...new Set(ofShape.map((c) => c.round))];
    const at = (variant: string, round: number) => ofShape.find((c) => c.variant === variant && c.round === round);
    return variants.map((variant): GrpcOptionsSummary => {
      const own = ofShape.filter((c) => c.variant === variant);
      const summary = summarizeOverhead(
        rounds.map((round) => ({
          ours: value(figuresOf(at(variant, round))),
          ceiling: value(figuresOf(at(REFERENCE, round))),
        })),
      );
      const perImage = (cpu: (f: CeilingFigures) => number | null): number | null =>
        median(
          own.flatMap((c) => {
            const f = figuresOf(c);
            const ms = f === undefined ? null : cpu(f);
            return f === undefined || ms === null || f.count <= 0 ? [] : [ms / f.count];
          }),
        );
      const isReference = variant === REFERENCE;
      return {
        variant,
        shape,
        figure,
        distribution: summary.ours,
        change: isReference || summary.overhead === null ? null : -summary.overhead,
        changeCI:
          isReference || summary.pairCI === null
            ? null
            : { low: -summary.pairCI.high, high: -summary.pairCI.low, coverage: summary.pairCI.coverage },
        pairedRounds: summary.pairedRounds,
        txCpuMsPerImage: perImage((f) => f.senderCpuMs),
        rxCpuMsPerImage: perImage((f) => f.receiverCpuMs),
        failedRuns: own.filter((c) => 'failed' in c.figures).length,
      };
    });
  });
}

/** A change as a signed whole percent, "+12 %", "−3 %", "0 %"; "-" without one. */
export function changeText(change: number | null): string {
  if (change === null) return '-';
  return `${Math.round(change * 100) > 0 ? '+' : ''}${percentText(change)}`;
}

/** Its interval, "+4 % – +19 %"; "-" without one. */
export function changeIntervalText(ci: MedianInterval | null): string {
  return ci === null ? '-' : `${changeText(ci.low)} – ${changeText(ci.high)}`;
}

/** The part's tables: the variants and what each changes, then per shape each one's median and change. */
export function grpcOptionsLines(
  plan: Pick<BenchPlan, 'ceilingRounds' | 'indicativeNote'>,
  variants: readonly GrpcOptionsVariant[],
  shapes: readonly CeilingShape[],
  summary: readonly GrpcOptionsSummary[],
  cells: readonly GrpcOptionsCell[],
): string[] {
  const table = (shape: CeilingShape): string[] => {
    const rows = variants.map((v) => {
      const s = summary.find((each) => each.variant === v.name && each.shape === shape.name);
      const failure = cells.find((c) => c.variant === v.name && c.shape === shape.name && 'failed' in c.figures);
      return [
        v.name,
        fixed(s?.distribution?.median, shape.name === 'large' ? 1 : 0),
        v.name === REFERENCE ? '(reference)' : changeText(s?.change ?? null),
        changeIntervalText(s?.changeCI ?? null),
        halfWidthText(s?.changeCI ?? null, s?.pairedRounds),
        fixed(s?.txCpuMsPerImage, 3),
        fixed(s?.rxCpuMsPerImage, 3),
        s === undefined || s.failedRuns === 0
          ? 'ok'
          : `${s.failedRuns} FAILED: ${(failure?.figures as { failed: string } | undefined)?.failed.slice(0, 100)}`,
      ];
    });
    const figure = shape.name === 'large' ? 'MB/s' : 'images/s';
    return [
      '',
      `${formatSize(shape.bytes)} × ${shape.count.toLocaleString('en-US')} after ` +
        `${shape.warmup.toLocaleString('en-US')} untimed, WINDOW=${shape.window}: ${figure}.`,
      renderTable(['Variant', figure, 'change', '95 % CI', '±', 'TX CPU', 'RX CPU', 'Result'], rows),
    ];
  };
  return [
    `gRPC options: the grpc ceiling pair (scripts/ceiling/grpc.ts, @grpc/grpc-js as the grpc transport uses it, two ` +
      `processes) with one change at a time; ${plan.ceilingRounds} rounds, the variants' order rotated each round; ` +
      `medians of the rounds.${plan.indicativeNote} Change = median variant ÷ median reference − 1 (positive: ` +
      `faster). 95 % CI: the distribution-free interval of the median of the rounds' own changes (each variant ÷ ` +
      `the reference of its round; needs 6 rounds or more); ± its half-width in points, marked wide over 5. CPU: ` +
      `ms per image, sending and receiving process, over the timed images.`,
    ...variants.map((v) => `  ${v.name}: ${v.change}.`),
    ...shapes.flatMap(table),
  ];
}

/**
 * The grpc-options part: every round, each variant (order rotated) at each shape, then the summary and its tables.
 * `images`: timed images per run instead of the shape's count (a smoke run), the untimed ones capped to it.
 */
export async function grpcOptions(
  plan: BenchPlan,
  images: number | undefined,
): Promise<{
  lines: string[];
  cells: GrpcOptionsCell[];
  summary: GrpcOptionsSummary[];
  shapes: CeilingShape[];
  hostTaskMs: number[];
}> {
  const shapes = plan.ceilingShapes
    .filter((shape) => PART_SHAPES.includes(shape.name))
    .map((shape) =>
      images === undefined ? shape : { ...shape, count: images, warmup: Math.min(shape.warmup, images) },
    );
  const cells: GrpcOptionsCell[] = [];
  const hostTaskMs: number[] = [];
  if (shapes.length === 0)
    return {
      lines: [
        `gRPC options: skipped, it measures the ${PART_SHAPES.join(' and ')} shapes and --shapes= named neither.`,
      ],
      cells,
      summary: [],
      shapes,
      hostTaskMs,
    };
  for (let round = 1; round <= plan.ceilingRounds; round++) {
    hostTaskMs.push(timeHostTask());
    for (const variant of rotated(GRPC_VARIANTS, round - 1)) {
      for (const shape of shapes) {
        process.stderr.write(`bench: grpc options, ${variant.name}, ${shape.name}, round ${round} ...\n`);
        const figures: GrpcOptionsCell['figures'] = await runCeiling({
          transport: 'grpc',
          bytes: shape.bytes,
          count: shape.count,
          window: shape.window,
          warmup: shape.warmup,
          brokerUrl: undefined,
          timeoutMs: RUN_TIMEOUT_MS,
          env: { [GRPC_VARIANT_ENV]: JSON.stringify(variant.variant) },
        }).catch((err: unknown) => ({ failed: errorMessage(err) }));
        cells.push({ variant: variant.name, shape: shape.name, round, figures });
      }
    }
  }
  const names = GRPC_VARIANTS.map((v) => v.name);
  const summary = summarizeGrpcOptions(
    names,
    shapes.map((s) => s.name),
    cells,
  );
  return {
    cells,
    summary,
    shapes,
    hostTaskMs,
    lines: [...grpcOptionsLines(plan, GRPC_VARIANTS, shapes, summary, cells), '', ...hostNoiseLines(hostTaskMs)],
  };
}
