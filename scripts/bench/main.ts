import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { HostFacts } from '../../services/core/report/report.js';
import { nodeDescription } from '../../services/core/report/wording.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { formatSize } from '../../services/core/config/size.js';
import { makeDirectories } from '../../services/shared/directories.js';
import { hostFacts } from '../../services/shared/host.js';
import { transportByName } from '../../services/transports/index.js';
import { reportLibraries } from '../../services/shared/report-assets.js';
import { MIN_CLAIM_ROUNDS } from '../lib/overhead.js';
import { renderSweepPage, type BenchChart } from '../lib/sweep-page.js';
import { soakArgs, type SoakOptions } from '../lib/soak.js';
import { runSoak } from '../lib/soak-run.js';
import { SHAPE_NAMES } from './ceiling-model.js';
import { ceiling } from './ceiling.js';
import { clientSweep, multiClientTransports } from './clients.js';
import { delaySweep } from './delay.js';
import { matrix } from './matrix.js';
import { grpcOptions } from './grpc-options.js';
import { capacity, CAPACITY_BOUNDS } from './capacity.js';
import { optionsFrom, PARTS, planFrom, type BenchOptions, type BenchPlan, type Part } from './options.js';
import { rateSweep } from './rate.js';
import { steady } from './steady.js';
import type { Cell } from './suite.js';
import { verifyCost } from './verify.js';

// `npm run bench [-- ceiling verify matrix steady clients rate] [--transports=a,b] [--ceiling-only]
// [--shapes=large,small,latency] [--rounds=N]`:
// the whole suite (`npm start`'s entry, so real processes and private servers), in six parts, all
// by default:
// - ceiling: every transport (or those --transports= names) in three shapes: per round and shape,
//   one suite run over all of them in the round's rotated order, then each one's library ceiling
//   client (its ceiling.ts: the thinnest correct sender and receiver of the same library) in that
//   order, so each lags its suite section alike: 533 KiB at WINDOW=16 (MB/s, the suite also
//   with VERIFY=false), 1 KB at WINDOW=256 (images/s) and 533 KiB one at a time (round trip), or
//   those --shapes= names; ten rounds (--rounds= lowers it, and the output then calls the medians
//   indicative) in rotated order; harness overhead = 1 − median ours ÷ median ceiling (a round
//   trip: 1 − median ceiling ÷ median ours), beside the 95 % confidence interval of the median of
//   each round's own overhead and, in results.json, that median, the least and most of them and
//   each figure's distribution over the rounds; with the large shape, each round
//   first measures the loopback's own ceiling (a node:net pair, and iperf3 when installed) and
//   every transport's MB/s is printed as a share of it; and each round first times a fixed CPU
//   task, whose spread is printed as the host's own noise. --ceiling-only runs the ceiling clients alone;
// - verify: the checksum candidates (xxHash64, XXH3-64, CRC32C) timed in this process at 1 KB and
//   533 KiB, then what VERIFY=false changes in TCP's and ZeroMQ's MB/s at WINDOW=16: five
//   interleaved pairs (on/off, then off/on, ...), the median of the five changes;
// - matrix: image size × WINDOW with three interleaved repeats, then linear assembly and flat memory;
// - steady: the default warm-up (WARMUP=auto) checked: a transport's p50 when it runs first vs
//   last, a default-sized run's p50 (10 images) against a 1,000-image run's, and how much MB/s
//   spreads across repeats at each IMAGE_COUNT;
// - clients: latency and per-client fairness against CLIENTS (1, 10, 50, 200), rounds interleaved;
// - rate: an open loop (RATE) from light load to past saturation: achieved rate, images dropped at
//   the sender, latency from the due time.
// And, only when named: grpc-options, the grpc ceiling pair with one grpc-js setting changed at a time against the
// transport's settings, in interleaved rounds (--rounds=, --shapes=large,small; --count= for a smoke run), MB/s at 533
// KiB × WINDOW=16 and images/s at 1 KB × WINDOW=256 with each change's 95 % interval (./grpc-options.ts); delay, each
// of grpc, grpc-connect, websocket and tcp (or those --transports= names) at 16 KiB and 533 KiB, WINDOW=1, with a relay
// in this process (scripts/lib/delay-relay.ts; no sch_netem needed) between the transmitter and the receiver's
// transport port adding 0 or --delay-ms= (2 by default) to each direction, interleaved over --rounds= (5 by default)
// with --delay-images= (200) per section: the one-way p50 at each, the time the delay added and that minus the delay,
// and issue 34's target for grpc-connect; soak, 1 KB images over TCP for 20 million images with both sides' RSS
// sampled, and a verdict on its growth (scripts/lib/soak.ts); a failed verdict exits 1; and capacity, per default
// transport (or those --transports= names) and image size (--sizes=, 533 KiB by default), the highest RATE the
// transport sustains (its section ok, not overloaded, send lag p99 within the deadline, at most
// --deadline-miss-percent= (1) of frames past --deadline-ms= (one frame interval) or undelivered), searched from 60 fps
// by doubling or halving then bisection, over --rounds= (5) rounds: its median with an order-statistics interval, and
// frame age p50/p99 and jitter p99 there and at 15, 30 and 60 fps below it (./capacity.ts). --out=<dir> writes the
// files there instead of bench/. Prints tables and writes bench/results-<date>.json, and its charts (each transport
// beside its ceiling, the two sweeps, the capacity table) in bench/charts-<date>.html. A benchmark, not a test: `npm
// test` never runs it. Each part is a file beside this one; this one reads the command line, runs the parts it names
// and writes their files.

/** What the parts run so far gave: the lines printed, results.json's record, the charts page's charts, the host. */
interface BenchOutput {
  lines: string[];
  record: Record<string, unknown>;
  charts: BenchChart[];
  /** The host the figures came from: the first part's that knows it. */
  host: HostFacts | undefined;
}

/** Reads the command line (exit 2 on a bad one), runs the parts it names, and prints and writes their results. */
async function main(args: readonly string[]): Promise<void> {
  const soak = soakArgs(args);
  const options = optionsFrom(soak.rest, soak.problems);
  const plan = planFrom(options);
  const parts = options.parts;
  const started = new Date();
  const narrowed =
    `${options.transports === undefined ? '' : `; transports: ${options.transports.join(', ')}`}` +
    (parts.includes('ceiling')
      ? `; ceiling: ${options.shapes.join(', ')}, ${plan.ceilingBudgetMs === null ? '' : 'up to '}` +
        (`${plan.ceilingRounds} rounds` +
          (plan.ceilingBudgetMs === null ? '' : ` within ${plan.ceilingBudgetMs / 60_000} min`)) +
        (plan.ceilingUnverified ? ', VERIFY=false pass' : '')
      : '') +
    (parts.includes('grpc-options') ? `; grpc-options: ${plan.ceilingRounds} rounds` : '') +
    (parts.includes('capacity') ? `; capacity: ${plan.capacityRounds} rounds` : '');
  const out: BenchOutput = {
    lines: [`image-transfer-bench benchmark, ${started.toISOString()} (parts: ${parts.join(', ')}${narrowed})`],
    record: { startedAt: started.toISOString(), parts, transports: options.transports ?? null },
    charts: [],
    host: undefined,
  };
  if (parts.includes('ceiling')) await runCeilingPart(options, plan, out);
  await runSuiteParts(parts, plan, out);
  await runNamedParts(options, plan, soak.options, out);
  await writeResults(options, started, out);
}

/**
 * A suite run's cell as results.json keeps it: per-second series and histograms stay out (each run's results.json has
 * them), every section's figures stay.
 */
function strip(cell: Cell) {
  return {
    name: cell.name,
    env: cell.env,
    seconds: cell.seconds,
    report: {
      ...cell.report,
      sections: cell.report.sections.map(({ series: _series, histograms: _histograms, ...rest }) => rest),
    },
  };
}

/** The ceiling part: every transport beside its library's ceiling client, in rounds. */
async function runCeilingPart(options: BenchOptions, planned: BenchPlan, out: BenchOutput): Promise<void> {
  const result = await ceiling(planned, options.ceilingOnly);
  const plan = result.plan;
  out.lines.push('', ...result.lines);
  const section = (result: SectionResult | undefined) =>
    result && (({ series: _series, histograms: _histograms, ...rest }) => rest)(result);
  out.record.ceiling = {
    ceilingOnly: options.ceilingOnly,
    shapes: plan.ceilingShapes,
    rounds: plan.ceilingRounds,
    budgetMinutes: plan.ceilingBudgetMs === null ? null : plan.ceilingBudgetMs / 60_000,
    unverified: plan.ceilingUnverified,
    // Fewer rounds than a claim needs: the medians are indicative, and say so here too.
    indicative: plan.ceilingRounds < MIN_CLAIM_ROUNDS,
    // Per transport and shape: the medians compared, the harness overhead they give (1 − median ours ÷ median
    // ceiling; a round trip 1 − median ceiling ÷ median ours), each round's own overhead's median (pairMedian), its
    // 95 % confidence interval (pairCI) and range (overheadMin, overheadMax), and each figure's distribution over
    // the rounds (min, quartiles, median, max).
    summary: result.summary,
    // The loopback's own ceiling, each round's (node:net pair and iperf3, MB/s).
    loopback: result.loopback,
    // A fixed CPU task's ms, timed before each round: the host's own noise.
    hostTaskMs: result.hostTaskMs,
    cells: result.cells.map((c) => ({
      transport: c.transport,
      shape: c.shape,
      round: c.round,
      ceiling: c.ceiling,
      ours: section(c.ours),
      oursUnverified: section(c.oursUnverified),
    })),
  };
  out.charts.push(...result.charts);
  out.host ??= result.host;
}

/** The default parts after the ceiling: verify, matrix, steady, clients and rate, those `parts` names. */
async function runSuiteParts(parts: readonly Part[], plan: BenchPlan, out: BenchOutput): Promise<void> {
  const { lines, record, charts } = out;
  if (parts.includes('verify')) {
    const result = await verifyCost(plan);
    lines.push('', ...result.lines);
    record.verify = result.cells.map(strip);
    record.checksums = result.checksums;
    out.host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  if (parts.includes('matrix')) {
    const result = await matrix(plan);
    lines.push('', ...result.lines);
    Object.assign(record, {
      matrix: result.cells.map(strip),
      linearity: result.linearity.map(strip),
      memory: result.memory.map(strip),
    });
    out.host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  if (parts.includes('steady')) {
    const result = await steady(plan);
    lines.push('', ...result.lines);
    record.steady = result.cells.map(strip);
    out.host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  // Only single-client transports chosen: nothing to sweep (and an empty TRANSPORTS is refused).
  if (parts.includes('clients') && multiClientTransports(plan.transportNames).length === 0)
    lines.push('', `Clients: skipped, every transport chosen takes one client (${plan.transportNames.join(', ')}).`);
  else if (parts.includes('clients')) {
    const result = await clientSweep(plan);
    lines.push('', ...result.lines);
    record.clients = result.cells.map(strip);
    charts.push(result.chart);
    out.host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  if (parts.includes('rate')) {
    const result = await rateSweep(plan);
    lines.push('', ...result.lines);
    record.rate = result.cells.map(strip);
    charts.push(...result.charts);
    out.host ??= result.cells[0]?.report.run.hosts.receiver;
  }
}

/** The parts that run only when named: grpc-options, soak, delay and capacity, in that order. */
async function runNamedParts(
  options: BenchOptions,
  plan: BenchPlan,
  soakOptions: SoakOptions,
  out: BenchOutput,
): Promise<void> {
  const { parts } = options;
  const { lines, record, charts } = out;
  if (parts.includes('grpc-options')) {
    const result = await grpcOptions(plan, options.images);
    lines.push('', ...result.lines);
    record.grpcOptions = {
      rounds: plan.ceilingRounds,
      indicative: plan.ceilingRounds < MIN_CLAIM_ROUNDS,
      shapes: result.shapes,
      summary: result.summary,
      hostTaskMs: result.hostTaskMs,
      cells: result.cells,
    };
    // Runs of the pair only, no suite report: this process's facts, with grpc-js's version.
    out.host ??= hostFacts([transportByName('grpc')]);
  }
  if (parts.includes('soak')) {
    const result = await runSoak(soakOptions);
    lines.push('', ...result.lines);
    record.soak = result.record;
    charts.push(...result.charts);
    out.host ??= result.host;
    if (!result.verdict.pass) process.exitCode = 1;
  }
  if (parts.includes('delay')) {
    const result = await delaySweep(plan);
    lines.push('', ...result.lines);
    record.delay = {
      delayMs: plan.delayMs,
      rounds: plan.delayRounds,
      imagesPerSection: plan.delayImages,
      // Per transport and size: the median p50s, the time the delay added (each round's too), that minus the delay,
      // the relay's largest lateness toward the receiver, and the target where it applies.
      summary: result.summary,
      // Every run, with what each transport's relay measured in both directions.
      cells: result.cells.map((c) => ({
        round: c.round,
        sizeBytes: c.sizeBytes,
        delayMs: c.delayMs,
        relays: c.relays,
        ...strip(c.cell),
      })),
    };
    out.host ??= result.cells[0]?.cell.report.run.hosts.receiver;
  }
  if (parts.includes('capacity')) {
    const result = await capacity(plan);
    lines.push('', ...result.lines);
    record.capacity = {
      sizesBytes: plan.capacitySizes,
      rounds: plan.capacityRounds,
      // null: one frame interval at each rate (DEADLINE_MS unset).
      deadlineMs: plan.capacityDeadlineMs ?? null,
      deadlineMissPercent: plan.capacityMissPercent,
      bounds: CAPACITY_BOUNDS,
      // Per transport and size: each round's sustainable rate, their median and its interval, the figures at it and at
      // the camera rates below it, and what stopped each round's climb.
      summary: result.summary,
      // The table as printed (and on the charts page).
      table: result.table,
      // Every probe: its rate, purpose, verdict and why, and the figures the table is drawn from.
      probes: result.probes,
    };
    charts.push(...result.charts);
    out.host ??= result.host;
  }
}

/** Prints the parts' lines under the host's, and writes results.json and (with charts) the charts page. */
async function writeResults(options: BenchOptions, started: Date, out: BenchOutput): Promise<void> {
  const { lines, record, charts, host } = out;
  const parts = options.parts;
  if (host) {
    lines.splice(
      1,
      0,
      `Host: ${host.cpuModel}, ${host.cores} cores, ${formatSize(host.totalMemoryBytes)}, ${host.platform}` +
        ` ${host.kernel}, ${nodeDescription(host)}`,
      `Libraries: ${Object.entries(host.libraries)
        .map(([n, v]) => `${n} ${v}`)
        .join(', ')}`,
    );
  }
  const totalSeconds = (Date.now() - started.getTime()) / 1000;
  lines.push('', `Benchmark took ${totalSeconds.toFixed(0)} s.`);
  const text = lines.join('\n');
  process.stdout.write(`${text}\n`);
  await makeDirectories(options.outDir);
  // A run of some parts only gets a name of its own, so it never overwrites the day's full run.
  const suffix =
    `${parts.length === PARTS.length ? '' : `-${parts.join('-')}`}${options.ceilingOnly ? '-only' : ''}` +
    (options.transports === undefined ? '' : `-${options.transports.join('-')}`) +
    (options.shapes.length === SHAPE_NAMES.length ? '' : `-${options.shapes.join('-')}`);
  const file = path.join(options.outDir, `results-${started.toISOString().slice(0, 10)}${suffix}.json`);
  await writeFile(file, `${JSON.stringify({ ...record, totalSeconds, text }, null, 1)}\n`);
  process.stdout.write(`Written: ${path.relative(process.cwd(), file)}\n`);
  if (charts.length > 0) {
    const page = path.join(options.outDir, `charts-${started.toISOString().slice(0, 10)}${suffix}.html`);
    await writeFile(
      page,
      renderSweepPage(`image-transfer-bench benchmark, ${started.toISOString()}`, charts, reportLibraries()),
    );
    process.stdout.write(`Written: ${path.relative(process.cwd(), page)}\n`);
  }
}

await main(process.argv.slice(2));
