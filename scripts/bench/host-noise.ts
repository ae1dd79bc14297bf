import { xxh64 } from '@node-rs/xxhash';
import { fixed, median } from './format.js';

// The host's own noise, measured in the same minutes as the ceiling: a fixed piece of CPU work
// (xxHash64 over the same 4 MiB, TASK_HASHES times) timed once per round. On a quiet host it takes
// the same time every round; how much it varies is how much a round's figures can move with
// nothing in the suite changing (another tenant of the hypervisor, the CPU's clock), so an
// overhead range narrower than it cannot be told from the host.

const TASK_BYTES = 4 * 1024 * 1024;
const TASK_HASHES = 500;

/** ms the fixed task took, once. */
export function timeHostTask(): number {
  const buffer = Buffer.alloc(TASK_BYTES, 0x5a);
  let sink = 0n;
  const startNs = process.hrtime.bigint();
  for (let i = 0; i < TASK_HASHES; i++) sink ^= xxh64(buffer, BigInt(i));
  const ms = Number(process.hrtime.bigint() - startNs) / 1e6;
  if (sink === -1n) console.log(sink); // keeps the hashes alive
  return ms;
}

/** The rounds' task times: their median, and their spread as ± half the range over the median (percent). */
export function hostNoiseLines(taskMs: readonly number[]): string[] {
  const middle = median(taskMs);
  if (middle === null || middle === 0) return [];
  const spread = ((Math.max(...taskMs) - Math.min(...taskMs)) / 2 / middle) * 100;
  return [
    `Host noise: a fixed CPU task (xxHash64 of ${(TASK_BYTES * TASK_HASHES) / 2 ** 20} MiB), timed before each ` +
      `round, took ${fixed(middle, 1)} ms (median of ${taskMs.length}; ${fixed(Math.min(...taskMs), 1)}–` +
      `${fixed(Math.max(...taskMs), 1)} ms, ±${fixed(spread, 1)} %): figures that differ between rounds by ` +
      'less than that differ by the host’s own noise.',
  ];
}
