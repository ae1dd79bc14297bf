import { describe, expect, it } from 'vitest';
import { imagesPerSecond, medianOf, nsToMs, percentile, rangeOf, summarizeLatency, throughputMBps } from '../../services/core/stats.js';

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
    const named = [summary.p90Ms === null ? null : 'p90', summary.p99Ms === null ? null : 'p99', summary.p999Ms === null ? null : 'p999'];
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
    for (const [p, value] of [[50, summary.p50Ms], [90, summary.p90Ms], [99, summary.p99Ms], [99.9, summary.p999Ms]] as const) {
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
