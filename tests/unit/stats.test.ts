import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  imagesPerSecond,
  LatencyRecorder,
  medianOf,
  mergeLatency,
  nsBetween,
  nsToMs,
  percentile,
  rangeOf,
  summarizeLatency,
  throughputMBps,
} from '../../services/core/model/stats.js';

describe('percentile (nearest rank)', () => {
  const values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  it.each([
    [0, 1],
    [10, 1],
    [11, 2],
    [50, 5],
    [90, 9],
    [99, 10],
    [100, 10],
  ])('p%d of 1..10 is %d', (p, expected) => {
    expect(percentile(values, p)).toBe(expected);
  });

  it('of one value is that value', () => {
    expect(percentile([7.5], 50)).toBe(7.5);
  });

  it('of no values throws', () => {
    expect(() => percentile([], 50)).toThrow(RangeError);
  });
});

describe('summarizeLatency', () => {
  it('gives exact min, max, mean and sample sd, and histogram percentiles of unsorted times', () => {
    const summary = summarizeLatency([0.4, 0.1, 0.3, 0.2])!;
    // Squared deviations sum to 0.05; the sample sd divides by n − 1 = 3.
    expect(summary).toMatchObject({ count: 4, minMs: 0.1, maxMs: 0.4, meanMs: 0.25 });
    expect(summary.stdDevMs).toBeCloseTo(Math.sqrt(0.05 / 3), 15);
    // 0.2 ms lands in a histogram bucket 128 ns wide: reported as its highest equivalent value.
    expect(summary.p50Ms).toBe(0.200063);
    // Four times support no tail percentile: each would be the max under another name.
    expect([summary.p90Ms, summary.p99Ms, summary.p999Ms]).toEqual([null, null, null]);
  });

  it.each([
    [9, [null, null, null]],
    [10, ['p90', null, null]],
    [99, ['p90', null, null]],
    [100, ['p90', 'p99', null]],
    [999, ['p90', 'p99', null]],
    [1000, ['p90', 'p99', 'p999']],
  ])('of %d times reports exactly the percentiles the sample supports', (count, expected) => {
    const summary = summarizeLatency(Array.from({ length: count }, (_, i) => i + 1))!;
    const named = [
      summary.p90Ms === null ? null : 'p90',
      summary.p99Ms === null ? null : 'p99',
      summary.p999Ms === null ? null : 'p999',
    ];
    expect(named).toEqual(expected);
  });

  it('at the threshold, gives a percentile below the max: the 100-time p99 is the 99th time', () => {
    const summary = summarizeLatency(Array.from({ length: 100 }, (_, i) => i + 1))!;
    // The histogram reports the top of the bucket (times in ns, 3 significant digits) holding 99 ms: within 0.1 %.
    expect([summary.p99Ms, summary.maxMs]).toEqual([99.024895, 100]);
  });

  it('keeps every percentile within 0.1 % of the nearest-rank value over 10,000 times', () => {
    const times = Array.from({ length: 10_000 }, (_, i) => 0.05 + ((i * 7919) % 10_000) / 997);
    const ascending = [...times].sort((a, b) => a - b);
    const summary = summarizeLatency(times)!;
    for (const [p, value] of [
      [50, summary.p50Ms],
      [90, summary.p90Ms],
      [99, summary.p99Ms],
      [99.9, summary.p999Ms],
    ] as const) {
      const exact = percentile(ascending, p);
      expect(value).not.toBeNull();
      expect(Math.abs(value! - exact) / exact).toBeLessThan(0.001);
    }
    expect(summary.maxMs).toBe(ascending.at(-1));
  });

  it('never reports a percentile above the true maximum', () => {
    const summary = summarizeLatency([2.413])!;
    expect([summary.p50Ms, summary.maxMs]).toEqual([2.413, 2.413]);
    const thousand = summarizeLatency(Array.from({ length: 1000 }, () => 2.413))!;
    expect([thousand.p90Ms, thousand.p99Ms, thousand.p999Ms]).toEqual([2.413, 2.413, 2.413]);
    expect(summary.stdDevMs).toBe(0);
  });

  it('is undefined for no times', () => {
    expect(summarizeLatency([])).toBeUndefined();
  });
});

/** 20,000 times spread over 0.05 to 50 ms with a long tail, in no order. */
const spreadTimes = Array.from({ length: 20_000 }, (_, i) => 0.05 + (((i * 7919) % 20_000) / 20_000) ** 3 * 50);

/** Mean and sample sd computed the plain two-pass way, as a reference. */
function twoPass(times: readonly number[]): { mean: number; sd: number } {
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  return { mean, sd: Math.sqrt(times.reduce((acc, t) => acc + (t - mean) ** 2, 0) / (times.length - 1)) };
}

describe('LatencyRecorder', () => {
  it('gives the summary summarizeLatency gives of the same times, taken one at a time', () => {
    const recorder = new LatencyRecorder();
    for (const t of spreadTimes) recorder.record(t);
    expect(recorder.size).toBe(spreadTimes.length);
    expect(recorder.summary()).toEqual(summarizeLatency(spreadTimes));
    recorder.destroy();
  });

  it(
    'keeps the mean and sd of a running sum within 1e-12 of two passes over the times, and percentiles within 0.1 ' +
      '%',
    () => {
      const recorder = new LatencyRecorder();
      for (const t of spreadTimes) recorder.record(t);
      const summary = recorder.summary()!;
      const { mean, sd } = twoPass(spreadTimes);
      expect(Math.abs(summary.meanMs - mean) / mean).toBeLessThan(1e-12);
      expect(Math.abs(summary.stdDevMs - sd) / sd).toBeLessThan(1e-12);
      const ascending = [...spreadTimes].sort((a, b) => a - b);
      expect([summary.count, summary.minMs, summary.maxMs]).toEqual([
        spreadTimes.length,
        ascending[0],
        ascending.at(-1),
      ]);
      for (const [p, value] of [
        [50, summary.p50Ms],
        [90, summary.p90Ms],
        [99, summary.p99Ms],
        [99.9, summary.p999Ms],
      ] as const) {
        const exact = percentile(ascending, p);
        expect(Math.abs(value! - exact) / exact).toBeLessThan(0.001);
      }
      recorder.destroy();
    },
  );

  it('starts over after reset, and has no summary and no histogram without a time', () => {
    const recorder = new LatencyRecorder();
    expect([recorder.summary(), recorder.encoded()]).toEqual([undefined, null]);
    for (const t of [5, 6, 7]) recorder.record(t);
    recorder.reset();
    expect([recorder.size, recorder.summary(), recorder.encoded()]).toEqual([0, undefined, null]);
    recorder.record(2);
    expect(recorder.summary()).toEqual(summarizeLatency([2]));
    recorder.destroy();
  });
});

describe('mergeLatency', () => {
  const part = (times: readonly number[]) => {
    const recorder = new LatencyRecorder();
    for (const t of times) recorder.record(t);
    const merged = { summary: recorder.summary() ?? null, histogramNs: recorder.encoded() };
    recorder.destroy();
    return merged;
  };

  it(
    'of two halves is the whole: count, min and max exact, mean to rounding, sd within 1e-9, p50 and p99 within ' +
      '0.1 %',
    () => {
      const whole = summarizeLatency(spreadTimes)!;
      const merged = mergeLatency([part(spreadTimes.slice(0, 7_000)), part(spreadTimes.slice(7_000))])!;
      expect([merged.count, merged.minMs, merged.maxMs]).toEqual([whole.count, whole.minMs, whole.maxMs]);
      // The mean pooled from the halves' means differs from the running mean by rounding only.
      expect(Math.abs(merged.meanMs - whole.meanMs) / whole.meanMs).toBeLessThan(1e-12);
      expect(Math.abs(merged.stdDevMs - whole.stdDevMs) / whole.stdDevMs).toBeLessThan(1e-9);
      for (const key of ['p50Ms', 'p99Ms'] as const)
        expect(Math.abs(merged[key]! - whole[key]!) / whole[key]!).toBeLessThan(0.001);
      // Two halves of very different times: the pooled sd counts the distance between their means.
      const apart = mergeLatency([part([1, 1, 1, 1]), part([9, 9, 9, 9])])!;
      expect([apart.count, apart.meanMs, apart.minMs, apart.maxMs]).toEqual([8, 5, 1, 9]);
      expect(apart.stdDevMs).toBeCloseTo(Math.sqrt((8 * 16) / 7), 12);
    },
  );

  it('leaves out parts without times, and is undefined with none, or when a part has no histogram to merge', () => {
    const some = part([3, 4]);
    expect(mergeLatency([some, part([])])).toEqual(summarizeLatency([3, 4]));
    expect(mergeLatency([part([]), part([])])).toBeUndefined();
    expect(mergeLatency([some, { summary: some.summary, histogramNs: null }])).toBeUndefined();
  });
});

describe('rangeOf', () => {
  it('gives min and max, or undefined for nothing', () => {
    expect(rangeOf([3, 1, 2])).toEqual({ min: 1, max: 3 });
    expect(rangeOf([])).toBeUndefined();
  });
});

describe('units', () => {
  it('converts nanoseconds to milliseconds', () => {
    expect(nsToMs(2_413_000n)).toBe(2.413);
  });

  it('computes MB/s from bytes and milliseconds', () => {
    expect(throughputMBps(5_457_920, 31.207)).toBeCloseTo(174.894, 3);
    expect(throughputMBps(1_000_000, 1000)).toBe(1);
    expect(throughputMBps(100, 0)).toBe(0);
  });

  it('computes images per second', () => {
    expect(imagesPerSecond(10, 31.25)).toBe(320);
    expect(imagesPerSecond(10, 0)).toBe(0);
  });
});

describe('medianOf', () => {
  it.each([
    [[], undefined],
    [[4], 4],
    [[3, 1, 2], 2],
    [[10, 1, 3, 2], 2.5],
    [[5, 8], 6.5],
    [[0.5, 0.25, 0.75, 100], 0.625],
  ])('of %j is %s (the mean of the middle two for an even count)', (values, median) => {
    expect(medianOf(values)).toBe(median);
  });

  it('leaves its input in order', () => {
    const values = [3, 1, 2];
    medianOf(values);
    expect(values).toEqual([3, 1, 2]);
  });
});

describe('nsBetween', () => {
  it('gives to − from as Number(to − from) does, for any two stamps, without a bigint', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
        fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
        (a, b) => {
          expect(Object.is(nsBetween(a, b), Number(b - a))).toBe(true);
        },
      ),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 62n }), fc.integer({ min: -5e9, max: 5e9 }), (from, deltaNs) => {
        expect(nsBetween(from, from + BigInt(deltaNs))).toBe(deltaNs);
      }),
    );
  });
});

describe('LatencyRecorder.recordNs', () => {
  it('takes a time in ns exactly as record takes it in ms: the same summary and histogram', () => {
    const times = [1, 999, 250_000, 1_234_567, 33_333_333, 2_000_000_001, -5, 0];
    const byMs = new LatencyRecorder();
    const byNs = new LatencyRecorder();
    for (const ns of times) {
      byMs.record(ns / 1e6);
      byNs.recordNs(ns);
    }
    expect(byNs.summary()).toEqual(byMs.summary());
    expect(byNs.encoded()).toBe(byMs.encoded());
    byMs.destroy();
    byNs.destroy();
  });
});
