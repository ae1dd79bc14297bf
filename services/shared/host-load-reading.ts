import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseProcStat, type HostLoadReading } from '../core/model/host-load.js';

// The host's load now, for a section's two ends (core/model/host-load.ts makes the figures): the
// kernel's CPU time totals from /proc/stat and the 1-minute load average from os.loadavg()
// (sysinfo(2) on Linux, the figure /proc/loadavg shows, in a microsecond). /proc/stat is read
// synchronously, so the time taken with it is the time it was read (20 µs here; an async read's
// answer can wait behind the verifier's hashing, which would stretch the span it is divided by).
// Without /proc (macOS) the CPU figures are null; Windows has no load average (os.loadavg() gives zeros).

/** The host's load now; never throws: what cannot be read is null. `statPath` is for tests. */
export function readHostLoad(statPath = '/proc/stat'): HostLoadReading {
  const loadAverage1m = process.platform === 'win32' ? null : (os.loadavg()[0] ?? null);
  let text: string | null = null;
  try {
    text = readFileSync(statPath, 'latin1');
  } catch {
    // No /proc: the CPU figures stay null.
  }
  const atMs = performance.now();
  const stat = text === null ? null : parseProcStat(text);
  const cores = stat?.cpus ?? (os.cpus().length || null);
  return { atMs, loadAverage1m, stat, cores };
}

/**
 * The host's load once the current turn of the event loop is over: taken as the last recorded image is acknowledged,
 * it is read after that ack has gone out, not before it.
 */
export function readHostLoadAfterThisTurn(statPath?: string): Promise<HostLoadReading> {
  return new Promise((resolve) => setImmediate(() => resolve(readHostLoad(statPath))));
}
