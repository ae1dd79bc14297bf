import { describe, expect, it } from 'vitest';
import {
  distributionOf,
  harnessOverhead,
  medianInterval,
  percentText,
  summarizeOverhead,
  summarizeTimeOverhead,
} from '../../scripts/lib/overhead.js';

describe('harnessOverhead', () => {
  it('is 1 − ours ÷ ceiling', () => {
    expect(harnessOverhead(750, 1000)).toBe(0.25);
    expect(harnessOverhead(1000, 1000)).toBe(0);
    expect(harnessOverhead(0, 400)).toBe(1);
    // Faster than its ceiling (noise, or a ceiling run that was slowed): negative, not hidden.
    expect(harnessOverhead(1100, 1000)).toBeCloseTo(-0.1, 15);
  });

  it('has no value without both figures, or with a ceiling of 0', () => {
    expect(harnessOverhead(null, 1000)).toBeNull();
    expect(harnessOverhead(500, null)).toBeNull();
    expect(harnessOverhead(500, 0)).toBeNull();
  });
});

describe('summarizeOverhead', () => {
  it("shows the overhead of the medians it shows, and each round's own overhead as the range", () => {
    // Rounds: 0.25, 0.5, 0.125 from their pairs; the overhead shown is 1 − 750 / 1024 (the medians), not the rounds'
    // median 0.25.
    const summary = summarizeOverhead([
      { ours: 750, ceiling: 1000 },
      { ours: 512, ceiling: 1024 },
      { ours: 896, ceiling: 1024 },
    ]);
    expect(summary).toMatchObject({
      pairedRounds: 3,
      oursMedian: 750,
      ceilingMedian: 1024,
      overhead: 1 - 750 / 1024,
      overheadMin: 0.125,
      overheadMax: 0.5,
    });
  });

  it("never disagrees in sign with the medians beside it, where the median of the rounds' overheads would", () => {
    // Per round: 0.25, 0.375, −2 (median 0.25, a "25 % overhead"), while ours\' median 160 beats the ceiling\'s 128.
    const pairs = [
      { ours: 96, ceiling: 128 },
      { ours: 160, ceiling: 256 },
      { ours: 192, ceiling: 64 },
    ];
    const summary = summarizeOverhead(pairs);
    expect(summary.oursMedian).toBe(160);
    expect(summary.ceilingMedian).toBe(128);
    expect(summary.overhead).toBe(-0.25);
    expect(summary.overheadMin).toBe(-2);
    expect(summary.overheadMax).toBe(0.375);
  });

  it("reports each figure's distribution over the rounds: min, quartiles (nearest rank), median, max", () => {
    const summary = summarizeOverhead([
      { ours: 40, ceiling: 100 },
      { ours: 10, ceiling: 300 },
      { ours: 30, ceiling: 200 },
      { ours: 20, ceiling: null },
    ]);
    expect(summary.ours).toEqual({ rounds: 4, min: 10, q1: 10, median: 25, q3: 30, max: 40 });
    expect(summary.ceiling).toEqual({ rounds: 3, min: 100, q1: 100, median: 200, q3: 300, max: 300 });
  });

  it('leaves out a round missing either figure from the range, and keeps the other figure in its median', () => {
    const summary = summarizeOverhead([
      { ours: 500, ceiling: 1000 },
      { ours: null, ceiling: 2000 },
      { ours: 700, ceiling: null },
      { ours: 300, ceiling: 1000 },
    ]);
    expect(summary).toMatchObject({
      pairedRounds: 2,
      oursMedian: 500,
      ceilingMedian: 1000,
      overhead: 0.5,
      overheadMin: 0.5,
      overheadMax: 0.7,
    });
  });

  it("gives the rounds' own overheads' median and its 95 % confidence interval, from the paired rounds only", () => {
    // Per round: 0.3, 0.1, 0.25, −0.05, 0.2, 0.15 (and two unpaired rounds, left out): 6 paired, so (x1, x6).
    const summary = summarizeOverhead([
      { ours: 700, ceiling: 1000 },
      { ours: 900, ceiling: 1000 },
      { ours: null, ceiling: 1000 },
      { ours: 750, ceiling: 1000 },
      { ours: 1050, ceiling: 1000 },
      { ours: 800, ceiling: 1000 },
      { ours: 850, ceiling: null },
      { ours: 850, ceiling: 1000 },
    ]);
    expect(summary.pairedRounds).toBe(6);
    expect(summary.pairMedian).toBeCloseTo(0.175, 12);
    expect(summary.pairCI).toEqual({ low: 1 - 1050 / 1000, high: 1 - 700 / 1000, coverage: 1 - 2 / 64 });
    // Five paired rounds are too few for an interval; the median stays.
    const five = summarizeOverhead([
      { ours: 700, ceiling: 1000 },
      { ours: 900, ceiling: 1000 },
      { ours: 750, ceiling: 1000 },
      { ours: 800, ceiling: 1000 },
      { ours: 850, ceiling: 1000 },
    ]);
    expect(five.pairMedian).toBeCloseTo(0.2, 12);
    expect(five.pairCI).toBeNull();
  });

  it('has no overhead without both medians, and no range when no round has both', () => {
    expect(summarizeOverhead([{ ours: null, ceiling: 1000 }])).toEqual({
      pairedRounds: 0,
      oursMedian: null,
      ceilingMedian: 1000,
      overhead: null,
      overheadMin: null,
      overheadMax: null,
      pairMedian: null,
      pairCI: null,
      ours: null,
      ceiling: { rounds: 1, min: 1000, q1: 1000, median: 1000, q3: 1000, max: 1000 },
    });
    expect(summarizeOverhead([])).toEqual({
      pairedRounds: 0,
      oursMedian: null,
      ceilingMedian: null,
      overhead: null,
      overheadMin: null,
      overheadMax: null,
      pairMedian: null,
      pairCI: null,
      ours: null,
      ceiling: null,
    });
  });
});

describe('distributionOf', () => {
  it("is null for no values, and one value's own everywhere for one", () => {
    expect(distributionOf([])).toBeNull();
    expect(distributionOf([7])).toEqual({ rounds: 1, min: 7, q1: 7, median: 7, q3: 7, max: 7 });
  });
});

// 2ⁿ·P(X ≤ k−1) for X ~ Binom(n, ½), from Pascal's triangle in the test itself (exact up to 2⁵³).
const lowerTail = (n: number, k: number): number => {
  let row = [1];
  for (let i = 0; i < n; i++) row = [...row, 0].map((c, j) => c + (j > 0 ? row[j - 1]! : 0));
  return row.slice(0, k).reduce((sum, c) => sum + c, 0);
};

describe('medianInterval', () => {
  it('is (x2, x9) for 10 values, in any order, covering 1 − 2·11/1024 (x1, x10 would be needlessly wide)', () => {
    const interval = medianInterval([7, 3, 10, 1, 5, 9, 2, 8, 6, 4]);
    expect(interval).toEqual({ low: 2, high: 9, coverage: 1 - (2 * 11) / 1024 });
    // (x3, x8) would cover 1 − 2·56/1024 ≈ 0.89, under 95 %.
    expect(lowerTail(10, 3)).toBe(56);
  });

  it('is (x1, x6) for 6 values, covering 1 − 2/64; none for 5 or fewer (1 − 2/32 < 95 %)', () => {
    expect(medianInterval([0.3, -0.1, 0.2, 0.15, 0.05, 0.25])).toEqual({ low: -0.1, high: 0.3, coverage: 1 - 2 / 64 });
    expect(medianInterval([1, 2, 3, 4, 5])).toBeNull();
    expect(medianInterval([1])).toBeNull();
    expect(medianInterval([])).toBeNull();
  });

  it('picks ranks 6 and 15 of 20 (P(X ≤ 5) = 21700/2²⁰ ≈ 0.0207; P(X ≤ 6) ≈ 0.058 would not reach 95 %)', () => {
    // 101..120, scrambled: rank r is 100 + r.
    const values = Array.from({ length: 20 }, (_, i) => 101 + ((i * 7) % 20));
    const interval = medianInterval(values);
    expect(lowerTail(20, 6)).toBe(21700);
    expect(21700 / 2 ** 20).toBeCloseTo(0.0207, 4);
    expect(interval).toEqual({ low: 106, high: 115, coverage: 1 - (2 * 21700) / 2 ** 20 });
  });

  it('reaches 200 values: ranks 86 and 115 (coverage from exact fractions: 2²⁰⁰·P(X ≤ 85) is past 2⁵³)', () => {
    const values = Array.from({ length: 200 }, (_, i) => ((i * 77) % 200) / 1000);
    const interval = medianInterval(values)!;
    expect(interval.low).toBe(0.085);
    expect(interval.high).toBe(0.114);
    expect(interval.coverage).toBeCloseTo(0.9599628083866005, 14);
  });

  it('keeps ties: its ends are values of the sample', () => {
    expect(medianInterval([0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.2, 0.3, 0.3, 0.3])).toMatchObject({ low: 0.1, high: 0.3 });
  });
});

describe('summarizeTimeOverhead (a round trip: lower is better)', () => {
  it("takes 1 − ceiling ÷ ours from the medians, per round for the range, and keeps each side's own figures", () => {
    // Rounds: 1 − 0.5/1 = 0.5, 1 − 0.75/1 = 0.25, 1 − 1/0.5 = −1; medians: ours 1, ceiling 0.75.
    const summary = summarizeTimeOverhead([
      { ours: 1, ceiling: 0.5 },
      { ours: 1, ceiling: 0.75 },
      { ours: 0.5, ceiling: 1 },
    ]);
    expect(summary).toMatchObject({
      pairedRounds: 3,
      oursMedian: 1,
      ceilingMedian: 0.75,
      overhead: 0.25,
      overheadMin: -1,
      overheadMax: 0.5,
    });
    expect(summary.ours).toEqual({ rounds: 3, min: 0.5, q1: 0.5, median: 1, q3: 1, max: 1 });
    expect(summary.ceiling).toEqual({ rounds: 3, min: 0.5, q1: 0.5, median: 0.75, q3: 1, max: 1 });
  });

  it("takes each round's own overhead in the time form (1 − ceiling ÷ ours) for the median and its interval", () => {
    // Per round, 1 − ceiling ÷ ours: 0.5, 0.25, −1, 0.2, 0.6, 0.1 (the rate form, 1 − ours ÷ ceiling, would give −1,
    // −1/3, 0.5, −0.25, −1.5, −1/9).
    const summary = summarizeTimeOverhead([
      { ours: 2, ceiling: 1 },
      { ours: 4, ceiling: 3 },
      { ours: 1, ceiling: 2 },
      { ours: 5, ceiling: 4 },
      { ours: 5, ceiling: 2 },
      { ours: 10, ceiling: 9 },
    ]);
    expect(summary.pairMedian).toBeCloseTo(0.225, 12);
    expect(summary.pairCI).toEqual({ low: -1, high: 1 - 2 / 5, coverage: 1 - 2 / 64 });
    expect(summary.overheadMin).toBe(-1);
    expect(summary.overheadMax).toBe(1 - 2 / 5);
  });

  it('shows ours faster than its ceiling as a negative overhead (the NATS case: 1.780 against 1.919 ms)', () => {
    // Per round: 1 − 1/1.78 ≈ 0.44, 1 − 1.919/1.5 ≈ −0.28, 1 − 2.2/2.5 = 0.12: their median (0.12) would claim a 12 %
    // overhead.
    const summary = summarizeTimeOverhead([
      { ours: 1.78, ceiling: 1 },
      { ours: 1.5, ceiling: 1.919 },
      { ours: 2.5, ceiling: 2.2 },
    ]);
    expect(summary.oursMedian).toBe(1.78);
    expect(summary.ceilingMedian).toBe(1.919);
    expect(summary.overhead).toBeCloseTo(1 - 1.919 / 1.78, 12);
    expect(summary.overhead).toBeLessThan(0);
  });
});

describe('percentText', () => {
  it('gives whole percents, a true minus sign below 0, and - without a figure', () => {
    expect(percentText(0.254)).toBe('25 %');
    expect(percentText(0)).toBe('0 %');
    expect(percentText(-0.031)).toBe('−3 %');
    expect(percentText(null)).toBe('-');
  });
});
