import { describe, expect, it } from 'vitest';
import { AwaitingRoundTrips } from '../../services/core/model/awaiting-round-trips.js';
import { AwaitingVerdicts } from '../../services/core/model/awaiting-verdicts.js';

// The receiver's record holds each image in columns of typed arrays (no object per image): the columns must give back
// exactly what was put in, whatever the seqs, and grow rather than lose an image.

describe('AwaitingVerdicts', () => {
  it('gives back each frame held, once, with its stamps, size check and broker stamp', () => {
    const verdicts = new AwaitingVerdicts();
    const stamp = { atWallNs: 5n, resolutionNs: 1 };
    verdicts.set(3, 100n, 250n, true, stamp);
    verdicts.set(4, 110n, 260n, false, undefined);
    expect(verdicts.size).toBe(2);
    expect(verdicts.take(3)).toBe(true);
    expect([verdicts.takenSentAtNs, verdicts.takenArrivalNs, verdicts.takenSizeOk, verdicts.takenBrokerStamp]).toEqual([
      100n,
      250n,
      true,
      stamp,
    ]);
    expect(verdicts.take(3)).toBe(false);
    expect(verdicts.take(4)).toBe(true);
    expect([verdicts.takenSizeOk, verdicts.takenBrokerStamp, verdicts.size]).toEqual([false, undefined, 0]);
  });

  it('grows when a frame finds its place held (a verdict that has not come), keeping every frame', () => {
    const verdicts = new AwaitingVerdicts();
    // 0 waits while thousands arrive and are verified: each seq that shares its place makes the columns grow.
    verdicts.set(0, 1n, 2n, true, undefined);
    for (let seq = 1; seq < 5000; seq++) {
      verdicts.set(seq, BigInt(seq), BigInt(seq) + 7n, true, undefined);
      expect(verdicts.take(seq)).toBe(true);
      expect(verdicts.takenArrivalNs).toBe(BigInt(seq) + 7n);
    }
    expect(verdicts.take(0)).toBe(true);
    expect([verdicts.takenSentAtNs, verdicts.takenArrivalNs, verdicts.size]).toEqual([1n, 2n, 0]);
  });

  it('lists the frames held in the order they came, not by seq', () => {
    const verdicts = new AwaitingVerdicts();
    for (const seq of [7, 2, 1030, 5, 3000]) verdicts.set(seq, 0n, 0n, true, undefined);
    verdicts.take(5);
    expect(verdicts.seqsInArrivalOrder()).toEqual([7, 2, 1030, 3000]);
  });
});

describe('AwaitingRoundTrips', () => {
  it('gives back each arrival held, once', () => {
    const held = new AwaitingRoundTrips();
    held.set(1, 250_000, true);
    held.set(2, -3, false);
    expect(held.take(2)).toBe(true);
    expect([held.takenOneWayNs, held.takenIntact]).toEqual([-3, false]);
    expect(held.take(2)).toBe(false);
    expect(held.take(1)).toBe(true);
    expect([held.takenOneWayNs, held.takenIntact, held.size]).toEqual([250_000, true, 0]);
  });

  it('grows with a second of round trips held, and moves aside an image whose round trip never comes', () => {
    const held = new AwaitingRoundTrips();
    // Image 1 never gets its round trip; the rest come 50,000 images late (a batch a second at 50,000 images/s).
    held.set(1, 11, true);
    let most = 0;
    for (let image = 2; image <= 200_000; image++) {
      held.set(image, image, image % 3 !== 0);
      most = Math.max(most, held.size);
      const late = image - 50_000;
      if (late >= 2) {
        expect(held.take(late)).toBe(true);
        expect([held.takenOneWayNs, held.takenIntact]).toEqual([late, late % 3 !== 0]);
      }
    }
    // A second's worth (and the one just set), and image 1.
    expect([most, held.size]).toEqual([50_002, 50_001]);
    const left = held.imagesHeld();
    expect([left.length, left[0], left[1], left.at(-1)]).toEqual([50_001, 1, 150_001, 200_000]);
    expect(held.take(1)).toBe(true);
    expect(held.takenOneWayNs).toBe(11);
  });
});
