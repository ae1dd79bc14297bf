import { describe, expect, it } from 'vitest';
import { harnessOverhead, percentText, summarizeOverhead, summarizeTimeOverhead } from '../../scripts/lib/overhead.js';

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
  it('takes each round\'s overhead from its own pair, then the median and the min–max of those', () => {
    // Rounds: 0.25, 0.5, 0.125: the median of the rounds' overheads, not 1 − the ratio of the medians (1 − 750/1024 ≈ 0.268).
    const summary = summarizeOverhead([
      { ours: 750, ceiling: 1000 },
      { ours: 512, ceiling: 1024 },
      { ours: 896, ceiling: 1024 },
    ]);
    expect(summary).toEqual({ pairedRounds: 3, oursMedian: 750, ceilingMedian: 1024, overheadMedian: 0.25, overheadMin: 0.125, overheadMax: 0.5 });
  });

  it('leaves out a round missing either figure from the overhead, and keeps the other figure in its median', () => {
    const summary = summarizeOverhead([
      { ours: 500, ceiling: 1000 },
      { ours: null, ceiling: 2000 },
      { ours: 700, ceiling: null },
      { ours: 300, ceiling: 1000 },
    ]);
    expect(summary).toEqual({ pairedRounds: 2, oursMedian: 500, ceilingMedian: 1000, overheadMedian: 0.6, overheadMin: 0.5, overheadMax: 0.7 });
  });

  it('has no overhead at all when no round has both', () => {
    expect(summarizeOverhead([{ ours: null, ceiling: 1000 }])).toEqual({ pairedRounds: 0, oursMedian: null, ceilingMedian: 1000, overheadMedian: null, overheadMin: null, overheadMax: null });
    expect(summarizeOverhead([])).toEqual({ pairedRounds: 0, oursMedian: null, ceilingMedian: null, overheadMedian: null, overheadMin: null, overheadMax: null });
  });
});

describe('summarizeTimeOverhead (a round trip: lower is better)', () => {
  it('takes 1 − ceiling ÷ ours per round, and keeps each side\'s own median', () => {
    // Rounds: 1 − 0.5/1 = 0.5, 1 − 0.75/1 = 0.25, 1 − 1/0.5 = −1 (ours twice as fast: noise, shown).
    const summary = summarizeTimeOverhead([
      { ours: 1, ceiling: 0.5 },
      { ours: 1, ceiling: 0.75 },
      { ours: 0.5, ceiling: 1 },
    ]);
    expect(summary).toEqual({ pairedRounds: 3, oursMedian: 1, ceilingMedian: 0.75, overheadMedian: 0.25, overheadMin: -1, overheadMax: 0.5 });
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
