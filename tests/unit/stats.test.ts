import { describe, expect, it } from 'vitest';
import { nsToMs, percentile, summarizeTimes, throughputMBps } from '../../services/core/stats.js';

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

describe('summarizeTimes', () => {
  it('gives min, p50, max and mean of unsorted times', () => {
    expect(summarizeTimes([4, 1, 3, 2])).toEqual({ count: 4, minMs: 1, p50Ms: 2, maxMs: 4, meanMs: 2.5 });
  });

  it('is undefined for no times', () => {
    expect(summarizeTimes([])).toBeUndefined();
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
});
