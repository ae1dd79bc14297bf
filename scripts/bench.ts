import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { errorMessage } from '../services/core/errors.js';
import { nodeDescription, renderTable, type HostFacts, type RunReport } from '../services/core/report.js';
import type { SectionResult } from '../services/core/section.js';
import { medianOf } from '../services/core/stats.js';
import { formatSize } from '../services/core/size.js';
import { projectPath, projectRoot } from '../services/shared/paths.js';
import type { LocalServer } from '../services/transports/contract.js';
import { defaultTransports, transportByName, transports } from '../services/transports/index.js';
import { freePortsEnv } from './lib/ports.js';
import { findRefbench, runRefbench, type RefbenchResult } from './lib/refbench.js';
import { renderSweepPage, type SweepChart } from './lib/sweep-page.js';
import { reportLibraries } from '../services/shared/report-assets.js';

// `npm run bench [-- ceiling verify matrix steady] [--transports=a,b]`: the whole suite (`npm
// start`'s entry, so real processes and private servers), in four parts, all by default:
// - ceiling: every transport (or those --transports= names) in three shapes, each run paired in
//   the same minute with ../shared/refbench's thinnest client of the same library: 533 KiB at
//   WINDOW=16 (MB/s, also with VERIFY=false), 1 KB at WINDOW=256 (images/s) and 533 KiB one at a
//   time (latency); three rounds in rotated order;
// - verify: what VERIFY=false changes in TCP's and ZeroMQ's MB/s at WINDOW=16: five interleaved
//   pairs (on/off, then off/on, ...), the median of the five changes;
// - matrix: image size × WINDOW with three interleaved repeats, then linear assembly and flat memory;
// - steady: the default warm-up (WARMUP=auto) checked: a transport's p50 when it runs first vs
//   last, a default-sized run's p50 (10 images) against a 1,000-image run's, and how much MB/s
//   spreads across repeats at each IMAGE_COUNT;
// - clients: latency and per-client fairness against CLIENTS (1, 10, 50, 200), rounds interleaved;
// - rate: an open loop (RATE) from light load to past saturation: achieved rate, images dropped at
//   the sender, latency from the due time.
// Prints tables and writes bench/results-<date>.json, and the two sweeps drawn in
// bench/sweeps-<date>.html. A benchmark, not a test: `npm test` never runs it.

const PARTS = ['ceiling', 'verify', 'matrix', 'steady', 'clients', 'rate'] as const;
type Part = (typeof PARTS)[number];
const USAGE = `usage: npm run bench [-- [${PARTS.join(' ')}] [--transports=<name>,<name>...]]`;

/** The parts named on the command line (all when none is) and the transports `--transports=` names; anything else exits 2. */
function optionsFrom(args: readonly string[]): { parts: Part[]; transports: string[] | undefined } {
  const problems: string[] = [];
  let chosen: string[] | undefined;
  const partNames: string[] = [];
  for (const arg of args) {
    if (arg.startsWith('--transports=')) {
      chosen = arg.slice('--transports='.length).split(',').map((name) => name.trim()).filter((name) => name !== '');
      const unknown = chosen.filter((name) => !transports.some((t) => t.name === name));
      if (unknown.length > 0 || chosen.length === 0) problems.push(`unknown transport ${unknown.join(', ') || '(none given)'}; transports: ${transports.map((t) => t.name).join(', ')}`);
    } else if ((PARTS as readonly string[]).includes(arg)) partNames.push(arg);
    else problems.push(`unknown part ${arg}; parts: ${PARTS.join(', ')}`);
  }
  if (problems.length > 0) {
    process.stderr.write(`bench: ${problems.join('\n')}\n${USAGE}\n`);
    process.exit(2);
  }
  return { parts: partNames.length === 0 ? [...PARTS] : PARTS.filter((p) => partNames.includes(p)), transports: chosen };
}

const OPTIONS = optionsFrom(process.argv.slice(2));
/** The ceiling runs every transport, the matrix and steady parts the default ones, unless --transports= names others. */
const CEILING_TRANSPORTS = OPTIONS.transports === undefined ? transports : OPTIONS.transports.map(transportByName);
const TRANSPORTS = OPTIONS.transports ?? defaultTransports.map((t) => t.name);

const ASSET_BYTES = 545_792;
/** Rounds of the ceiling, the transports' order rotated each round. */
const CEILING_ROUNDS = 3;
const VERIFY = { transports: ['tcp', 'zeromq'], window: 16, warmup: 100, count: 2000, pairs: 5 };
const SIZES = [1000, 64_000, 545_792, 4_000_000, 32_000_000];
const WINDOWS = [1, 16];
const MATRIX_REPEAT = 3;
/** Bytes per matrix section: enough images that a section outlasts timer noise, few enough to finish in minutes. */
const BYTES_PER_SECTION = 64_000_000;
const REFBENCH_TIMEOUT_MS = 120_000;
/**
 * The steady part: default settings (the asset, WINDOW=1, WARMUP=auto). Position: every rotation
 * of TRANSPORTS, so each transport runs first and last once per round. Size: interleaved pairs of
 * a default-sized run and a long one. Stability: MB/s spread across repeats per IMAGE_COUNT.
 */
const STEADY = { positionRounds: 3, defaultCount: 10, longCount: 1000, sizePairs: 5, tolerance: 0.2, oldWarmup: '2', stabilityCounts: [10, 30, 100, 300, 1000], stabilityRepeat: 3 };

/**
 * The clients sweep: 64 KB images at WINDOW=1 per client, IMAGE_COUNT a multiple of the largest
 * CLIENTS so every client carries images; rounds interleaved, the order of the counts rotated.
 */
const CLIENT_SWEEP = { clients: [1, 10, 50, 200], bytes: 64_000, count: 4000, window: 1, warmup: 400, rounds: 2 };
/** The rate sweep: 64 KB images, WINDOW=16 bounding the images in flight, `seconds` of schedule per rate. */
const RATE_SWEEP = { rates: [100, 300, 1000, 3000, 10_000, 30_000], bytes: 64_000, seconds: 2, minCount: 200, window: 16, warmup: 200 };

/** One run of the suite: its configuration and the report it produced. */
interface Cell {
  name: string;
  env: Record<string, string>;
  report: RunReport;
  seconds: number;
}

const median = (values: readonly number[]): number | null => medianOf(values) ?? null;
const fixed = (value: number | null | undefined, digits: number): string => (value === null || value === undefined ? '-' : value.toFixed(digits));
const mib = (bytes: number | undefined): string => (bytes === undefined ? '-' : (bytes / 1024 / 1024).toFixed(0));
const rotated = <T>(items: readonly T[], shift: number): T[] => [...items.slice(shift % items.length), ...items.slice(0, shift % items.length)];

/** Runs the suite once as `npm start` does, with `env`, and returns its results.json. */
async function runSuite(name: string, env: Record<string, string>): Promise<Cell> {
  const outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-bench-'));
  const ports = await freePortsEnv();
  // Each run starts its own servers (a private redis-server), never one that other work shares.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !transports.some((t) => t.setting.kind === 'url' && t.setting.envVar === key)));
  const startedAt = Date.now();
  process.stderr.write(`bench: ${name} ...`);
  let stderr = '';
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [projectPath('dist', 'scripts', 'start.js')], {
      env: { ...inherited, LOG_LEVEL: 'warn', TRANSPORTS: TRANSPORTS.join(','), OUTPUT_DIR: outputDir, ...ports, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    // Progress lines and warnings are kept back unless the run fails.
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', resolve);
  });
  const seconds = (Date.now() - startedAt) / 1000;
  process.stderr.write(` ${seconds.toFixed(1)} s${code === 0 ? '' : ` (exit ${code}: see the FAILED rows)\n${stderr.slice(-4000)}`}\n`);
  const text = await readFile(path.join(outputDir, 'results.json'), 'utf8').catch(() => undefined);
  await rm(outputDir, { recursive: true, force: true });
  // No results at all (bad configuration, a crash): the bench stops here, saying which run and why.
  if (text === undefined) throw new Error(`bench: ${name} wrote no results.json (exit ${code}); its stderr ends:\n${stderr.slice(-2000)}`);
  return { name, env, report: JSON.parse(text) as RunReport, seconds };
}

function medianSection(report: RunReport, transport: string): SectionResult | undefined {
  const summary = report.transports.find((t) => t.transport === transport);
  return summary?.medianSection === null || summary === undefined ? undefined : report.sections[summary.medianSection];
}

/**
 * The ceiling's three shapes, as refbench's RESULTS.md measures them: large images at a window of 16
 * (MB/s, the headline ratio), small images at a wide window (per-message overhead: images/s) and
 * large images one at a time (latency: the round trip's p50). Each run is paired with refbench's
 * run of the same shape right after it; the large shape also runs with VERIFY=false after that.
 */
interface CeilingShape {
  name: 'large' | 'small' | 'latency';
  bytes: number;
  count: number;
  window: number;
  warmup: number;
  /** Also run with VERIFY=false: refbench's clients verify nothing. */
  unverified: boolean;
}

// Warm and steady: JIT and socket buffers settle in the untimed images; the timed ones outlast timer noise.
const CEILING_SHAPES: readonly CeilingShape[] = [
  { name: 'large', bytes: ASSET_BYTES, count: 1000, window: 16, warmup: 100, unverified: true },
  { name: 'small', bytes: 1024, count: 20_000, window: 256, warmup: 2000, unverified: false },
  { name: 'latency', bytes: ASSET_BYTES, count: 300, window: 1, warmup: 100, unverified: false },
];

/** One transport's run of one shape beside refbench's run of the same library in the same minute. */
interface CeilingPair {
  transport: string;
  shape: CeilingShape['name'];
  round: number;
  ours: SectionResult | undefined;
  /** The same run with VERIFY=false, right after refbench's (large shape only): the harness's cost apart from the integrity check. */
  oursUnverified: SectionResult | undefined;
  ref: RefbenchResult | { failed: string };
}

async function ceiling(): Promise<{ lines: string[]; pairs: CeilingPair[]; host: HostFacts | undefined }> {
  const location = findRefbench(projectRoot());
  const pairs: CeilingPair[] = [];
  let host: HostFacts | undefined;
  // refbench's redis modes need a server too: one private redis-server for all of them.
  const redisTransport = CEILING_TRANSPORTS.find((t) => t.refbenchMode?.startsWith('redis') && t.localServer);
  let redis: LocalServer | undefined;
  if ('dir' in location && redisTransport?.localServer) redis = await redisTransport.localServer.start();
  try {
    for (let round = 1; round <= CEILING_ROUNDS; round++) {
      for (const transport of rotated(CEILING_TRANSPORTS, round - 1)) {
        for (const shape of CEILING_SHAPES) {
          const env = { TRANSPORTS: transport.name, IMAGE_SIZE: String(shape.bytes), IMAGE_COUNT: String(shape.count), WARMUP: String(shape.warmup), WINDOW: String(shape.window), REPEAT: '1' };
          const cell = await runSuite(`ceiling ${transport.name}, ${shape.name}, round ${round}`, env);
          let ref: CeilingPair['ref'];
          if ('unavailable' in location) ref = { failed: location.unavailable };
          else if (transport.refbenchMode === undefined) ref = { failed: 'refbench has no mode for this library use' };
          else {
            process.stderr.write(`bench: refbench ${transport.refbenchMode}, ${shape.name}, round ${round} ...\n`);
            ref = await runRefbench(location.dir, {
              mode: transport.refbenchMode, bytes: shape.bytes, count: shape.count, window: shape.window, warmup: shape.warmup,
              redisPort: redis ? Number(new URL(redis.url).port) : undefined, timeoutMs: REFBENCH_TIMEOUT_MS,
            }).catch((err: unknown) => ({ failed: errorMessage(err) }));
          }
          // Refbench's clients verify nothing: the same run without the receiver's checksum, in the same minute.
          const unverified = shape.unverified ? await runSuite(`ceiling ${transport.name}, ${shape.name}, round ${round}, VERIFY=false`, { ...env, VERIFY: 'false' }) : undefined;
          host ??= cell.report.run.hosts.receiver;
          pairs.push({ transport: transport.name, shape: shape.name, round, ours: medianSection(cell.report, transport.name), oursUnverified: unverified && medianSection(unverified.report, transport.name), ref });
        }
      }
    }
  } finally {
    await redis?.close();
  }
  return { pairs, host, lines: ceilingLines(pairs) };
}

/** The ceiling's three tables: MB/s (with verification and without), images/s of small images, and latency one at a time. */
function ceilingLines(pairs: readonly CeilingPair[]): string[] {
  const ofShape = (t: string, shape: CeilingShape['name']) => pairs.filter((p) => p.transport === t && p.shape === shape);
  const measured = (own: readonly CeilingPair[]) => own.filter((p): p is CeilingPair & { ref: RefbenchResult } => !('failed' in p.ref));
  const range = (values: readonly number[]): string => (values.length > 0 ? `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}` : '-');
  const result = (own: readonly CeilingPair[]): string => {
    const refFailure = own.map((p) => p.ref).find((r): r is { failed: string } => 'failed' in r);
    const ok = own.every((p) => p.ours?.ok && (p.oursUnverified === undefined || p.oursUnverified.ok));
    return ok ? (refFailure && measured(own).length === 0 ? `ok; refbench: ${refFailure.failed.slice(0, 80)}` : 'ok') : 'FAILED';
  };
  const large = CEILING_TRANSPORTS.map((t) => {
    const own = ofShape(t.name, 'large');
    const withRef = measured(own);
    const ratios = withRef.flatMap((p) => (p.ours?.throughputMBps != null ? [p.ours.throughputMBps / p.ref.MBps] : []));
    const unverifiedRatios = withRef.flatMap((p) => (p.oursUnverified?.throughputMBps != null ? [p.oursUnverified.throughputMBps / p.ref.MBps] : []));
    return [
      t.name,
      t.refbenchMode ?? '-',
      fixed(median(own.flatMap((p) => p.ours?.throughputMBps ?? [])), 1),
      fixed(median(own.flatMap((p) => p.oursUnverified?.throughputMBps ?? [])), 1),
      fixed(median(withRef.map((p) => p.ref.MBps)), 1),
      fixed(median(ratios), 2),
      range(ratios),
      fixed(median(unverifiedRatios), 2),
      fixed(median(own.flatMap((p) => p.ours?.cost.transmitter?.cpuMsPerImage ?? [])), 3),
      fixed(median(own.flatMap((p) => p.ours?.cost.receiver?.cpuMsPerImage ?? [])), 3),
      fixed(median(own.flatMap((p) => p.ours?.cost.broker?.cpuMsPerImage ?? [])), 3),
      fixed(median(own.flatMap((p) => (p.ours?.littleRatio != null ? [p.ours.littleRatio] : []))), 3),
      result(own),
    ];
  });
  const small = CEILING_TRANSPORTS.map((t) => {
    const own = ofShape(t.name, 'small');
    const withRef = measured(own);
    const ratios = withRef.flatMap((p) => (p.ours?.imagesPerSecond != null ? [p.ours.imagesPerSecond / p.ref.msgps] : []));
    return [t.name, fixed(median(own.flatMap((p) => p.ours?.imagesPerSecond ?? [])), 0), fixed(median(withRef.map((p) => p.ref.msgps)), 0), fixed(median(ratios), 2), range(ratios), fixed(median(own.flatMap((p) => p.ours?.cost.transmitter?.cpuMsPerImage ?? [])), 4), fixed(median(own.flatMap((p) => p.ours?.cost.receiver?.cpuMsPerImage ?? [])), 4), result(own)];
  });
  const latency = CEILING_TRANSPORTS.map((t) => {
    const own = ofShape(t.name, 'latency');
    const withRef = measured(own);
    return [
      t.name,
      fixed(median(own.flatMap((p) => p.ours?.latency?.p50Ms ?? [])), 3),
      fixed(median(own.flatMap((p) => p.ours?.latency?.p99Ms ?? [])), 3),
      fixed(median(own.flatMap((p) => p.ours?.rtt?.p50Ms ?? [])), 3),
      fixed(median(withRef.map((p) => p.ref.p50Ms)), 3),
      fixed(median(withRef.flatMap((p) => (p.ours?.rtt ? [p.ours.rtt.p50Ms / p.ref.p50Ms] : []))), 2),
      result(own),
    ];
  });
  const [l, s, n] = CEILING_SHAPES as [CeilingShape, CeilingShape, CeilingShape];
  return [
    `Ceiling: each run paired with refbench's run of the same library and shape right after it; ${CEILING_ROUNDS} rounds, the transports' order rotated; medians of the rounds; ratio = ours ÷ refbench per pair.`,
    '',
    `Large: ${formatSize(l.bytes)} × ${l.count} after ${l.warmup} untimed, WINDOW=${l.window}; then the same with VERIFY=false (refbench verifies nothing). CPU: ms per image, each side (broker: the server it goes through).`,
    renderTable(['Transport', 'refbench mode', 'MB/s', 'MB/s unverified', 'refbench MB/s', 'ratio', 'ratio range', 'ratio unverified', 'TX CPU', 'RX CPU', 'broker CPU', "Little's law", 'Result'], large),
    '',
    `Small: ${formatSize(s.bytes)} × ${s.count.toLocaleString('en-US')} after ${s.warmup.toLocaleString('en-US')} untimed, WINDOW=${s.window}: images per second (per-message overhead).`,
    renderTable(['Transport', 'images/s', 'refbench msgs/s', 'ratio', 'ratio range', 'TX CPU', 'RX CPU', 'Result'], small),
    '',
    `Latency: ${formatSize(n.bytes)} × ${n.count} after ${n.warmup} untimed, WINDOW=${n.window}: one-way p50 and p99, and the round trip (stamp → ack) beside refbench's.`,
    renderTable(['Transport', 'p50 ms', 'p99 ms', 'RTT p50 ms', 'refbench p50 ms', 'RTT ÷ refbench', 'Result'], latency),
  ];
}

async function verifyCost(): Promise<{ lines: string[]; cells: Cell[] }> {
  const cells: Cell[] = [];
  const changes = new Map<string, number[]>(VERIFY.transports.map((t) => [t, []]));
  for (let pair = 1; pair <= VERIFY.pairs; pair++) {
    // Interleaved, the order swapped every pair, so drift hits both settings alike.
    const order = pair % 2 === 1 ? ['true', 'false'] : ['false', 'true'];
    const runs: Record<string, Cell> = {};
    for (const verify of order) {
      runs[verify] = await runSuite(`verify pair ${pair}, VERIFY=${verify}`, {
        TRANSPORTS: VERIFY.transports.join(','), IMAGE_SIZE: String(ASSET_BYTES), IMAGE_COUNT: String(VERIFY.count), WARMUP: String(VERIFY.warmup), WINDOW: String(VERIFY.window), REPEAT: '1', VERIFY: verify,
      });
      cells.push(runs[verify]!);
    }
    for (const transport of VERIFY.transports) {
      const on = medianSection(runs.true!.report, transport)?.throughputMBps;
      const off = medianSection(runs.false!.report, transport)?.throughputMBps;
      if (on != null && off != null) changes.get(transport)!.push((100 * (off - on)) / on);
    }
  }
  const rows = VERIFY.transports.map((transport) => {
    const own = changes.get(transport)!;
    const mbps = (verify: string): number[] => cells.filter((c) => c.env.VERIFY === verify).flatMap((c) => medianSection(c.report, transport)?.throughputMBps ?? []);
    const verifyMs = cells.filter((c) => c.env.VERIFY === 'true').flatMap((c) => medianSection(c.report, transport)?.verifyMs ?? []);
    return [
      transport,
      fixed(median(mbps('true')), 1),
      fixed(median(mbps('false')), 1),
      own.map((c) => `${c >= 0 ? '+' : ''}${c.toFixed(1)}`).join(' '),
      `${fixed(median(own), 1)} %`,
      fixed(median(verifyMs.map((ms) => ms / VERIFY.count)), 3),
    ];
  });
  return {
    cells,
    lines: [
      `What verification costs: ${VERIFY.transports.join(' and ')}, ${formatSize(ASSET_BYTES)} × ${VERIFY.count} after ${VERIFY.warmup} untimed, WINDOW=${VERIFY.window}; ${VERIFY.pairs} interleaved pairs. Change = MB/s with VERIFY=false over MB/s with VERIFY=true, per pair.`,
      renderTable(['Transport', 'MB/s verify on', 'MB/s verify off', 'change per pair %', 'median change', 'hash ms/img'], rows, false),
    ],
  };
}

function matrixTable(cells: readonly Cell[]): string {
  const rows: string[][] = [];
  for (const cell of cells) {
    for (const transport of TRANSPORTS) {
      const summary = cell.report.transports.find((t) => t.transport === transport);
      const s = medianSection(cell.report, transport);
      rows.push([
        transport,
        formatSize(cell.report.run.imageSizeBytes),
        String(cell.report.run.window),
        String(cell.report.run.imageCount),
        fixed(s?.throughputMBps, 1),
        summary?.spread.throughputMBps ? `${summary.spread.throughputMBps.min.toFixed(0)}–${summary.spread.throughputMBps.max.toFixed(0)}` : '-',
        fixed(s?.imagesPerSecond, 0),
        fixed(s?.latency?.p50Ms, 3),
        fixed(s?.latency?.p99Ms, 3),
        fixed(s?.rtt?.p50Ms, 3),
        fixed(s?.cost.transmitter?.cpuMsPerImage, 3),
        fixed(s?.cost.receiver?.cpuMsPerImage, 3),
        mib(s?.cost.transmitter?.peakRssBytes),
        mib(s?.cost.receiver?.peakRssBytes),
        summary?.ok ? 'ok' : `FAILED: ${summary?.failure ?? 'lost or corrupt images'}`,
      ]);
    }
  }
  return renderTable(['Transport', 'Image', 'Win', 'Images', 'MB/s', 'MB/s range', 'images/s', 'p50 ms', 'p99 ms', 'RTT p50', 'TX CPU ms/img', 'RX CPU ms/img', 'TX RSS MiB', 'RX RSS MiB', 'Result'], rows);
}

function imageCountFor(sizeBytes: number): number {
  return Math.min(1000, Math.max(8, Math.round(BYTES_PER_SECTION / sizeBytes)));
}

async function matrix(): Promise<{ lines: string[]; cells: Cell[]; linearity: Cell[]; memory: Cell[] }> {
  const cells: Cell[] = [];
  for (const window of WINDOWS) {
    for (const size of SIZES) {
      cells.push(await runSuite(`${formatSize(size)} × window ${window}`, { IMAGE_SIZE: String(size), IMAGE_COUNT: String(imageCountFor(size)), WINDOW: String(window), REPEAT: String(MATRIX_REPEAT), IMAGE_TIMEOUT_MS: '60000' }));
    }
  }
  // Linear assembly: MB/s should not fall as images grow (no copy of the whole per chunk).
  const linearity = [await runSuite('256 MiB × window 1 (linearity)', { IMAGE_SIZE: '256MiB', IMAGE_COUNT: '3', WARMUP: '1', WINDOW: '1', REPEAT: '1', IMAGE_TIMEOUT_MS: '60000' })];
  // Flat memory: peak RSS must not grow with the number of images, and stays bounded for big ones.
  const memory = [
    await runSuite('1 MB × 100 (memory)', { IMAGE_SIZE: '1MB', IMAGE_COUNT: '100', WINDOW: '16', REPEAT: '1' }),
    await runSuite('1 MB × 1000 (memory)', { IMAGE_SIZE: '1MB', IMAGE_COUNT: '1000', WINDOW: '16', REPEAT: '1' }),
    await runSuite('64 MB × window 4 (memory)', { IMAGE_SIZE: '64MB', IMAGE_COUNT: '6', WARMUP: '1', WINDOW: '4', REPEAT: '1', IMAGE_TIMEOUT_MS: '60000' }),
  ];
  const sizeRows = TRANSPORTS.map((transport) => {
    const at = (cell: Cell | undefined): string => fixed(cell && medianSection(cell.report, transport)?.throughputMBps, 1);
    const bySize = (size: number): Cell | undefined => cells.find((c) => c.report.run.imageSizeBytes === size && c.report.run.window === 1);
    return [transport, at(bySize(4_000_000)), at(bySize(32_000_000)), at(linearity[0])];
  });
  const memoryRows = TRANSPORTS.map((transport) => {
    const side = (cell: Cell | undefined, which: 'transmitter' | 'receiver'): string => mib(cell && medianSection(cell.report, transport)?.cost[which]?.peakRssBytes);
    return [transport, side(memory[0], 'transmitter'), side(memory[1], 'transmitter'), side(memory[0], 'receiver'), side(memory[1], 'receiver'), side(memory[2], 'transmitter'), side(memory[2], 'receiver')];
  });
  return {
    cells,
    linearity,
    memory,
    lines: [
      `Matrix: each cell ${MATRIX_REPEAT} interleaved repeats (order rotated), median completed section by total transfer time; MB/s range = min–max across completed repeats.`,
      matrixTable(cells),
      '',
      'Linear assembly, window 1 (MB/s):',
      renderTable(['Transport', '4 MB', '32 MB', '256 MiB'], sizeRows, false),
      '',
      'Peak RSS (MiB) of each side: 1 MB images × 100 vs × 1,000 (window 16), and 64 MB images (window 4; bound 6 × 64 MB × 4 = 1,536 MB):',
      renderTable(['Transport', 'TX ×100', 'TX ×1000', 'RX ×100', 'RX ×1000', 'TX 64 MB', 'RX 64 MB'], memoryRows, false),
    ],
  };
}

const p50Of = (cell: Cell, transport: string): number | undefined => medianSection(cell.report, transport)?.latency?.p50Ms;

async function steady(): Promise<{ lines: string[]; cells: Cell[] }> {
  const cells: Cell[] = [];
  // Position: p50 of each transport when it ran first and when it ran last in its process pair.
  const first = new Map<string, number[]>(TRANSPORTS.map((t) => [t, []]));
  const last = new Map<string, number[]>(TRANSPORTS.map((t) => [t, []]));
  for (let round = 1; round <= STEADY.positionRounds; round++) {
    for (let shift = 0; shift < TRANSPORTS.length; shift++) {
      const order = rotated(TRANSPORTS, shift);
      const cell = await runSuite(`steady: position, round ${round}, ${order.join(',')}`, { TRANSPORTS: order.join(','), REPEAT: '1' });
      cells.push(cell);
      const head = p50Of(cell, order[0]!);
      const tail = p50Of(cell, order[order.length - 1]!);
      if (head !== undefined) first.get(order[0]!)!.push(head);
      if (tail !== undefined) last.get(order[order.length - 1]!)!.push(tail);
    }
  }
  const positionRows = TRANSPORTS.map((t) => {
    const f = median(first.get(t)!);
    const l = median(last.get(t)!);
    const ratio = f !== null && l !== null ? f / l : null;
    return [t, fixed(f, 3), fixed(l, 3), first.get(t)!.map((v) => v.toFixed(3)).join(' '), last.get(t)!.map((v) => v.toFixed(3)).join(' '), fixed(ratio, 2), ratio === null ? '-' : Math.abs(ratio - 1) <= STEADY.tolerance ? 'ok' : 'DIFFERS'];
  });
  // Size: a default-sized run's p50 against a long run's, in interleaved triples (order rotated),
  // with the old default warm-up (WARMUP=2) beside it for contrast.
  const byRun = { short: 'default-sized', long: 'long', old: `default-sized, WARMUP=${STEADY.oldWarmup}` } as const;
  type RunKind = keyof typeof byRun;
  const p50s = new Map<string, Record<RunKind, number[]>>(TRANSPORTS.map((t) => [t, { short: [], long: [], old: [] }]));
  const ratios = new Map<string, { auto: number[]; old: number[] }>(TRANSPORTS.map((t) => [t, { auto: [], old: [] }]));
  const sizeEnv: Record<RunKind, Record<string, string>> = {
    short: { IMAGE_COUNT: String(STEADY.defaultCount), REPEAT: '1' },
    long: { IMAGE_COUNT: String(STEADY.longCount), REPEAT: '1' },
    old: { IMAGE_COUNT: String(STEADY.defaultCount), REPEAT: '1', WARMUP: STEADY.oldWarmup },
  };
  for (let pair = 1; pair <= STEADY.sizePairs; pair++) {
    const runs = {} as Record<RunKind, Cell>;
    for (const kind of rotated(['short', 'long', 'old'] as const, pair - 1)) {
      runs[kind] = await runSuite(`steady: ${byRun[kind]} (${sizeEnv[kind].IMAGE_COUNT} images), round ${pair}`, sizeEnv[kind]);
      cells.push(runs[kind]);
    }
    for (const t of TRANSPORTS) {
      const [short, long, old] = (['short', 'long', 'old'] as const).map((kind) => p50Of(runs[kind], t));
      for (const [kind, value] of [['short', short], ['long', long], ['old', old]] as const) if (value !== undefined) p50s.get(t)![kind].push(value);
      if (short !== undefined && long !== undefined) ratios.get(t)!.auto.push(short / long);
      if (old !== undefined && long !== undefined) ratios.get(t)!.old.push(old / long);
    }
  }
  const sizeRows = TRANSPORTS.map((t) => {
    const r = median(ratios.get(t)!.auto);
    const own = p50s.get(t)!;
    return [
      t,
      fixed(median(own.short), 3),
      fixed(median(own.long), 3),
      ratios.get(t)!.auto.map((v) => v.toFixed(2)).join(' '),
      fixed(r, 2),
      fixed(median(own.old), 3),
      fixed(median(ratios.get(t)!.old), 2),
      r === null ? '-' : Math.abs(r - 1) <= STEADY.tolerance ? 'ok' : 'FAILED',
    ];
  });
  // Stability: how far MB/s moves across repeats of one run, per IMAGE_COUNT.
  const stabilityCells: Cell[] = [];
  for (const count of STEADY.stabilityCounts) {
    const cell = await runSuite(`steady: MB/s spread at ${count} images`, { IMAGE_COUNT: String(count), REPEAT: String(STEADY.stabilityRepeat) });
    cells.push(cell);
    stabilityCells.push(cell);
  }
  const stabilityRows = TRANSPORTS.map((t) => [
    t,
    ...stabilityCells.map((cell) => {
      const summary = cell.report.transports.find((s) => s.transport === t);
      const range = summary?.spread.throughputMBps;
      const mid = medianSection(cell.report, t)?.throughputMBps;
      return range && mid ? `±${((100 * (range.max - range.min)) / 2 / mid).toFixed(0)} %` : '-';
    }),
  ]);
  return {
    cells,
    lines: [
      `Steady figures by default (the asset, WINDOW=1, WARMUP=auto). Position: p50 one-way ms of a ${STEADY.defaultCount}-image run when the transport runs first vs last (every rotation of TRANSPORTS, ${STEADY.positionRounds} rounds; ok when first ÷ last is within ${STEADY.tolerance * 100} %):`,
      renderTable(['Transport', 'p50 first', 'p50 last', 'first, each', 'last, each', 'first ÷ last', 'Result'], positionRows, false),
      '',
      `Default-sized vs long: p50 one-way ms of ${STEADY.defaultCount} images vs ${STEADY.longCount} images, ${STEADY.sizePairs} interleaved rounds; ok when the median ratio is within ${STEADY.tolerance * 100} %. For contrast, ${STEADY.defaultCount} images with the old default WARMUP=${STEADY.oldWarmup}:`,
      renderTable(
        ['Transport', `p50 ×${STEADY.defaultCount}`, `p50 ×${STEADY.longCount}`, 'ratio per round', 'median ratio', `p50 ×${STEADY.defaultCount} WARMUP=${STEADY.oldWarmup}`, 'its median ratio', 'Result'],
        sizeRows,
        false,
      ),
      '',
      `MB/s spread across ${STEADY.stabilityRepeat} interleaved repeats ((max − min) ÷ 2 ÷ median) by IMAGE_COUNT:`,
      renderTable(['Transport', ...STEADY.stabilityCounts.map((c) => `×${c}`)], stabilityRows, false),
    ],
  };
}

// Several clients: websocket-push takes one (its receiver dials back once).
const multiClientTransports = (): string[] => TRANSPORTS.filter((name) => transportByName(name).maxClients === undefined);

async function clientSweep(): Promise<{ lines: string[]; cells: Cell[]; chart: SweepChart }> {
  const cells: Cell[] = [];
  const names = multiClientTransports();
  for (let round = 0; round < CLIENT_SWEEP.rounds; round++) {
    for (const clients of rotated(CLIENT_SWEEP.clients, round)) {
      cells.push(
        await runSuite(`clients ${clients}, round ${round + 1}`, {
          TRANSPORTS: names.join(','), CLIENTS: String(clients), IMAGE_SIZE: String(CLIENT_SWEEP.bytes), IMAGE_COUNT: String(CLIENT_SWEEP.count), WINDOW: String(CLIENT_SWEEP.window), WARMUP: String(CLIENT_SWEEP.warmup),
        }),
      );
    }
  }
  // Per transport and client count: the median over the rounds of each figure.
  const figure = (transport: string, clients: number, of: (s: SectionResult) => number | null | undefined): number | null =>
    median(
      cells
        .filter((c) => c.env.CLIENTS === String(clients))
        .flatMap((c) => {
          const section = medianSection(c.report, transport);
          const value = section === undefined ? undefined : of(section);
          return value === null || value === undefined ? [] : [value];
        }),
    );
  const rows = names.flatMap((transport) =>
    CLIENT_SWEEP.clients.map((clients) => [
      transportByName(transport).label,
      String(clients),
      fixed(figure(transport, clients, (s) => s.latency?.p50Ms), 3),
      fixed(figure(transport, clients, (s) => s.latency?.p99Ms), 3),
      fixed(figure(transport, clients, (s) => s.rtt?.p99Ms), 3),
      fixed(figure(transport, clients, (s) => s.throughputMBps), 1),
      fixed(figure(transport, clients, (s) => s.clientFairness?.slowestMBps), 2),
      fixed(figure(transport, clients, (s) => s.clientFairness?.fastestMBps), 2),
      fixed(figure(transport, clients, (s) => s.clientFairness?.jainIndex), 3),
    ]),
  );
  const note = `${formatSize(CLIENT_SWEEP.bytes)} × ${CLIENT_SWEEP.count} images per section after ${CLIENT_SWEEP.warmup} untimed, WINDOW=${CLIENT_SWEEP.window} per client, the images dealt to whichever client has room; median of ${CLIENT_SWEEP.rounds} interleaved rounds.`;
  return {
    cells,
    chart: {
      id: 'latency-vs-clients',
      title: 'p99 one-way latency against clients',
      note,
      xLabel: 'CLIENTS (connections, each with its own window)',
      yLabel: 'p99 one-way ms',
      series: names.map((transport) => ({ label: transportByName(transport).label, points: CLIENT_SWEEP.clients.map((clients) => ({ x: clients, y: figure(transport, clients, (s) => s.latency?.p99Ms) })) })),
    },
    lines: [`Clients: ${note}`, renderTable(['Transport', 'clients', 'p50 ms', 'p99 ms', 'RTT p99 ms', 'MB/s', 'slowest client MB/s', 'fastest client MB/s', 'Jain'], rows, false)],
  };
}

async function rateSweep(): Promise<{ lines: string[]; cells: Cell[]; charts: SweepChart[] }> {
  const cells: Cell[] = [];
  for (const rate of RATE_SWEEP.rates) {
    const count = Math.max(RATE_SWEEP.minCount, rate * RATE_SWEEP.seconds);
    cells.push(
      await runSuite(`RATE ${rate}`, { RATE: String(rate), IMAGE_SIZE: String(RATE_SWEEP.bytes), IMAGE_COUNT: String(count), WINDOW: String(RATE_SWEEP.window), WARMUP: String(RATE_SWEEP.warmup) }),
    );
  }
  const sectionAt = (transport: string, rate: number): SectionResult | undefined => {
    const cell = cells.find((c) => c.env.RATE === String(rate));
    return cell === undefined ? undefined : medianSection(cell.report, transport) ?? cell.report.sections.find((s) => s.transport === transport);
  };
  const rows = TRANSPORTS.flatMap((transport) =>
    RATE_SWEEP.rates.map((rate) => {
      const s = sectionAt(transport, rate);
      const open = s?.openLoop;
      return [transportByName(transport).label, String(rate), fixed(open?.achievedRatePerSecond, 0), open ? String(open.unsentCount) : '-', fixed(open?.sendLag?.p99Ms, 3), fixed(open?.latencyFromDue?.p50Ms, 3), fixed(open?.latencyFromDue?.p99Ms, 3), fixed(s?.latency?.p99Ms, 3), s?.ok ? 'ok' : `FAILED${s?.failure ? `: ${s.failure}` : ''}`];
    }),
  );
  const rateChart = (id: string, title: string, chartNote: string, yLabel: string, of: (section: SectionResult | undefined) => number | null | undefined): SweepChart => ({
    id,
    title,
    note: chartNote,
    xLabel: 'RATE, images/s offered',
    yLabel,
    series: TRANSPORTS.map((transport) => ({ label: transportByName(transport).label, points: RATE_SWEEP.rates.map((rate) => ({ x: rate, y: of(sectionAt(transport, rate)) ?? null })) })),
  });
  const note = `${formatSize(RATE_SWEEP.bytes)} images on an open-loop schedule, ${RATE_SWEEP.seconds} s per rate (at least ${RATE_SWEEP.minCount} images) after ${RATE_SWEEP.warmup} untimed, WINDOW=${RATE_SWEEP.window} bounding the images in flight: past saturation the achieved rate stops rising and images are dropped at the sender.`;
  return {
    cells,
    charts: [
      rateChart('latency-vs-rate', 'p99 latency from the due time against offered load', note, 'p99 one-way ms from due time', (section) => section?.openLoop?.latencyFromDue?.p99Ms),
      rateChart(
        'achieved-vs-rate',
        'Achieved rate against offered load',
        'Images per second actually sent (first send to last) against RATE: on the diagonal below saturation, flat past it, where the images that fell due while WINDOW were in flight are dropped at the sender.',
        'images/s achieved',
        (section) => section?.openLoop?.achievedRatePerSecond,
      ),
    ],
    lines: [`Rate: ${note}`, renderTable(['Transport', 'RATE/s', 'achieved/s', 'unsent', 'send lag p99', 'from due p50', 'from due p99', 'one-way p99', 'Result'], rows)],
  };
}

async function main(parts: readonly Part[]): Promise<void> {
  const started = new Date();
  const narrowed = OPTIONS.transports === undefined ? '' : `; transports: ${OPTIONS.transports.join(', ')}`;
  const lines: string[] = [`image-transfer-bench benchmark, ${started.toISOString()} (parts: ${parts.join(', ')}${narrowed})`];
  const record: Record<string, unknown> = { startedAt: started.toISOString(), parts, transports: OPTIONS.transports ?? null };
  // Per-image lists stay out (each run's results.json has them): the file keeps every section's figures.
  const strip = (cell: Cell) => ({ name: cell.name, env: cell.env, seconds: cell.seconds, report: { ...cell.report, sections: cell.report.sections.map(({ images: _images, ...rest }) => rest) } });
  let host: HostFacts | undefined;
  if (parts.includes('ceiling')) {
    const result = await ceiling();
    lines.push('', ...result.lines);
    const section = (result: SectionResult | undefined) => result && (({ images: _images, ...rest }) => rest)(result);
    record.ceiling = result.pairs.map((p) => ({ transport: p.transport, shape: p.shape, round: p.round, ref: p.ref, ours: section(p.ours), oursUnverified: section(p.oursUnverified) }));
    host ??= result.host;
  }
  if (parts.includes('verify')) {
    const result = await verifyCost();
    lines.push('', ...result.lines);
    record.verify = result.cells.map(strip);
    host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  if (parts.includes('matrix')) {
    const result = await matrix();
    lines.push('', ...result.lines);
    Object.assign(record, { matrix: result.cells.map(strip), linearity: result.linearity.map(strip), memory: result.memory.map(strip) });
    host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  if (parts.includes('steady')) {
    const result = await steady();
    lines.push('', ...result.lines);
    record.steady = result.cells.map(strip);
    host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  const charts: SweepChart[] = [];
  if (parts.includes('clients')) {
    const result = await clientSweep();
    lines.push('', ...result.lines);
    record.clients = result.cells.map(strip);
    charts.push(result.chart);
    host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  if (parts.includes('rate')) {
    const result = await rateSweep();
    lines.push('', ...result.lines);
    record.rate = result.cells.map(strip);
    charts.push(...result.charts);
    host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  if (host) {
    lines.splice(1, 0, `Host: ${host.cpuModel}, ${host.cores} cores, ${formatSize(host.totalMemoryBytes)}, ${host.platform} ${host.kernel}, ${nodeDescription(host)}`, `Libraries: ${Object.entries(host.libraries).map(([n, v]) => `${n} ${v}`).join(', ')}`);
  }
  const totalSeconds = (Date.now() - started.getTime()) / 1000;
  lines.push('', `Benchmark took ${totalSeconds.toFixed(0)} s.`);
  const text = lines.join('\n');
  process.stdout.write(`${text}\n`);
  await mkdir(projectPath('bench'), { recursive: true });
  // A run of some parts only gets a name of its own, so it never overwrites the day's full run.
  const suffix = `${parts.length === PARTS.length ? '' : `-${parts.join('-')}`}${OPTIONS.transports === undefined ? '' : `-${OPTIONS.transports.join('-')}`}`;
  const file = projectPath('bench', `results-${started.toISOString().slice(0, 10)}${suffix}.json`);
  await writeFile(file, `${JSON.stringify({ ...record, totalSeconds, text }, null, 1)}\n`);
  process.stdout.write(`Written: ${path.relative(process.cwd(), file)}\n`);
  if (charts.length > 0) {
    const page = projectPath('bench', `sweeps-${started.toISOString().slice(0, 10)}${suffix}.html`);
    await writeFile(page, renderSweepPage(`image-transfer-bench sweeps, ${started.toISOString()}`, charts, reportLibraries()));
    process.stdout.write(`Written: ${path.relative(process.cwd(), page)}\n`);
  }
}

await main(OPTIONS.parts);
