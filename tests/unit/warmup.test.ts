import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { percentile } from '../../services/core/model/stats.js';
import {
  describeWarmup,
  describeWarmupOutcome,
  MAX_WARMUP_IMAGES,
  MIN_BLOCK_IMAGES,
  STEADY_BLOCKS,
  STEADY_TOLERANCE,
  SteadinessCheck,
  warmupDecision,
  warmupImageLimit,
  warmupImagesAllowed,
  warmupPlan,
  type WarmupDecision,
  type WarmupOutcome,
  type WarmupPlan,
  type WarmupProgress,
} from '../../services/core/model/warmup.js';

/** WARMUP=auto with the default times and WINDOW=1. */
const STEADY: Extract<WarmupPlan, { mode: 'steady' }> = {
  mode: 'steady',
  minMs: 500,
  minImages: 128,
  maxMs: 10_000,
  maxImages: 100_000,
  blockImages: 32,
  blocks: 4,
  tolerance: 0.05,
};

/** A check of `blocks` blocks (four by default) holding `values` in order. */
function checkWith(blockImages: number, values: readonly number[], tolerance = 0.05, blocks?: number): SteadinessCheck {
  const check = new SteadinessCheck(blockImages, tolerance, blocks);
  for (const value of values) check.add(value);
  return check;
}

describe('constants', () => {
  it('are a 5 % fall over four blocks of at least 32 images and at most 100,000 warm-up images', () => {
    expect([STEADY_TOLERANCE, STEADY_BLOCKS, MIN_BLOCK_IMAGES, MAX_WARMUP_IMAGES]).toEqual([0.05, 4, 32, 100_000]);
  });
});

describe('warmupPlan', () => {
  it.each([
    [1, 32],
    [8, 32],
    [16, 32],
    [17, 34],
    [64, 128],
    [1024, 2048],
  ])(
    'WARMUP=auto with WINDOW=%d: blocks of %d images (at least 32, at least two windows), at least the four ' +
      'blocks compared',
    (window, blockImages) => {
      expect(warmupPlan({ warmup: 'auto', warmupMinMs: 500, warmupMaxMs: 10_000, window })).toEqual({
        mode: 'steady',
        minMs: 500,
        minImages: 4 * blockImages,
        maxMs: 10_000,
        maxImages: 100_000,
        blockImages,
        blocks: 4,
        tolerance: 0.05,
      });
    },
  );

  it('takes the minimum and maximum times as given', () => {
    expect(warmupPlan({ warmup: 'auto', warmupMinMs: 0, warmupMaxMs: 1, window: 4 })).toMatchObject({
      mode: 'steady',
      minMs: 0,
      maxMs: 1,
    });
  });

  it.each([0, 1, 250, 100_000])('WARMUP=%d: exactly that many images, whatever the times and the window', (images) => {
    expect(warmupPlan({ warmup: images, warmupMinMs: 500, warmupMaxMs: 10_000, window: 64 })).toEqual({
      mode: 'images',
      images,
    });
  });
});

describe('warmupImageLimit', () => {
  it.each([
    ['a fixed count', 7, { mode: 'images', images: 7 } satisfies WarmupPlan],
    ['no warm-up', 0, { mode: 'images', images: 0 } satisfies WarmupPlan],
    ['until steady', 100_000, STEADY],
    ['until steady, a smaller cap', 10, { ...STEADY, maxImages: 10 } satisfies WarmupPlan],
  ])('%s: %d', (_name, limit, plan) => {
    expect(warmupImageLimit(plan)).toBe(limit);
  });
});

describe('SteadinessCheck', () => {
  it('reads nothing before four blocks, then the four medians', () => {
    const check = new SteadinessCheck(4, 0.05);
    for (let i = 0; i < 15; i++) {
      check.add(100);
      expect(check.reading(), `after ${i + 1}`).toBeUndefined();
    }
    expect(check.taken).toBe(15);
    check.add(100);
    expect(check.taken).toBe(16);
    expect(check.reading()).toEqual({ mediansNs: [100, 100, 100, 100], steady: true });
  });

  it('takes the nearest-rank median of each block (the lower middle of an even block), in the order given', () => {
    // Blocks of 4: [400, 100, 300, 200] → 200 (2nd of 4); [1000, 205, 207, 206] → 206; and so on.
    expect(
      checkWith(4, [400, 100, 300, 200, 1000, 205, 207, 206, 200, 201, 202, 203, 199, 1, 9999, 204]).reading(),
    ).toEqual({ mediansNs: [200, 206, 201, 199], steady: true });
    // Two blocks of 3 (a check of two): the middle value; 7 after 5 is a rise, not a fall.
    expect(checkWith(3, [9, 1, 5, 7, 3, 8], 0.05, 2).reading()).toEqual({ mediansNs: [5, 7], steady: true });
  });

  it('compares only the last blocks once the ring has wrapped around', () => {
    // 12 values in a ring of 8 (two blocks of 4): the blocks are values 5–8 and 9–12.
    const twelve = [1000, 1000, 1000, 1000, 50, 60, 70, 80, 90, 100, 110, 120];
    expect(checkWith(4, twelve, 0.05, 2).reading()).toEqual({ mediansNs: [60, 100], steady: true });
    // 10 values: the blocks are values 3–6 and 7–10, across the ring's end.
    const ten = [1, 2, 500, 400, 300, 200, 210, 205, 1000, 250];
    expect(checkWith(4, ten, 0.05, 2).reading()).toEqual({ mediansNs: [300, 210], steady: false });
    // 25 values in a ring of 16 (four blocks of 4), oldest first: the blocks are values 10–25.
    const many = [
      ...Array<number>(9).fill(5_000),
      100,
      300,
      200,
      400,
      205,
      195,
      1,
      1000,
      199,
      198,
      201,
      202,
      200,
      200,
      200,
      200,
    ];
    expect(checkWith(4, many).reading()).toEqual({ mediansNs: [200, 195, 199, 200], steady: true });
  });

  it.each([
    ['equal', [300_000, 300_000, 300_000, 300_000], true],
    // A fall of exactly 5 % below the earlier half's lowest still counts as steady; any more does not.
    ['a later low exactly 5 % under', [1_000_000, 1_000_000, 950_000, 1_000_000], true],
    ['a later low just over 5 % under', [1_000_000, 1_000_000, 949_999, 1_000_000], false],
    // Noise upward never holds a warm-up back: only a fall does.
    ['upward spikes', [1_000_000, 1_500_000, 1_000_000, 1_400_000], true],
    ['the later half higher', [200, 210, 300, 250], true],
    // A slow fall that two blocks alone pass at every step (each within 5 % of the one before).
    ['a fall of 3 % a block', [1_000_000, 970_000, 940_000, 910_000], false],
    // A step down between the halves.
    ['a step down of 10 %', [1_000_000, 1_010_000, 900_000, 905_000], false],
    // The lowest of each half counts, wherever it lies.
    ['a dip in the earlier half', [1_000_000, 800_000, 790_000, 1_000_000], true],
  ])('%s: steady unless the later half falls more than 5 percent below the earlier half', (_name, medians, steady) => {
    const check = checkWith(
      32,
      medians.flatMap((m) => Array<number>(32).fill(m)),
    );
    expect(check.reading()).toEqual({ mediansNs: medians, steady });
  });

  it('uses its own tolerance', () => {
    // 125 → 100 is a fall of 20 %.
    const values = [...Array<number>(4).fill(125), ...Array<number>(4).fill(100)];
    expect(checkWith(2, values, 0.2).reading()?.steady).toBe(true);
    expect(checkWith(2, values, 0.19).reading()?.steady).toBe(false);
  });

  it('reads the medians of the last blocks of whatever it was given', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 2, max: 5 }),
        fc.array(fc.integer({ min: 1, max: 10_000_000 }), { maxLength: 60 }),
        (blockImages, blocks, values) => {
          const reading = checkWith(blockImages, values, 0.05, blocks).reading();
          if (values.length < blocks * blockImages) return reading === undefined;
          const median = (block: number[]): number =>
            percentile(
              [...block].sort((a, b) => a - b),
              50,
            );
          const from = values.length - blocks * blockImages;
          const mediansNs = Array.from({ length: blocks }, (_, b) =>
            median(values.slice(from + b * blockImages, from + (b + 1) * blockImages)),
          );
          const half = Math.floor(blocks / 2);
          const steady = Math.min(...mediansNs.slice(half)) >= 0.95 * Math.min(...mediansNs.slice(0, half));
          expect(reading).toEqual({ mediansNs, steady });
          return true;
        },
      ),
    );
  });
});

describe('warmupDecision', () => {
  const progress = (elapsedMs: number, stampedImages: number, ackedImages = stampedImages): WarmupProgress => ({
    elapsedMs,
    stampedImages,
    ackedImages,
  });
  /** Four blocks of 32 equal round trips: steady. */
  const steady = (): SteadinessCheck => checkWith(32, Array<number>(128).fill(1_000_000));
  /** The last block 10 % faster than the ones before: still falling, not yet steady. */
  const unsteady = (): SteadinessCheck =>
    checkWith(32, [...Array<number>(96).fill(1_000_000), ...Array<number>(32).fill(900_000)]);

  it.each([
    [3, 0, 'more'],
    [3, 2, 'more'],
    [3, 3, 'done'],
    [3, 4, 'done'],
    [0, 0, 'done'],
  ] satisfies [number, number, string][])(
    'a fixed count of %d after %d stamped: %s, whatever the time',
    (images, stamped, decision) => {
      expect(warmupDecision({ mode: 'images', images }, progress(1e9, stamped), undefined)).toBe(decision);
      expect(warmupDecision({ mode: 'images', images }, progress(0, stamped), undefined)).toBe(decision);
    },
  );

  it.each([
    ['at the time cap, steady: steady wins', 'steady', progress(10_000, 5000), steady()],
    ['at the time cap, not steady', 'not steady', progress(10_000, 5000), unsteady()],
    ['past the time cap, not steady', 'not steady', progress(12_000, 5000), unsteady()],
    ['just before the time cap, steady', 'steady', progress(9_999.9, 5000), steady()],
    ['at the image cap, steady: steady wins', 'steady', progress(600, 100_000), steady()],
    ['at the image cap, not steady', 'not steady', progress(600, 100_000), unsteady()],
    ['just before the image cap, not steady', 'more', progress(600, 99_999), unsteady()],
    ['before the minimum time, steady', 'more', progress(499.9, 1000), steady()],
    ['at the minimum time, steady', 'steady', progress(500, 1000), steady()],
    ['before the minimum images acknowledged, steady', 'more', progress(800, 128, 127), steady()],
    ['at the minimum images acknowledged, steady', 'steady', progress(800, 129, 128), steady()],
    ['past both minimums, not yet steady', 'more', progress(800, 200), unsteady()],
    ['past both minimums, no check', 'more', progress(800, 200), undefined],
    [
      'past both minimums, fewer than four blocks in the check',
      'more',
      progress(800, 200),
      checkWith(32, Array<number>(127).fill(1)),
    ],
  ])('until steady, %s: %s', (_name, decision, at, check) => {
    expect(warmupDecision(STEADY, at, check)).toBe(decision);
  });

  // A warm-up of equal 2 ms round trips, one image every 10 ms (WINDOW=1, each acked before the
  // next): the decision it stops with and the images it stamped.
  function simulateEqualRoundTrips(plan: typeof STEADY): [WarmupDecision, number] {
    const check = new SteadinessCheck(plan.blockImages, plan.tolerance, plan.blocks);
    let stamped = 0;
    let decision = warmupDecision(plan, progress(0, 0), check);
    while (decision === 'more') {
      stamped++;
      check.add(2_000_000);
      decision = warmupDecision(plan, progress(stamped * 10, stamped), check);
    }
    return [decision, stamped];
  }

  it('stops a warm-up of equal round trips at the first decision after both minimums', () => {
    // 128 images take 1,280 ms > 500 ms.
    expect(simulateEqualRoundTrips(STEADY)).toEqual(['steady', 128]);
  });

  it('with a longer minimum time, waits for it even when steady sooner', () => {
    expect(simulateEqualRoundTrips({ ...STEADY, minMs: 2000 })).toEqual(['steady', 200]);
  });
});

describe('warmupImagesAllowed', () => {
  it.each([
    [{ mode: 'images', images: 2 } satisfies WarmupPlan, 2, true],
    [{ mode: 'images', images: 2 } satisfies WarmupPlan, 1, false],
    [{ mode: 'images', images: 2 } satisfies WarmupPlan, 3, false],
    [{ mode: 'images', images: 0 } satisfies WarmupPlan, 0, true],
    [STEADY, 0, true],
    [STEADY, 100_000, true],
    [STEADY, 100_001, false],
  ])('%j, %i images: %s', (plan, images, allowed) => {
    expect(warmupImagesAllowed(plan, images)).toBe(allowed);
  });
});

describe('describeWarmup', () => {
  it.each([
    [{ mode: 'images', images: 0 } satisfies WarmupPlan, 'none (WARMUP=0: a cold run)'],
    [{ mode: 'images', images: 1 } satisfies WarmupPlan, '1 unrecorded image (WARMUP=1)'],
    [{ mode: 'images', images: 2 } satisfies WarmupPlan, '2 unrecorded images (WARMUP=2)'],
    [{ mode: 'images', images: 100_000 } satisfies WarmupPlan, '100,000 unrecorded images (WARMUP=100000)'],
    [
      STEADY,
      'until steady: at least 500 ms and 128 images, then until no median round trip of the last 2 blocks of 32 ' +
        'images is more than 5 % below the lowest of the 2 before; at most 10,000 ms (WARMUP=auto)',
    ],
    [
      {
        ...STEADY,
        minMs: 1500,
        minImages: 256,
        blockImages: 128,
        blocks: undefined,
        maxMs: 3_600_000,
        tolerance: 0.125,
      } satisfies WarmupPlan,
      'until steady: at least 1,500 ms and 256 images, then until no median round trip of the last block of 128 ' +
        'images is more than 12.5 % below the lowest of the block before; at most 3,600,000 ms (WARMUP=auto)',
    ],
  ])('%j → %s', (plan, text) => {
    expect(describeWarmup(plan)).toBe(text);
  });
});

describe('describeWarmupOutcome', () => {
  it.each([
    [null, 'did not finish'],
    [{ images: 0, ms: 0, steady: null, mediansMs: null }, 'none: cold'],
    [{ images: 2, ms: 3.4, steady: null, mediansMs: null }, '3 ms, 2 images'],
    [
      { images: 1234, ms: 812.5, steady: true, mediansMs: [0.3014, 0.2996] },
      'steady after 813 ms, 1,234 images (median round trips 0.301 → 0.300 ms)',
    ],
    [{ images: 70, ms: 5.2, steady: true, mediansMs: null }, 'steady after 5 ms, 70 images'],
    [
      { images: 100_000, ms: 10_000.4, steady: false, mediansMs: [1.6, 1.9] },
      'NOT STEADY after 10,000 ms, 100,000 images, its cap (median round trips 1.600 → 1.900 ms)',
    ],
    [
      { images: 512, ms: 700, steady: true, mediansMs: [0.31, 0.3, 0.302, 0.3] },
      'steady after 700 ms, 512 images (median round trips 0.310 → 0.300 → 0.302 → 0.300 ms)',
    ],
  ] satisfies [WarmupOutcome | null, string][])('%j → %s', (outcome, text) => {
    expect(describeWarmupOutcome(outcome)).toBe(text);
  });
});
