import path from 'node:path';
import { directoryProblem } from '../../services/shared/directories.js';
import { projectPath } from '../../services/shared/paths.js';
import { parseSize, SIZE_UNITS_HELP } from '../../services/core/config/size.js';
import { defaultTransports, transportByName, transports } from '../../services/transports/index.js';
import { indicativeNote, MIN_CLAIM_ROUNDS } from '../lib/overhead.js';
import { SOAK_USAGE } from '../lib/soak.js';
import { ALL_CEILING_SHAPES, SHAPE_NAMES, type ShapeName } from './ceiling-model.js';
import type { BenchPlan } from './plan.js';
import { DEFAULT_CAPACITY_MISS_PERCENT, DEFAULT_CAPACITY_ROUNDS, DEFAULT_CAPACITY_SIZES } from './capacity.js';
import {
  DEFAULT_DELAY_IMAGES,
  DEFAULT_DELAY_MS,
  DEFAULT_DELAY_ROUNDS,
  DELAY_TRANSPORTS,
  relayProblem,
} from './delay.js';

// The command line: the parts it names and their options, every problem said at once (exit 2), and the plan the
// parts read.

/** The parts a bench runs when none is named, in their order (the NAMED_ONLY_PARTS run only when named). */
export const PARTS = ['ceiling', 'verify', 'matrix', 'steady', 'clients', 'rate'] as const;
/** The parts that run only when named, in their order after PARTS. */
export const NAMED_ONLY_PARTS = ['soak', 'grpc-options', 'delay', 'capacity'] as const;
/** A part the command line can name. */
export type Part = (typeof PARTS)[number] | (typeof NAMED_ONLY_PARTS)[number];
/** Largest --delay-ms=: a second each way is already a satellite link. */
const MAX_DELAY_MS = 1000;
/** Largest --deadline-ms=: a minute, already far past any camera's use for a frame. */
const MAX_CAPACITY_DEADLINE_MS = 60_000;
/** What a bad command line is told after its problems. */
export const USAGE =
  `usage: npm run bench [-- [${PARTS.join(' ')}] [--transports=<name>,<name>...] [--ceiling-only] ` +
  `[--shapes=${SHAPE_NAMES.join(',')}] [--rounds=<N>] [--minutes=<N>] [--unverified|--no-unverified] ` +
  `[--out=<dir>]]\n       npm run bench -- delay ` +
  `[--transports=<name>,<name>...] [--delay-ms=<ms>] [--delay-images=<N>] [--rounds=<N>] [--out=<dir>]\n` +
  `       npm run bench -- grpc-options [--shapes=large,small] [--rounds=<N>] [--count=<N>] [--out=<dir>]\n` +
  `       npm run bench -- capacity [--transports=<name>,<name>...] [--sizes=<size>,<size>...] ` +
  `[--deadline-ms=<ms>] [--deadline-miss-percent=<percent>] [--rounds=<N>] [--out=<dir>]\n` +
  `       npm run bench -- ${SOAK_USAGE} [--out=<dir>]`;

/** What the command line asks for; see optionsFrom. */
export interface BenchOptions {
  parts: Part[];
  transports: string[] | undefined;
  ceilingOnly: boolean;
  /** The ceiling part's shapes: all unless --shapes= names some. */
  shapes: ShapeName[];
  /**
   * --rounds=: the ceiling part's (MIN_CLAIM_ROUNDS when unset), the delay part's (DEFAULT_DELAY_ROUNDS) and the
   * capacity part's (DEFAULT_CAPACITY_ROUNDS).
   */
  rounds: number | undefined;
  /** --minutes=: the ceiling part's time budget; undefined: DEFAULT_CEILING_MINUTES unless --rounds= is given. */
  minutes: number | undefined;
  /** --unverified / --no-unverified: the large shape's VERIFY=false pass; undefined: only with --transports=. */
  unverified: boolean | undefined;
  /** The delay part's delay each way (ms): DEFAULT_DELAY_MS unless --delay-ms= says otherwise. */
  delayMs: number;
  /** The delay part's recorded images per section: DEFAULT_DELAY_IMAGES unless --delay-images= says otherwise. */
  delayImages: number;
  /** Where results and charts go: bench/ unless --out= says otherwise. */
  outDir: string;
  /** The grpc-options part's timed images per run instead of each shape's count (--count=, a smoke run). */
  images: number | undefined;
  /** The capacity part's image sizes in bytes (--sizes=): DEFAULT_CAPACITY_SIZES when unset. */
  capacitySizes: number[];
  /** The capacity part's deadline (--deadline-ms=); undefined: one frame interval at each rate. */
  capacityDeadlineMs: number | undefined;
  /** The capacity part's allowed share of frames missing the deadline, in percent (--deadline-miss-percent=). */
  capacityMissPercent: number;
}

/**
 * The parts named on the command line (all when none is), the transports `--transports=` names, --ceiling-only (the
 * ceiling part with its ceiling clients alone, no suite run), the ceiling part's --shapes= and --rounds= (the
 * grpc-options part's too), the grpc-options part's --count=, the delay part's --delay-ms=, --delay-images= and
 * --rounds=, the capacity part's --sizes=, --deadline-ms=, --deadline-miss-percent= and --rounds=, and --out=; anything
 * else exits 2, every problem said at once (`problems`: those soakArgs found already,
 * as it took the soak's flags out of `args`).
 */
export function optionsFrom(args: readonly string[], problems: string[]): BenchOptions {
  let chosen: string[] | undefined;
  let ceilingOnly = false;
  let shapes: ShapeName[] = [...SHAPE_NAMES];
  let rounds: number | undefined;
  let minutes: number | undefined;
  let unverified: boolean | undefined;
  let delayMs = DEFAULT_DELAY_MS;
  let delayImages = DEFAULT_DELAY_IMAGES;
  const delayFlags: string[] = [];
  let capacitySizes = [...DEFAULT_CAPACITY_SIZES];
  let capacityDeadlineMs: number | undefined;
  let capacityMissPercent = DEFAULT_CAPACITY_MISS_PERCENT;
  const capacityFlags: string[] = [];
  let outDir = projectPath('bench');
  let images: number | undefined;
  const partNames: string[] = [];
  for (const arg of args) {
    if (arg === '--ceiling-only') ceilingOnly = true;
    else if (arg === '--unverified' || arg === '--no-unverified') unverified = arg === '--unverified';
    else if (arg.startsWith('--minutes=')) minutes = numberArg(arg, 'a number of minutes above 0', problems, DECIMAL);
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
    } else if (arg.startsWith('--rounds=')) rounds = numberArg(arg, AT_LEAST_ONE, problems);
    else if (arg.startsWith('--count=')) images = numberArg(arg, AT_LEAST_ONE, problems);
    else if (arg.startsWith('--delay-ms=')) {
      const text = arg.slice('--delay-ms='.length);
      delayMs = Number(text);
      delayFlags.push('--delay-ms');
      if (!/^[0-9]+(\.[0-9]+)?$/.test(text) || delayMs <= 0 || delayMs > MAX_DELAY_MS)
        problems.push(`--delay-ms=${text}: expected a number of milliseconds above 0 and at most ${MAX_DELAY_MS}`);
    } else if (arg.startsWith('--delay-images=')) {
      delayImages = numberArg(arg, AT_LEAST_ONE, problems) ?? DEFAULT_DELAY_IMAGES;
      delayFlags.push('--delay-images');
    } else if (arg.startsWith('--sizes=')) {
      const texts = arg.slice('--sizes='.length).split(',');
      capacityFlags.push('--sizes');
      capacitySizes = texts.map((text) => parseSize(text) ?? 0);
      const bad = texts.filter((_, i) => capacitySizes[i]! < 1);
      if (bad.length > 0)
        problems.push(`--sizes=${bad.join(',')}: expected sizes of at least 1 byte, each ${SIZE_UNITS_HELP}`);
    } else if (arg.startsWith('--deadline-ms=')) {
      const text = arg.slice('--deadline-ms='.length);
      capacityDeadlineMs = Number(text);
      capacityFlags.push('--deadline-ms');
      if (!/^[0-9]+(\.[0-9]+)?$/.test(text) || capacityDeadlineMs <= 0 || capacityDeadlineMs > MAX_CAPACITY_DEADLINE_MS)
        problems.push(
          `--deadline-ms=${text}: expected a number of milliseconds above 0 and at most ${MAX_CAPACITY_DEADLINE_MS}`,
        );
    } else if (arg.startsWith('--deadline-miss-percent=')) {
      const text = arg.slice('--deadline-miss-percent='.length);
      capacityMissPercent = Number(text);
      capacityFlags.push('--deadline-miss-percent');
      if (!/^[0-9]+(\.[0-9]+)?$/.test(text) || capacityMissPercent > 100)
        problems.push(`--deadline-miss-percent=${text}: expected a percentage from 0 to 100`);
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
    } else if ([...PARTS, ...NAMED_ONLY_PARTS].includes(arg as Part)) partNames.push(arg);
    else problems.push(`unknown part ${arg}; parts: ${[...PARTS, ...NAMED_ONLY_PARTS].join(', ')}`);
  }
  if (delayFlags.length > 0 && !partNames.includes('delay'))
    problems.push(
      `${[...new Set(delayFlags)].join(', ')} ${delayFlags.length === 1 ? 'is' : 'are'} the delay part's: name it`,
    );
  if (capacityFlags.length > 0 && !partNames.includes('capacity')) {
    const named = [...new Set(capacityFlags)];
    problems.push(`${named.join(', ')} ${named.length === 1 ? 'is' : 'are'} the capacity part's: name it`);
  }
  // Only transports on one port of the receiver's own can sit behind the relays.
  if (partNames.includes('delay'))
    for (const name of chosen ?? []) {
      const transport = transports.find((t) => t.name === name);
      const problem = transport && relayProblem(transport);
      if (problem !== undefined) problems.push(`the delay part cannot relay ${name}: ${problem}`);
    }
  if (ceilingOnly && partNames.some((p) => p !== 'ceiling'))
    problems.push(
      `--ceiling-only runs the ceiling part alone, not ${partNames.filter((p) => p !== 'ceiling').join(', ')}`,
    );
  if (images !== undefined && !partNames.includes('grpc-options'))
    problems.push("--count= sets the grpc-options part's image count: name that part");
  // Checked now, made (one level at a time) only at the end: a benchmark of hours never ends unable to save.
  const outProblem = directoryProblem(outDir);
  if (outProblem !== undefined)
    problems.push(`--out=${outDir}: expected a directory this user can create and write; ${outDir}: ${outProblem}`);
  if (problems.length > 0) {
    process.stderr.write(`bench: ${problems.join('\n')}\n${USAGE}\n`);
    process.exit(2);
  }
  const parts: Part[] = ceilingOnly
    ? ['ceiling']
    : partNames.length === 0
      ? [...PARTS]
      : [...PARTS, ...NAMED_ONLY_PARTS].filter((p) => partNames.includes(p));
  return {
    parts,
    transports: chosen,
    ceilingOnly,
    shapes,
    rounds,
    minutes,
    unverified,
    delayMs,
    delayImages,
    outDir,
    images,
    // The same size named twice would be searched twice.
    capacitySizes: [...new Set(capacitySizes)],
    capacityDeadlineMs,
    capacityMissPercent,
  };
}

export type { BenchPlan } from './plan.js';

/**
 * The ceiling part's time budget when neither --rounds= nor --minutes= is given: every transport in three shapes fits
 * seven rounds in it on a 2-core host (2026-11-29: 1,761 s for seven, the longest 259 s, no VERIFY=false pass),
 * enough for each median's 95 % interval (six rounds or more).
 */
export const DEFAULT_CEILING_MINUTES = 30;

const AT_LEAST_ONE = 'a whole number of at least 1';
/** A number of this form, above 0: "2", "0.5". */
const DECIMAL = /^[0-9]+(\.[0-9]+)?$/;

/**
 * The number of a `--flag=value` argument when `value` has the form `pattern` (whole numbers by default) and is above
 * 0; otherwise undefined, and a problem saying what `expected` is.
 */
function numberArg(arg: string, expected: string, problems: string[], pattern = /^[0-9]+$/): number | undefined {
  const at = arg.indexOf('=');
  const text = arg.slice(at + 1);
  const value = Number(text);
  if (pattern.test(text) && value > 0) return value;
  problems.push(`${arg.slice(0, at)}=${text}: expected ${expected}`);
  return undefined;
}

/** The plan of a run with `options`. */
export function planFrom(options: BenchOptions): BenchPlan {
  const ceilingRounds = options.rounds ?? MIN_CLAIM_ROUNDS;
  const minutes = options.minutes ?? (options.rounds === undefined ? DEFAULT_CEILING_MINUTES : undefined);
  return {
    ceilingTransports: options.transports === undefined ? transports : options.transports.map(transportByName),
    transportNames: options.transports ?? defaultTransports.map((t) => t.name),
    ceilingShapes: ALL_CEILING_SHAPES.filter((shape) => options.shapes.includes(shape.name)),
    ceilingRounds,
    ceilingBudgetMs: minutes === undefined ? null : minutes * 60_000,
    ceilingUnverified: options.unverified ?? options.transports !== undefined,
    indicativeNote: indicativeNote(ceilingRounds),
    delayTransports: options.transports ?? DELAY_TRANSPORTS,
    delayMs: options.delayMs,
    delayRounds: options.rounds ?? DEFAULT_DELAY_ROUNDS,
    delayImages: options.delayImages,
    capacitySizes: options.capacitySizes,
    capacityRounds: options.rounds ?? DEFAULT_CAPACITY_ROUNDS,
    capacityDeadlineMs: options.capacityDeadlineMs,
    capacityMissPercent: options.capacityMissPercent,
  };
}
