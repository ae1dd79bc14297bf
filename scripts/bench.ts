import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { brokerVariables } from '../services/core/config/config.js';
import { errorMessage } from '../services/core/errors.js';
import { nodeDescription, renderTable, type HostFacts, type RunReport } from '../services/core/report/report.js';
import type { SectionResult } from '../services/core/model/section.js';
import { medianOf } from '../services/core/model/stats.js';
import { formatSize } from '../services/core/config/size.js';
import { directoryProblem, makeDirectories } from '../services/shared/directories.js';
import { projectPath } from '../services/shared/paths.js';
import type { LocalServer } from '../services/transports/contract.js';
import { defaultTransports, transportByName, transports } from '../services/transports/index.js';
import { freePortsEnv } from './lib/ports.js';
import { runCeiling } from './lib/ceiling-run.js';
import {
  MIN_CLAIM_ROUNDS,
  percentText,
  summarizeOverhead,
  summarizeTimeOverhead,
  type FigurePair,
  type OverheadSummary,
} from './lib/overhead.js';
import type { CeilingFigures } from './ceiling/drive.js';
import { renderSweepPage, type BenchChart, type SweepChart } from './lib/sweep-page.js';
import { reportLibraries } from '../services/shared/report-assets.js';
import { soakArgs, SOAK_USAGE } from './lib/soak.js';
import { runSoak } from './lib/soak-run.js';

// `npm run bench [-- ceiling verify matrix steady clients rate] [--transports=a,b] [--ceiling-only]
// [--shapes=large,small,latency] [--rounds=N]`:
// the whole suite (`npm start`'s entry, so real processes and private servers), in six parts, all
// by default:
// - ceiling: every transport (or those --transports= names) in three shapes, each suite run
//   followed in the same minute by its library's ceiling client (scripts/ceiling/: the thinnest
//   correct sender and receiver of the same library): 533 KiB at WINDOW=16 (MB/s, the suite also
//   with VERIFY=false), 1 KB at WINDOW=256 (images/s) and 533 KiB one at a time (round trip), or
//   those --shapes= names; ten rounds (--rounds= lowers it, and the output then calls the medians
//   indicative) in rotated order; harness overhead = 1 − median ours ÷ median ceiling (a round
//   trip: 1 − median ceiling ÷ median ours), beside the range of each round's own overhead and, in
//   results.json, each figure's distribution over the rounds. --ceiling-only runs the ceiling
//   clients alone;
// - verify: what VERIFY=false changes in TCP's and ZeroMQ's MB/s at WINDOW=16: five interleaved
//   pairs (on/off, then off/on, ...), the median of the five changes;
// - matrix: image size × WINDOW with three interleaved repeats, then linear assembly and flat memory;
// - steady: the default warm-up (WARMUP=auto) checked: a transport's p50 when it runs first vs
//   last, a default-sized run's p50 (10 images) against a 1,000-image run's, and how much MB/s
//   spreads across repeats at each IMAGE_COUNT;
// - clients: latency and per-client fairness against CLIENTS (1, 10, 50, 200), rounds interleaved;
// - rate: an open loop (RATE) from light load to past saturation: achieved rate, images dropped at
//   the sender, latency from the due time.
// And, only when named: soak, 1 KB images over TCP for 20 million images with both sides' RSS
// sampled, and a verdict on its growth (scripts/lib/soak.ts); a failed verdict exits 1.
// --out=<dir> writes the files there instead of bench/.
// Prints tables and writes bench/results-<date>.json, and its charts (each transport beside its
// ceiling, the two sweeps) in bench/charts-<date>.html. A benchmark, not a test: `npm test` never runs it.

const PARTS = ['ceiling', 'verify', 'matrix', 'steady', 'clients', 'rate'] as const;
type Part = (typeof PARTS)[number] | 'soak';
const SHAPE_NAMES = ['large', 'small', 'latency'] as const;
type ShapeName = (typeof SHAPE_NAMES)[number];
const USAGE =
  `usage: npm run bench [-- [${PARTS.join(' ')}] [--transports=<name>,<name>...] [--ceiling-only] ` +
  `[--shapes=${SHAPE_NAMES.join(',')}] [--rounds=<N>] [--out=<dir>]]\n       npm run bench -- ${SOAK_USAGE} ` +
  `[--out=<dir>]`;

/** What the command line asks for; see optionsFrom. */
interface BenchOptions {
  parts: Part[];
  transports: string[] | undefined;
  ceilingOnly: boolean;
  /** The ceiling part's shapes: all unless --shapes= names some. */
  shapes: ShapeName[];
  /** The ceiling part's rounds: MIN_CLAIM_ROUNDS unless --rounds= says otherwise. */
  rounds: number;
  /** Where results and charts go: bench/ unless --out= says otherwise. */
  outDir: string;
}

/**
 * The parts named on the command line (all when none is), the transports `--transports=` names,
 * --ceiling-only (the ceiling part with its ceiling clients alone, no suite run), the ceiling
 * part's --shapes= and --rounds=, and --out=; anything else exits 2, every problem said at once
 * (`problems`: those soakArgs found already, as it took the soak's flags out of `args`).
 */
function optionsFrom(args: readonly string[], problems: string[]): BenchOptions {
  let chosen: string[] | undefined;
  let ceilingOnly = false;
  let shapes: ShapeName[] = [...SHAPE_NAMES];
  let rounds = MIN_CLAIM_ROUNDS;
  let outDir = projectPath('bench');
  const partNames: string[] = [];
  for (const arg of args) {
    if (arg === '--ceiling-only') ceilingOnly = true;
    else if (arg.startsWith('--out=')) outDir = path.resolve(arg.slice('--out='.length));
    else if (arg.startsWith('--shapes=')) {
      const named = arg
        .slice('--shapes='.length)
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== '');
      const unknown = named.filter((name) => !(SHAPE_NAMES as readonly string[]).includes(name));
      if (unknown.length > 0 || named.length === 0)
        problems.push(`unknown shape ${unknown.join(', ') || '(none given)'}; shapes: ${SHAPE_NAMES.join(', ')}`);
      shapes = SHAPE_NAMES.filter((name) => named.includes(name));
    } else if (arg.startsWith('--rounds=')) {
      const text = arg.slice('--rounds='.length);
      rounds = Number(text);
      if (!/^[0-9]+$/.test(text) || rounds < 1)
        problems.push(`--rounds=${text}: expected a whole number of at least 1`);
    } else if (arg.startsWith('--transports=')) {
      chosen = arg
        .slice('--transports='.length)
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== '');
      const unknown = chosen.filter((name) => !transports.some((t) => t.name === name));
      if (unknown.length > 0 || chosen.length === 0)
        problems.push(
          `unknown transport ${unknown.join(', ') || '(none given)'}; transports: ` +
            transports.map((t) => t.name).join(', '),
        );
    } else if ((PARTS as readonly string[]).includes(arg) || arg === 'soak') partNames.push(arg);
    else problems.push(`unknown part ${arg}; parts: ${PARTS.join(', ')}, soak`);
  }
  if (ceilingOnly && partNames.some((p) => p !== 'ceiling'))
    problems.push(
      `--ceiling-only runs the ceiling part alone, not ${partNames.filter((p) => p !== 'ceiling').join(', ')}`,
    );
  // Checked now, made (one level at a time) only at the end: a benchmark of hours never ends unable to save.
  const outProblem = directoryProblem(outDir);
  if (outProblem !== undefined)
    problems.push(`--out=${outDir}: expected a directory this user can create and write; ${outDir}: ${outProblem}`);
  if (problems.length > 0) {
    process.stderr.write(`bench: ${problems.join('\n')}\n${USAGE}\n`);
    process.exit(2);
  }
  if (ceilingOnly) return { parts: ['ceiling'], transports: chosen, ceilingOnly, shapes, rounds, outDir };
  return {
    parts: partNames.length === 0 ? [...PARTS] : [...PARTS, 'soak' as const].filter((p) => partNames.includes(p)),
    transports: chosen,
    ceilingOnly,
    shapes,
    rounds,
    outDir,
  };
}

const SOAK = soakArgs(process.argv.slice(2));
const OPTIONS = optionsFrom(SOAK.rest, SOAK.problems);
/**
 * The ceiling runs every transport, the matrix and steady parts the default ones, unless --transports= names others.
 */
const CEILING_TRANSPORTS = OPTIONS.transports === undefined ? transports : OPTIONS.transports.map(transportByName);
const TRANSPORTS = OPTIONS.transports ?? defaultTransports.map((t) => t.name);

const ASSET_BYTES = 545_792;
/**
 * Rounds of the ceiling, the transports' order rotated each round: at least MIN_CLAIM_ROUNDS unless --rounds= lowers
 * it.
 */
const CEILING_ROUNDS = OPTIONS.rounds;
/** Said beside the ceiling's medians when they rest on fewer rounds than a claim needs. */
const INDICATIVE_NOTE =
  CEILING_ROUNDS < MIN_CLAIM_ROUNDS
    ? ` With ${CEILING_ROUNDS} rounds (fewer than ${MIN_CLAIM_ROUNDS}) the medians are indicative: no claim rests ` +
      `on them.`
    : '';
const VERIFY = { transports: ['tcp', 'zeromq'], window: 16, warmup: 100, count: 2000, pairs: 5 };
const SIZES = [1000, 64_000, 545_792, 4_000_000, 32_000_000];
const WINDOWS = [1, 16];
const MATRIX_REPEAT = 3;
/** Bytes per matrix section: enough images that a section outlasts timer noise, few enough to finish in minutes. */
const BYTES_PER_SECTION = 64_000_000;
/** Bound on one ceiling run, both processes' start included. */
const CEILING_TIMEOUT_MS = 120_000;
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

/**
 * The clients sweep: 64 KB images at WINDOW=1 per client, IMAGE_COUNT a multiple of the largest
 * CLIENTS so every client carries images; rounds interleaved, the order of the counts rotated.
 */
const CLIENT_SWEEP = { clients: [1, 10, 50, 200], bytes: 64_000, count: 4000, window: 1, warmup: 400, rounds: 2 };
/** The rate sweep: 64 KB images, WINDOW=16 bounding the images in flight, `seconds` of schedule per rate. */
const RATE_SWEEP = {
  rates: [100, 300, 1000, 3000, 10_000, 30_000],
  bytes: 64_000,
  seconds: 2,
  minCount: 200,
  window: 16,
  warmup: 200,
};

/** One run of the suite: its configuration and the report it produced. */
interface Cell {
  name: string;
  env: Record<string, string>;
  report: RunReport;
  seconds: number;
}

const median = (values: readonly number[]): number | null => medianOf(values) ?? null;
const fixed = (value: number | null | undefined, digits: number): string =>
  value === null || value === undefined ? '-' : value.toFixed(digits);
const mib = (bytes: number | undefined): string => (bytes === undefined ? '-' : (bytes / 1024 / 1024).toFixed(0));
const rotated = <T>(items: readonly T[], shift: number): T[] => [
  ...items.slice(shift % items.length),
  ...items.slice(0, shift % items.length),
];

/** Runs the suite once as `npm start` does, with `env`, and returns its results.json. */
async function runSuite(name: string, env: Record<string, string>): Promise<Cell> {
  const outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-bench-'));
  const ports = await freePortsEnv();
  // Each run starts its own servers (a private redis-server), never one that other work shares.
  const brokers = new Set(brokerVariables(transports));
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !brokers.has(key)));
  const startedAt = Date.now();
  process.stderr.write(`bench: ${name} ...`);
  let stderr = '';
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [projectPath('dist', 'scripts', 'start.js')], {
      env: {
        ...inherited,
        LOG_LEVEL: 'warn',
        TRANSPORTS: TRANSPORTS.join(','),
        OUTPUT_DIR: outputDir,
        ...ports,
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    // Progress lines and warnings are kept back unless the run fails.
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', resolve);
  });
  const seconds = (Date.now() - startedAt) / 1000;
  process.stderr.write(
    ` ${seconds.toFixed(1)} s${code === 0 ? '' : ` (exit ${code}: see the FAILED rows)\n${stderr.slice(-4000)}`}\n`,
  );
  const text = await readFile(path.join(outputDir, 'results.json'), 'utf8').catch(() => undefined);
  await rm(outputDir, { recursive: true, force: true });
  // No results at all (bad configuration, a crash): the bench stops here, saying which run and why.
  if (text === undefined)
    throw new Error(`bench: ${name} wrote no results.json (exit ${code}); its stderr ends:\n${stderr.slice(-2000)}`);
  return { name, env, report: JSON.parse(text) as RunReport, seconds };
}

function medianSection(report: RunReport, transport: string): SectionResult | undefined {
  const summary = report.transports.find((t) => t.transport === transport);
  return summary?.medianSection === null || summary === undefined ? undefined : report.sections[summary.medianSection];
}

/**
 * The ceiling's three shapes: large images at a window of 16 (MB/s, the headline overhead), small
 * images at a wide window (per-message overhead: images/s) and large images one at a time
 * (latency: the round trip's p50). Each suite run is followed by its library's ceiling client
 * (scripts/ceiling/) on the same shape, in the same minute; the large shape then runs the suite
 * again with VERIFY=false (the ceiling verifies nothing).
 */
interface CeilingShape {
  name: ShapeName;
  bytes: number;
  count: number;
  window: number;
  warmup: number;
  /** Also run the suite with VERIFY=false. */
  unverified: boolean;
}

// Warm and steady: JIT and socket buffers settle in the untimed images; the timed ones outlast timer noise.
const ALL_CEILING_SHAPES: readonly CeilingShape[] = [
  { name: 'large', bytes: ASSET_BYTES, count: 1000, window: 16, warmup: 100, unverified: true },
  { name: 'small', bytes: 1024, count: 20_000, window: 256, warmup: 2000, unverified: false },
  { name: 'latency', bytes: ASSET_BYTES, count: 300, window: 1, warmup: 100, unverified: false },
];
/** The shapes this run measures (--shapes=), in their order. */
const CEILING_SHAPES = ALL_CEILING_SHAPES.filter((shape) => OPTIONS.shapes.includes(shape.name));

/** One round of one transport and shape: the suite's run and its ceiling's, in the same minute. */
interface CeilingCell {
  transport: string;
  shape: CeilingShape['name'];
  round: number;
  /** Undefined under --ceiling-only. */
  ours: SectionResult | undefined;
  /** The suite again with VERIFY=false (large shape only): the harness apart from the integrity check. */
  oursUnverified: SectionResult | undefined;
  ceiling: CeilingFigures | { failed: string };
}

/** A transport's cells of one shape over the rounds: the figures compared, and the overhead. */
interface CeilingSummary {
  transport: string;
  shape: CeilingShape['name'];
  /**
   * What the overhead is over: MB/s (large), images/s (small), the round trip's p50 (latency, where lower is better).
   */
  figure: 'MB/s' | 'images/s' | 'RTT p50 ms';
  overhead: OverheadSummary;
  /** Large shape: against the suite with VERIFY=false. */
  overheadUnverified: OverheadSummary | null;
}

const ceilingFigureOf = (cell: CeilingCell): CeilingFigures | undefined =>
  'failed' in cell.ceiling ? undefined : cell.ceiling;

/**
 * Each transport's overhead per shape, from the rounds' pairs (latency: ours over ceiling of the RTT p50, as "overhead"
 * 1 − ceiling ÷ ours).
 */
function summarizeCeiling(cells: readonly CeilingCell[]): CeilingSummary[] {
  return CEILING_TRANSPORTS.flatMap((t) =>
    CEILING_SHAPES.map((shape): CeilingSummary => {
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
async function startCeilingBrokers(): Promise<{ urls: Map<string, string>; close(): Promise<void> }> {
  const urls = new Map<string, string>();
  const servers: LocalServer[] = [];
  const byCommand = new Map<string, string>();
  try {
    for (const transport of CEILING_TRANSPORTS) {
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

async function ceiling(ceilingOnly: boolean): Promise<{
  lines: string[];
  cells: CeilingCell[];
  summary: CeilingSummary[];
  charts: BenchChart[];
  host: HostFacts | undefined;
}> {
  const cells: CeilingCell[] = [];
  let host: HostFacts | undefined;
  const brokers = await startCeilingBrokers();
  try {
    for (let round = 1; round <= CEILING_ROUNDS; round++) {
      for (const transport of rotated(CEILING_TRANSPORTS, round - 1)) {
        for (const shape of CEILING_SHAPES) {
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
            : await runSuite(`ceiling ${transport.name}, ${shape.name}, round ${round}`, env);
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
              ? await runSuite(`ceiling ${transport.name}, ${shape.name}, round ${round}, VERIFY=false`, {
                  ...env,
                  VERIFY: 'false',
                })
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
  const summary = summarizeCeiling(cells);
  return {
    cells,
    summary,
    host,
    lines: ceilingLines(cells, summary, ceilingOnly),
    charts: ceilingCharts(summary, ceilingOnly),
  };
}

/** The bars of the bench's page: each transport's median beside its ceiling's, MB/s (large) and images/s (small). */
function ceilingCharts(summary: readonly CeilingSummary[], ceilingOnly: boolean): BenchChart[] {
  const large = CEILING_SHAPES.find((shape) => shape.name === 'large');
  const small = CEILING_SHAPES.find((shape) => shape.name === 'small');
  const bars = (shape: CeilingShape, title: string, yLabel: string): BenchChart => {
    const own = CEILING_TRANSPORTS.map(
      (t) => summary.find((s) => s.transport === t.name && s.shape === shape.name)?.overhead,
    );
    return {
      kind: 'bars',
      id: `ceiling-${shape.name}`,
      title,
      note:
        `${formatSize(shape.bytes)} × ${shape.count.toLocaleString('en-US')} ` +
        `after ${shape.warmup.toLocaleString('en-US')} untimed, WINDOW=${shape.window}; medians ` +
        `of ${CEILING_ROUNDS} rounds, each suite run followed by its ceiling client in the same ` +
        `minute.${INDICATIVE_NOTE} Harness overhead = 1 − median ours ÷ median ceiling (the bars' own figures), ` +
        `with the range of each round's own overhead: ` +
        CEILING_TRANSPORTS.map(
          (t, i) =>
            `${t.label} ${percentText(own[i]?.overhead ?? null)}` +
            (own[i]?.overheadMin == null
              ? ''
              : ` (${percentText(own[i]!.overheadMin)} – ${percentText(own[i]!.overheadMax ?? null)})`),
        ).join(', ') +
        `.`,
      yLabel,
      categories: CEILING_TRANSPORTS.map((t) => t.label),
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
function ceilingLines(
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
    CEILING_TRANSPORTS.map((t) => {
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
    CEILING_TRANSPORTS.map((t) => {
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
    CEILING_TRANSPORTS.map((t) => {
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
        `(scripts/ceiling/), two processes; ${CEILING_ROUNDS} rounds, the transports' order rotated; medians of ` +
        `the rounds.${INDICATIVE_NOTE}`
      : `Ceiling: each suite run followed in the same minute by its library's ceiling client (scripts/ceiling/: ` +
        `the thinnest correct sender and receiver of the same library, the same images, WINDOW, ack and write ` +
        `calls, no verification; its span from the first timed send to the last timed arrival, as the suite's), ` +
        `two processes each; ${CEILING_ROUNDS} rounds, the transports' order rotated; medians of the ` +
        `rounds.${INDICATIVE_NOTE} Harness overhead = 1 − median ours ÷ median ceiling, from the medians shown; ` +
        `its range: each round's own pair's overhead, least to most. Each figure's distribution over the rounds ` +
        `(min, quartiles, max) is in results.json.`,
    ...CEILING_SHAPES.flatMap((shape) => tables[shape.name](shape)),
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
        TRANSPORTS: VERIFY.transports.join(','),
        IMAGE_SIZE: String(ASSET_BYTES),
        IMAGE_COUNT: String(VERIFY.count),
        WARMUP: String(VERIFY.warmup),
        WINDOW: String(VERIFY.window),
        REPEAT: '1',
        VERIFY: verify,
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
    const mbps = (verify: string): number[] =>
      cells
        .filter((c) => c.env.VERIFY === verify)
        .flatMap((c) => medianSection(c.report, transport)?.throughputMBps ?? []);
    const verifyMs = cells
      .filter((c) => c.env.VERIFY === 'true')
      .flatMap((c) => medianSection(c.report, transport)?.verifyMs ?? []);
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
      `What verification costs: ${VERIFY.transports.join(' and ')}, ${formatSize(ASSET_BYTES)} × ${VERIFY.count}` +
        ` after ${VERIFY.warmup} untimed, WINDOW=${VERIFY.window}; ${VERIFY.pairs} interleaved pairs. Change = ` +
        `MB/s with VERIFY=false over MB/s with VERIFY=true, per pair.`,
      renderTable(
        ['Transport', 'MB/s verify on', 'MB/s verify off', 'change per pair %', 'median change', 'hash ms/img'],
        rows,
        false,
      ),
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
        summary?.spread.throughputMBps
          ? `${summary.spread.throughputMBps.min.toFixed(0)}–${summary.spread.throughputMBps.max.toFixed(0)}`
          : '-',
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
  return renderTable(
    [
      'Transport',
      'Image',
      'Win',
      'Images',
      'MB/s',
      'MB/s range',
      'images/s',
      'p50 ms',
      'p99 ms',
      'RTT p50',
      'TX CPU ms/img',
      'RX CPU ms/img',
      'TX RSS MiB',
      'RX RSS MiB',
      'Result',
    ],
    rows,
  );
}

function imageCountFor(sizeBytes: number): number {
  return Math.min(1000, Math.max(8, Math.round(BYTES_PER_SECTION / sizeBytes)));
}

async function matrix(): Promise<{ lines: string[]; cells: Cell[]; linearity: Cell[]; memory: Cell[] }> {
  const cells: Cell[] = [];
  for (const window of WINDOWS) {
    for (const size of SIZES) {
      cells.push(
        await runSuite(`${formatSize(size)} × window ${window}`, {
          IMAGE_SIZE: String(size),
          IMAGE_COUNT: String(imageCountFor(size)),
          WINDOW: String(window),
          REPEAT: String(MATRIX_REPEAT),
          IMAGE_TIMEOUT_MS: '60000',
        }),
      );
    }
  }
  // Linear assembly: MB/s should not fall as images grow (no copy of the whole per chunk).
  const linearity = [
    await runSuite('256 MiB × window 1 (linearity)', {
      IMAGE_SIZE: '256MiB',
      IMAGE_COUNT: '3',
      WARMUP: '1',
      WINDOW: '1',
      REPEAT: '1',
      IMAGE_TIMEOUT_MS: '60000',
    }),
  ];
  // Flat memory: peak RSS must not grow with the number of images, and stays bounded for big ones.
  const memory = [
    await runSuite('1 MB × 100 (memory)', { IMAGE_SIZE: '1MB', IMAGE_COUNT: '100', WINDOW: '16', REPEAT: '1' }),
    await runSuite('1 MB × 1000 (memory)', { IMAGE_SIZE: '1MB', IMAGE_COUNT: '1000', WINDOW: '16', REPEAT: '1' }),
    await runSuite('64 MB × window 4 (memory)', {
      IMAGE_SIZE: '64MB',
      IMAGE_COUNT: '6',
      WARMUP: '1',
      WINDOW: '4',
      REPEAT: '1',
      IMAGE_TIMEOUT_MS: '60000',
    }),
  ];
  const sizeRows = TRANSPORTS.map((transport) => {
    const at = (cell: Cell | undefined): string =>
      fixed(cell && medianSection(cell.report, transport)?.throughputMBps, 1);
    const bySize = (size: number): Cell | undefined =>
      cells.find((c) => c.report.run.imageSizeBytes === size && c.report.run.window === 1);
    return [transport, at(bySize(4_000_000)), at(bySize(32_000_000)), at(linearity[0])];
  });
  const memoryRows = TRANSPORTS.map((transport) => {
    const side = (cell: Cell | undefined, which: 'transmitter' | 'receiver'): string =>
      mib(cell && medianSection(cell.report, transport)?.cost[which]?.peakRssBytes);
    return [
      transport,
      side(memory[0], 'transmitter'),
      side(memory[1], 'transmitter'),
      side(memory[0], 'receiver'),
      side(memory[1], 'receiver'),
      side(memory[2], 'transmitter'),
      side(memory[2], 'receiver'),
    ];
  });
  return {
    cells,
    linearity,
    memory,
    lines: [
      `Matrix: each cell ${MATRIX_REPEAT} interleaved repeats (order rotated), median completed section by ` +
        `total transfer time; MB/s range = min–max across completed repeats.`,
      matrixTable(cells),
      '',
      'Linear assembly, window 1 (MB/s):',
      renderTable(['Transport', '4 MB', '32 MB', '256 MiB'], sizeRows, false),
      '',
      'Peak RSS (MiB) of each side: 1 MB images × 100 vs × 1,000 (window 16), and 64 MB images (window 4; bound ' +
        '6 × 64 MB × 4 = 1,536 MB):',
      renderTable(
        ['Transport', 'TX ×100', 'TX ×1000', 'RX ×100', 'RX ×1000', 'TX 64 MB', 'RX 64 MB'],
        memoryRows,
        false,
      ),
    ],
  };
}

const p50Of = (cell: Cell, transport: string): number | undefined =>
  medianSection(cell.report, transport)?.latency?.p50Ms;

async function steady(): Promise<{ lines: string[]; cells: Cell[] }> {
  const cells: Cell[] = [];
  // Position: p50 of each transport when it ran first and when it ran last in its process pair.
  const first = new Map<string, number[]>(TRANSPORTS.map((t) => [t, []]));
  const last = new Map<string, number[]>(TRANSPORTS.map((t) => [t, []]));
  for (let round = 1; round <= STEADY.positionRounds; round++) {
    for (let shift = 0; shift < TRANSPORTS.length; shift++) {
      const order = rotated(TRANSPORTS, shift);
      const cell = await runSuite(`steady: position, round ${round}, ${order.join(',')}`, {
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
  const positionRows = TRANSPORTS.map((t) => {
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
      runs[kind] = await runSuite(
        `steady: ${byRun[kind]} (${sizeEnv[kind].IMAGE_COUNT} images), round ${pair}`,
        sizeEnv[kind],
      );
      cells.push(runs[kind]);
    }
    for (const t of TRANSPORTS) {
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
  const sizeRows = TRANSPORTS.map((t) => {
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
  // Stability: how far MB/s moves across repeats of one run, per IMAGE_COUNT.
  const stabilityCells: Cell[] = [];
  for (const count of STEADY.stabilityCounts) {
    const cell = await runSuite(`steady: MB/s spread at ${count} images`, {
      IMAGE_COUNT: String(count),
      REPEAT: String(STEADY.stabilityRepeat),
    });
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

// Several clients: websocket-push takes one (its receiver dials back once).
const multiClientTransports = (): string[] =>
  TRANSPORTS.filter((name) => transportByName(name).traits.maxClients === undefined);

async function clientSweep(): Promise<{ lines: string[]; cells: Cell[]; chart: SweepChart }> {
  const cells: Cell[] = [];
  const names = multiClientTransports();
  for (let round = 0; round < CLIENT_SWEEP.rounds; round++) {
    for (const clients of rotated(CLIENT_SWEEP.clients, round)) {
      cells.push(
        await runSuite(`clients ${clients}, round ${round + 1}`, {
          TRANSPORTS: names.join(','),
          CLIENTS: String(clients),
          IMAGE_SIZE: String(CLIENT_SWEEP.bytes),
          IMAGE_COUNT: String(CLIENT_SWEEP.count),
          WINDOW: String(CLIENT_SWEEP.window),
          WARMUP: String(CLIENT_SWEEP.warmup),
        }),
      );
    }
  }
  // Per transport and client count: the median over the rounds of each figure.
  const figure = (
    transport: string,
    clients: number,
    of: (s: SectionResult) => number | null | undefined,
  ): number | null =>
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
      fixed(
        figure(transport, clients, (s) => s.latency?.p50Ms),
        3,
      ),
      fixed(
        figure(transport, clients, (s) => s.latency?.p99Ms),
        3,
      ),
      fixed(
        figure(transport, clients, (s) => s.rtt?.p99Ms),
        3,
      ),
      fixed(
        figure(transport, clients, (s) => s.throughputMBps),
        1,
      ),
      fixed(
        figure(transport, clients, (s) => s.clientFairness?.slowestMBps),
        2,
      ),
      fixed(
        figure(transport, clients, (s) => s.clientFairness?.fastestMBps),
        2,
      ),
      fixed(
        figure(transport, clients, (s) => s.clientFairness?.jainIndex),
        3,
      ),
    ]),
  );
  const note =
    `${formatSize(CLIENT_SWEEP.bytes)} × ${CLIENT_SWEEP.count} images per section after ${CLIENT_SWEEP.warmup} ` +
    `untimed, WINDOW=${CLIENT_SWEEP.window} per client, the images dealt to whichever client has room; median ` +
    `of ${CLIENT_SWEEP.rounds} interleaved rounds.`;
  return {
    cells,
    chart: {
      id: 'latency-vs-clients',
      title: 'p99 one-way latency against clients',
      note,
      xLabel: 'CLIENTS (connections, each with its own window)',
      yLabel: 'p99 one-way ms',
      series: names.map((transport) => ({
        label: transportByName(transport).label,
        points: CLIENT_SWEEP.clients.map((clients) => ({
          x: clients,
          y: figure(transport, clients, (s) => s.latency?.p99Ms),
        })),
      })),
    },
    lines: [
      `Clients: ${note}`,
      renderTable(
        [
          'Transport',
          'clients',
          'p50 ms',
          'p99 ms',
          'RTT p99 ms',
          'MB/s',
          'slowest client MB/s',
          'fastest client MB/s',
          'Jain',
        ],
        rows,
        false,
      ),
    ],
  };
}

async function rateSweep(): Promise<{ lines: string[]; cells: Cell[]; charts: SweepChart[] }> {
  const cells: Cell[] = [];
  for (const rate of RATE_SWEEP.rates) {
    const count = Math.max(RATE_SWEEP.minCount, rate * RATE_SWEEP.seconds);
    cells.push(
      await runSuite(`RATE ${rate}`, {
        RATE: String(rate),
        IMAGE_SIZE: String(RATE_SWEEP.bytes),
        IMAGE_COUNT: String(count),
        WINDOW: String(RATE_SWEEP.window),
        WARMUP: String(RATE_SWEEP.warmup),
      }),
    );
  }
  const sectionAt = (transport: string, rate: number): SectionResult | undefined => {
    const cell = cells.find((c) => c.env.RATE === String(rate));
    return cell === undefined
      ? undefined
      : (medianSection(cell.report, transport) ?? cell.report.sections.find((s) => s.transport === transport));
  };
  const rows = TRANSPORTS.flatMap((transport) =>
    RATE_SWEEP.rates.map((rate) => {
      const s = sectionAt(transport, rate);
      const open = s?.openLoop;
      return [
        transportByName(transport).label,
        String(rate),
        fixed(open?.achievedRatePerSecond, 0),
        fixed(open?.deliveredRatePerSecond, 0),
        open ? (open.overloaded ? 'OVERLOADED' : 'kept up') : '-',
        fixed(open?.sendLag?.p99Ms, 3),
        fixed(open?.latencyFromDue?.p50Ms, 3),
        fixed(open?.latencyFromDue?.p99Ms, 3),
        fixed(s?.latency?.p99Ms, 3),
        s?.ok ? 'ok' : `FAILED${s?.failure ? `: ${s.failure}` : ''}`,
      ];
    }),
  );
  const rateChart = (
    id: string,
    title: string,
    chartNote: string,
    yLabel: string,
    of: (section: SectionResult | undefined) => number | null | undefined,
  ): SweepChart => ({
    id,
    title,
    note: chartNote,
    xLabel: 'RATE, images/s offered',
    yLabel,
    series: TRANSPORTS.map((transport) => ({
      label: transportByName(transport).label,
      points: RATE_SWEEP.rates.map((rate) => ({ x: rate, y: of(sectionAt(transport, rate)) ?? null })),
    })),
  });
  const note =
    `${formatSize(RATE_SWEEP.bytes)} images on an open-loop schedule, ${RATE_SWEEP.seconds} s per rate (at ` +
    `least ${RATE_SWEEP.minCount} images) after ${RATE_SWEEP.warmup} untimed, WINDOW=${RATE_SWEEP.window} bounding ` +
    `the images in flight: past saturation the sent and delivered rates stop rising, the images due wait for a ` +
    `window slot and go late (their wait is in the times from due), and the section is OVERLOADED; it then lasts ` +
    `as long as the transport needs, not ${RATE_SWEEP.seconds} s.`;
  return {
    cells,
    charts: [
      rateChart(
        'latency-vs-rate',
        'p99 latency from the due time against offered load',
        note,
        'p99 one-way ms from due time',
        (section) => section?.openLoop?.latencyFromDue?.p99Ms,
      ),
      rateChart(
        'achieved-vs-rate',
        'Achieved rate against offered load',
        'Images per second actually sent (first send to last) against RATE: on the diagonal below saturation, ' +
          'flat past it, where the images that fall due while WINDOW are in flight wait for a slot and go late.',
        'images/s achieved',
        (section) => section?.openLoop?.achievedRatePerSecond,
      ),
    ],
    lines: [
      `Rate: ${note}`,
      renderTable(
        [
          'Transport',
          'RATE/s',
          'sent/s',
          'delivered/s',
          'load',
          'send lag p99',
          'from due p50',
          'from due p99',
          'one-way p99',
          'Result',
        ],
        rows,
      ),
    ],
  };
}

async function main(parts: readonly Part[]): Promise<void> {
  const started = new Date();
  const narrowed =
    `${OPTIONS.transports === undefined ? '' : `; transports: ${OPTIONS.transports.join(', ')}`}` +
    (parts.includes('ceiling') ? `; ceiling: ${OPTIONS.shapes.join(', ')}, ${CEILING_ROUNDS} rounds` : '');
  const lines: string[] = [
    `image-transfer-bench benchmark, ${started.toISOString()} (parts: ${parts.join(', ')}${narrowed})`,
  ];
  const record: Record<string, unknown> = {
    startedAt: started.toISOString(),
    parts,
    transports: OPTIONS.transports ?? null,
  };
  // Per-second series and histograms stay out (each run's results.json has them): the file keeps every section's
  // figures.
  const strip = (cell: Cell) => ({
    name: cell.name,
    env: cell.env,
    seconds: cell.seconds,
    report: {
      ...cell.report,
      sections: cell.report.sections.map(({ series: _series, histograms: _histograms, ...rest }) => rest),
    },
  });
  let host: HostFacts | undefined;
  const charts: BenchChart[] = [];
  if (parts.includes('ceiling')) {
    const result = await ceiling(OPTIONS.ceilingOnly);
    lines.push('', ...result.lines);
    const section = (result: SectionResult | undefined) =>
      result && (({ series: _series, histograms: _histograms, ...rest }) => rest)(result);
    record.ceiling = {
      ceilingOnly: OPTIONS.ceilingOnly,
      shapes: CEILING_SHAPES,
      rounds: CEILING_ROUNDS,
      // Fewer rounds than a claim needs: the medians are indicative, and say so here too.
      indicative: CEILING_ROUNDS < MIN_CLAIM_ROUNDS,
      // Per transport and shape: the medians compared, the harness overhead they give (1 − median ours ÷ median
      // ceiling; a round trip 1 − median ceiling ÷ median ours), the range of each round's own overhead, and each
      // figure's distribution over the rounds (min, quartiles, median, max).
      summary: result.summary,
      cells: result.cells.map((c) => ({
        transport: c.transport,
        shape: c.shape,
        round: c.round,
        ceiling: c.ceiling,
        ours: section(c.ours),
        oursUnverified: section(c.oursUnverified),
      })),
    };
    charts.push(...result.charts);
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
    Object.assign(record, {
      matrix: result.cells.map(strip),
      linearity: result.linearity.map(strip),
      memory: result.memory.map(strip),
    });
    host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  if (parts.includes('steady')) {
    const result = await steady();
    lines.push('', ...result.lines);
    record.steady = result.cells.map(strip);
    host ??= result.cells[0]?.report.run.hosts.receiver;
  }
  // Only single-client transports chosen: nothing to sweep (and an empty TRANSPORTS is refused).
  if (parts.includes('clients') && multiClientTransports().length === 0)
    lines.push('', `Clients: skipped, every transport chosen takes one client (${TRANSPORTS.join(', ')}).`);
  else if (parts.includes('clients')) {
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
  if (parts.includes('soak')) {
    const result = await runSoak(SOAK.options);
    lines.push('', ...result.lines);
    record.soak = result.record;
    charts.push(...result.charts);
    host ??= result.host;
    if (!result.verdict.pass) process.exitCode = 1;
  }
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
  await makeDirectories(OPTIONS.outDir);
  // A run of some parts only gets a name of its own, so it never overwrites the day's full run.
  const suffix =
    `${parts.length === PARTS.length ? '' : `-${parts.join('-')}`}${OPTIONS.ceilingOnly ? '-only' : ''}` +
    (OPTIONS.transports === undefined ? '' : `-${OPTIONS.transports.join('-')}`) +
    (OPTIONS.shapes.length === SHAPE_NAMES.length ? '' : `-${OPTIONS.shapes.join('-')}`);
  const file = path.join(OPTIONS.outDir, `results-${started.toISOString().slice(0, 10)}${suffix}.json`);
  await writeFile(file, `${JSON.stringify({ ...record, totalSeconds, text }, null, 1)}\n`);
  process.stdout.write(`Written: ${path.relative(process.cwd(), file)}\n`);
  if (charts.length > 0) {
    const page = path.join(OPTIONS.outDir, `charts-${started.toISOString().slice(0, 10)}${suffix}.html`);
    await writeFile(
      page,
      renderSweepPage(`image-transfer-bench benchmark, ${started.toISOString()}`, charts, reportLibraries()),
    );
    process.stdout.write(`Written: ${path.relative(process.cwd(), page)}\n`);
  }
}

await main(OPTIONS.parts);
