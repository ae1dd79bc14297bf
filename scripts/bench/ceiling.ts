import { errorMessage } from '../../services/core/errors.js';
import type { HostFacts } from '../../services/core/report/report.js';
import type { SectionResult } from '../../services/core/model/section.js';
import type { LocalServer, Transport } from '../../services/transports/contract.js';
import type { CeilingFigures } from '../ceiling/drive.js';
import { runCeiling } from '../lib/ceiling-run.js';
import { indicativeNote, summarizeOverhead, summarizeTimeOverhead, type FigurePair } from '../lib/overhead.js';
import type { BenchChart } from '../lib/sweep-page.js';
import { ceilingFigureOf, type CeilingCell, type CeilingShape, type CeilingSummary } from './ceiling-model.js';
import { ceilingCharts, ceilingLines, loopbackLines } from './ceiling-tables.js';
import { chooseTableLines } from './choose-table.js';
import { hostNoiseLines, timeHostTask } from './host-noise.js';
import { measureLoopback, type LoopbackFigures } from './loopback.js';
import type { BenchPlan } from './plan.js';
import { medianSection, rotated, runSuite } from './suite.js';

// The ceiling part: each suite run beside its library's ceiling client (scripts/ceiling/), round after round.

/** Bound on one ceiling run, both processes' start included. */
const CEILING_TIMEOUT_MS = 120_000;

/**
 * Each transport's overhead per shape, from the rounds' pairs (latency: ours over ceiling of the RTT p50, as "overhead"
 * 1 − ceiling ÷ ours).
 */
function summarizeCeiling(plan: BenchPlan, cells: readonly CeilingCell[]): CeilingSummary[] {
  return plan.ceilingTransports.flatMap((t) =>
    plan.ceilingShapes.map((shape): CeilingSummary => {
      const own = cells.filter((c) => c.transport === t.name && c.shape === shape.name);
      const pairsOf = (
        ours: (c: CeilingCell) => number | null | undefined,
        ceiling: (f: CeilingFigures) => number,
      ): FigurePair[] =>
        own.map((c) => {
          const figures = ceilingFigureOf(c);
          return { ours: ours(c) ?? null, ceiling: figures === undefined ? null : ceiling(figures) };
        });
      if (shape.name === 'latency') {
        // A round trip is better lower: the overhead is the share of ours the library would not have spent.
        return {
          transport: t.name,
          shape: shape.name,
          figure: 'RTT p50 ms',
          overhead: summarizeTimeOverhead(
            pairsOf(
              (c) => c.ours?.rtt?.p50Ms,
              (f) => f.rttP50Ms,
            ),
          ),
          overheadUnverified: null,
        };
      }
      const throughput =
        shape.name === 'large'
          ? (s: SectionResult | undefined) => s?.throughputMBps
          : (s: SectionResult | undefined) => s?.imagesPerSecond;
      const ceilingThroughput =
        shape.name === 'large' ? (f: CeilingFigures) => f.MBps : (f: CeilingFigures) => f.imagesPerSecond;
      return {
        transport: t.name,
        shape: shape.name,
        figure: shape.name === 'large' ? 'MB/s' : 'images/s',
        overhead: summarizeOverhead(pairsOf((c) => throughput(c.ours), ceilingThroughput)),
        overheadUnverified: shape.unverified
          ? summarizeOverhead(pairsOf((c) => throughput(c.oursUnverified), ceilingThroughput))
          : null,
      };
    }),
  );
}

/**
 * The brokers the ceiling clients go through: one private server per command (redis-server, nats-server) for the whole
 * part.
 */
async function startCeilingBrokers(plan: BenchPlan): Promise<{ urls: Map<string, string>; close(): Promise<void> }> {
  const urls = new Map<string, string>();
  const servers: LocalServer[] = [];
  const byCommand = new Map<string, string>();
  try {
    for (const transport of plan.ceilingTransports) {
      const local = transport.deployment.localServer;
      if (!local) continue;
      let url = byCommand.get(local.command);
      if (url === undefined) {
        const server = await local.start();
        servers.push(server);
        url = server.url;
        byCommand.set(local.command, url);
      }
      urls.set(transport.name, url);
    }
  } catch (err) {
    await Promise.all(servers.map((s) => s.close()));
    throw err;
  }
  return { urls, close: async () => void (await Promise.all(servers.map((s) => s.close()))) };
}

/** One round of one shape: which transports, in what order, and where the ceiling clients' brokers are. */
interface RoundInput {
  plan: BenchPlan;
  shape: CeilingShape;
  order: readonly Transport[];
  round: number;
  brokerUrls: ReadonlyMap<string, string>;
  ceilingOnly: boolean;
}

/**
 * One shape's round: the suite over every transport in `order`, then each one's ceiling client in that order, then
 * (large) the suite again with VERIFY=false; a cell per transport.
 */
async function ceilingRound(input: RoundInput): Promise<{ cells: CeilingCell[]; host: HostFacts | undefined }> {
  const { plan, shape, order, round, ceilingOnly } = input;
  const env = {
    TRANSPORTS: order.map((t) => t.name).join(','),
    IMAGE_SIZE: String(shape.bytes),
    IMAGE_COUNT: String(shape.count),
    WARMUP: String(shape.warmup),
    WINDOW: String(shape.window),
    REPEAT: '1',
  };
  const what =
    `ceiling ${shape.name}, round ${round}, ` + (order.length === 1 ? order[0]!.name : `${order.length} transports`);
  const suite = ceilingOnly ? undefined : await runSuite(plan.transportNames, what, env);
  const figures: CeilingCell['ceiling'][] = [];
  for (const transport of order) {
    process.stderr.write(`bench: ${transport.name} ceiling client, ${shape.name}, round ${round} ...\n`);
    figures.push(
      await runCeiling({
        transport: transport.name,
        bytes: shape.bytes,
        count: shape.count,
        window: shape.window,
        warmup: shape.warmup,
        brokerUrl: input.brokerUrls.get(transport.name),
        timeoutMs: CEILING_TIMEOUT_MS,
      }).catch((err: unknown) => ({ failed: errorMessage(err) })),
    );
  }
  const unverified =
    shape.unverified && plan.ceilingUnverified && !ceilingOnly
      ? await runSuite(plan.transportNames, `${what}, VERIFY=false`, { ...env, VERIFY: 'false' })
      : undefined;
  return {
    host: suite?.report.run.hosts.receiver,
    cells: order.map((transport, i) => ({
      transport: transport.name,
      shape: shape.name,
      round,
      ours: suite && medianSection(suite.report, transport.name),
      oursUnverified: unverified && medianSection(unverified.report, transport.name),
      ceiling: figures[i]!,
    })),
  };
}

/**
 * The ceiling part: round after round while the plan's rounds and budget allow, each shape's suite run over every
 * transport followed by each one's ceiling client; its tables, its charts, and the receiver's host.
 */
export async function ceiling(
  planned: BenchPlan,
  ceilingOnly: boolean,
): Promise<{
  /** The plan as it ran: its rounds are those that fit the budget. */
  plan: BenchPlan;
  lines: string[];
  cells: CeilingCell[];
  summary: CeilingSummary[];
  charts: BenchChart[];
  host: HostFacts | undefined;
  loopback: LoopbackFigures[];
  hostTaskMs: number[];
}> {
  const cells: CeilingCell[] = [];
  // The loopback's own ceiling, once a round before its transports (the large shape's MB/s are held against it).
  const loopback: LoopbackFigures[] = [];
  const measuresLoopback = planned.ceilingShapes.some((shape) => shape.name === 'large');
  // The host's own noise: a fixed CPU task timed before each round.
  const hostTaskMs: number[] = [];
  let host: HostFacts | undefined;
  const brokers = await startCeilingBrokers(planned);
  const startedAt = Date.now();
  let longestRoundMs = 0;
  let rounds = 0;
  try {
    for (let round = 1; round <= planned.ceilingRounds; round++) {
      const roundStartedAt = Date.now();
      if (round > 1 && !withinBudget(planned, roundStartedAt - startedAt, longestRoundMs)) break;
      hostTaskMs.push(timeHostTask());
      if (measuresLoopback) {
        process.stderr.write(`bench: the loopback's own ceiling (node:net pair, iperf3), round ${round} ...\n`);
        loopback.push(await measureLoopback());
      }
      // One suite run per shape carries every transport, in this round's rotated order (one start, one set of private
      // brokers, instead of one per transport: what lets every transport and shape fit in one run); then each ceiling
      // client in the same order, so each lags its suite section by about one suite run, alike for all.
      const order = rotated(planned.ceilingTransports, round - 1);
      for (const shape of planned.ceilingShapes) {
        const made = await ceilingRound({ plan: planned, shape, order, round, brokerUrls: brokers.urls, ceilingOnly });
        cells.push(...made.cells);
        host ??= made.host;
      }
      rounds = round;
      longestRoundMs = Math.max(longestRoundMs, Date.now() - roundStartedAt);
    }
  } finally {
    await brokers.close();
  }
  const ran: BenchPlan = { ...planned, ceilingRounds: rounds, indicativeNote: indicativeNote(rounds) };
  return { ...ceilingResults(ran, cells, ceilingOnly, loopback, hostTaskMs), plan: ran, host, loopback, hostTaskMs };
}

/** Whether one more round, as long as the longest so far, ends within the plan's budget after `spentMs`. */
export function withinBudget(plan: BenchPlan, spentMs: number, longestRoundMs: number): boolean {
  if (plan.ceilingBudgetMs === null) return true;
  const fits = spentMs + longestRoundMs <= plan.ceilingBudgetMs;
  if (!fits)
    process.stderr.write(
      `bench: no more ceiling rounds: another (the longest so far took ${(longestRoundMs / 1000).toFixed(0)} s) ` +
        `would end past the budget of ${(plan.ceilingBudgetMs / 60_000).toFixed(0)} min (--minutes=)\n`,
    );
  return fits;
}

/** The summaries, tables, charts and "Which to choose" of the cells of a ceiling part that ran as `plan` says. */
function ceilingResults(
  plan: BenchPlan,
  cells: CeilingCell[],
  ceilingOnly: boolean,
  loopback: readonly LoopbackFigures[],
  hostTaskMs: readonly number[],
): { cells: CeilingCell[]; summary: CeilingSummary[]; lines: string[]; charts: BenchChart[] } {
  const summary = summarizeCeiling(plan, cells);
  return {
    cells,
    summary,
    lines: [
      ...ceilingLines(plan, cells, summary, ceilingOnly),
      ...loopbackLines(plan, summary, loopback),
      ...(ceilingOnly ? [] : chooseTableLines(plan, cells, summary)),
      '',
      ...hostNoiseLines(hostTaskMs),
    ],
    charts: ceilingCharts(plan, summary, ceilingOnly),
  };
}
