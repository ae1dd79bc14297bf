import { errorMessage } from '../../services/core/errors.js';
import type { HostFacts } from '../../services/core/report/report.js';
import type { SectionResult } from '../../services/core/model/section.js';
import type { LocalServer } from '../../services/transports/contract.js';
import type { CeilingFigures } from '../ceiling/drive.js';
import { runCeiling } from '../lib/ceiling-run.js';
import { summarizeOverhead, summarizeTimeOverhead, type FigurePair } from '../lib/overhead.js';
import type { BenchChart } from '../lib/sweep-page.js';
import { ceilingFigureOf, type CeilingCell, type CeilingSummary } from './ceiling-model.js';
import { ceilingCharts, ceilingLines, loopbackLines } from './ceiling-tables.js';
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

/**
 * The ceiling part: every round, each transport and shape's suite run beside its ceiling client's; its tables, its
 * charts, and the receiver's host.
 */
export async function ceiling(
  plan: BenchPlan,
  ceilingOnly: boolean,
): Promise<{
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
  const measuresLoopback = plan.ceilingShapes.some((shape) => shape.name === 'large');
  // The host's own noise: a fixed CPU task timed before each round.
  const hostTaskMs: number[] = [];
  let host: HostFacts | undefined;
  const brokers = await startCeilingBrokers(plan);
  try {
    for (let round = 1; round <= plan.ceilingRounds; round++) {
      hostTaskMs.push(timeHostTask());
      if (measuresLoopback) {
        process.stderr.write(`bench: the loopback's own ceiling (node:net pair, iperf3), round ${round} ...\n`);
        loopback.push(await measureLoopback());
      }
      for (const transport of rotated(plan.ceilingTransports, round - 1)) {
        for (const shape of plan.ceilingShapes) {
          const env = {
            TRANSPORTS: transport.name,
            IMAGE_SIZE: String(shape.bytes),
            IMAGE_COUNT: String(shape.count),
            WARMUP: String(shape.warmup),
            WINDOW: String(shape.window),
            REPEAT: '1',
          };
          // Suite, then its ceiling, then (large) the suite unverified: interleaved, so drift hits both alike.
          const cell = ceilingOnly
            ? undefined
            : await runSuite(plan.transportNames, `ceiling ${transport.name}, ${shape.name}, round ${round}`, env);
          process.stderr.write(`bench: ${transport.name} ceiling client, ${shape.name}, round ${round} ...\n`);
          const figures: CeilingCell['ceiling'] = await runCeiling({
            transport: transport.name,
            bytes: shape.bytes,
            count: shape.count,
            window: shape.window,
            warmup: shape.warmup,
            brokerUrl: brokers.urls.get(transport.name),
            timeoutMs: CEILING_TIMEOUT_MS,
          }).catch((err: unknown) => ({ failed: errorMessage(err) }));
          const unverified =
            shape.unverified && !ceilingOnly
              ? await runSuite(
                  plan.transportNames,
                  `ceiling ${transport.name}, ${shape.name}, round ${round}, VERIFY=false`,
                  {
                    ...env,
                    VERIFY: 'false',
                  },
                )
              : undefined;
          host ??= cell?.report.run.hosts.receiver;
          cells.push({
            transport: transport.name,
            shape: shape.name,
            round,
            ours: cell && medianSection(cell.report, transport.name),
            oursUnverified: unverified && medianSection(unverified.report, transport.name),
            ceiling: figures,
          });
        }
      }
    }
  } finally {
    await brokers.close();
  }
  const summary = summarizeCeiling(plan, cells);
  return {
    cells,
    summary,
    host,
    loopback,
    hostTaskMs,
    lines: [
      ...ceilingLines(plan, cells, summary, ceilingOnly),
      ...loopbackLines(plan, summary, loopback),
      '',
      ...hostNoiseLines(hostTaskMs),
    ],
    charts: ceilingCharts(plan, summary, ceilingOnly),
  };
}
