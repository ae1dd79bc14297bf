import type { WallClockSample } from '../core/model/broker-split.js';

// The receiver's wall clock paired with its hrtime, for mapping a broker's stamps (core/model/broker-split.ts).

/** Longest the sampler waits for Date.now() to tick: it ticks every ms, so only a stopped clock reaches it. */
const WALL_TICK_WAIT_NS = 5_000_000n;

/** Most ticks the sampler tries for a tight pair: a preempted read widens one tick's gap to ms. */
const MOST_TICKS = 4;
/** A pair this tight is kept at once (a few hrtime reads apart). */
const TIGHT_ENOUGH_NS = 20_000;

/**
 * Pairs the wall clock with hrtime: Date.now() reads CLOCK_REALTIME live but in whole ms, so the
 * sampler waits (≤ 1 ms a tick, never on a timed path) for its next tick, which lies between the
 * last hrtime read before it and the first after: the pair is exact within half that gap (µs).
 * On a loaded machine a read can be preempted and one tick's gap grow to ms, so it tries up to
 * MOST_TICKS ticks and keeps the tightest, as Cristian's method keeps the shortest round trip. Not
 * performance.timeOrigin + now(): that is hrtime anchored once at process start, blind to the
 * realtime clock's slewing since, which the broker's stamps follow.
 */
export function sampleWallClock(
  readHrNs: () => bigint = process.hrtime.bigint,
  readWallMs: () => number = Date.now,
): WallClockSample {
  let best = sampleOneTick(readHrNs, readWallMs);
  for (let tick = 1; tick < MOST_TICKS && best.errorNs > TIGHT_ENOUGH_NS && !best.stopped; tick++) {
    const next = sampleOneTick(readHrNs, readWallMs);
    if (next.errorNs < best.errorNs) best = next;
  }
  return { hrNs: best.hrNs, wallNs: best.wallNs, errorNs: best.errorNs };
}

/** One tick's pair; `stopped` when the wall clock never ticked (waiting for another is pointless). */
function sampleOneTick(
  readHrNs: () => bigint = process.hrtime.bigint,
  readWallMs: () => number = Date.now,
): WallClockSample & { stopped: boolean } {
  // Each hrtime read comes before its wall read: the tick follows the last read before a wall read that showed the
  // old ms, and precedes the read after the wall read that showed the new one.
  let beforeNs = readHrNs();
  const startMs = readWallMs();
  const giveUpNs = beforeNs + WALL_TICK_WAIT_NS;
  for (;;) {
    const readNs = readHrNs();
    const wallMs = readWallMs();
    if (wallMs !== startMs) {
      const afterNs = readHrNs();
      const halfGapNs = (afterNs - beforeNs) / 2n;
      return {
        hrNs: beforeNs + halfGapNs,
        wallNs: BigInt(wallMs) * 1_000_000n,
        errorNs: Number(halfGapNs),
        stopped: false,
      };
    }
    if (readNs > giveUpNs) {
      // No tick (a stopped clock): the ms read, at its middle, within half a ms plus all the wait.
      return {
        hrNs: readNs,
        wallNs: BigInt(startMs) * 1_000_000n + 500_000n,
        errorNs: 500_000 + Number(readNs - giveUpNs) + Number(WALL_TICK_WAIT_NS),
        stopped: true,
      };
    }
    beforeNs = readNs;
  }
}
