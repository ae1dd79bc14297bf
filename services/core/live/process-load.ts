import type { ProcessLoad } from './live-events.js';

// Another process's load for the live page: two snapshots of its CPU total and resident set,
// taken by that process (the transmitter sends one with each batch of round trips) or read from it
// (a broker), turned into CPU per second of wall clock between them. Pure.

/** A process's CPU time so far (user + system) and resident set, at `atMs` on a clock of its own choosing. */
export interface ProcessSnapshot {
  cpuMicros: number;
  rssBytes: number;
  atMs: number;
}

/** Header of a round-trips POST carrying the transmitter's {@link ProcessSnapshot} when it was sent. */
export const PROCESS_HEADER = 'x-transmitter-process';

/** A snapshot as {@link PROCESS_HEADER}'s value: `cpuMicros=<n>;rssBytes=<n>;atMs=<n>`. */
export function processHeaderValue(snapshot: ProcessSnapshot): string {
  return (
    `cpuMicros=${Math.round(snapshot.cpuMicros)};rssBytes=${Math.round(snapshot.rssBytes)}` +
    `;atMs=${snapshot.atMs.toFixed(3)}`
  );
}

const HEADER_PATTERN = /^cpuMicros=(\d{1,16});rssBytes=(\d{1,16});atMs=(\d{1,16}(?:\.\d{1,6})?)$/;

/** {@link PROCESS_HEADER}'s value as a snapshot; undefined when absent or not of that form exactly. */
export function parseProcessHeader(value: string | string[] | undefined): ProcessSnapshot | undefined {
  if (typeof value !== 'string') return undefined;
  const match = HEADER_PATTERN.exec(value);
  if (match === null) return undefined;
  return { cpuMicros: Number(match[1]), rssBytes: Number(match[2]), atMs: Number(match[3]) };
}

/**
 * The load between two snapshots of one process (`earlier` first, same clock): CPU ms per second of wall clock, RSS
 * the later's. Undefined when no time passed between them or the CPU went back (not one process).
 */
export function loadBetween(earlier: ProcessSnapshot, later: ProcessSnapshot): ProcessLoad | undefined {
  const wallMs = later.atMs - earlier.atMs;
  const cpuMicros = later.cpuMicros - earlier.cpuMicros;
  if (!(wallMs > 0) || cpuMicros < 0) return undefined;
  return { cpuMsPerSecond: cpuMicros / wallMs, rssBytes: later.rssBytes };
}
