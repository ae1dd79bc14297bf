import { describe, expect, it } from 'vitest';
import type { MedianInterval, OverheadSummary } from '../../scripts/lib/overhead.js';
import type { CeilingSummary, ShapeName } from '../../scripts/bench/ceiling-model.js';
import { ceilingCharts, ceilingLines, halfWidthText, intervalText } from '../../scripts/bench/ceiling-tables.js';
import { optionsFrom, planFrom } from '../../scripts/bench/options.js';

// The ceiling part's tables: each overhead beside the 95 % confidence interval of the median of the rounds' own
// overheads, and that interval's half-width, marked wide past 5 points.

const plan = planFrom(optionsFrom(['ceiling', '--transports=tcp,zeromq', '--rounds=10'], []));

const overhead = (oursMedian: number, ceilingMedian: number, pairCI: MedianInterval | null): OverheadSummary => ({
  pairedRounds: 10,
  oursMedian,
  ceilingMedian,
  overhead: 1 - oursMedian / ceilingMedian,
  overheadMin: pairCI && pairCI.low - 0.1,
  overheadMax: pairCI && pairCI.high + 0.1,
  pairMedian: pairCI && (pairCI.low + pairCI.high) / 2,
  pairCI,
  ours: null,
  ceiling: null,
});
const ci = (low: number, high: number): MedianInterval => ({ low, high, coverage: 1 - (2 * 11) / 1024 });
const summaryOf = (
  transport: string,
  shape: ShapeName,
  own: OverheadSummary,
  unverified: OverheadSummary | null = null,
): CeilingSummary => ({
  transport,
  shape,
  figure: shape === 'large' ? 'MB/s' : shape === 'small' ? 'images/s' : 'RTT p50 ms',
  overhead: own,
  overheadUnverified: unverified,
});

const summary: CeilingSummary[] = [
  summaryOf('tcp', 'large', overhead(1700, 2000, ci(0.121, 0.193)), overhead(1900, 2000, ci(0.1, 0.2))),
  summaryOf('zeromq', 'large', overhead(1500, 2000, ci(-0.05, 0.26)), overhead(1800, 2000, null)),
  summaryOf('tcp', 'small', overhead(70_000, 100_000, ci(0.1, 0.212))),
  summaryOf('zeromq', 'small', overhead(45_000, 50_000, null)),
  summaryOf('tcp', 'latency', overhead(0.3, 0.25, ci(0.04, 0.1))),
  summaryOf('zeromq', 'latency', overhead(0.4, 0.35, ci(-0.3, 0.3))),
];

describe('intervalText and halfWidthText', () => {
  it('write the interval in whole percents and its half-width in whole points, wide past 5 as shown', () => {
    expect(intervalText(ci(0.121, 0.193))).toBe('12 % – 19 %');
    expect(halfWidthText(ci(0.121, 0.193))).toBe('±4');
    expect(intervalText(ci(-0.05, 0.26))).toBe('−5 % – 26 %');
    expect(halfWidthText(ci(-0.05, 0.26))).toBe('±16 wide');
    // 5 points is not over 5; 5.6 shows as 6, and is.
    expect(halfWidthText(ci(0.1, 0.2))).toBe('±5');
    expect(halfWidthText(ci(0.1, 0.212))).toBe('±6 wide');
    expect(intervalText(null)).toBe('-');
    expect(halfWidthText(null)).toBe('-');
  });
});

describe('ceilingLines', () => {
  const text = ceilingLines(plan, [], summary, false).join('\n');

  it('says what the interval is, and no longer shows the min–max range', () => {
    expect(text).toContain(
      "95 % CI: a distribution-free confidence interval of the median of the rounds' own pair overheads (order " +
        'statistics of the binomial; needs 6 rounds or more); a half-width over 5 points is marked wide: more ' +
        'rounds narrow it.',
    );
    expect(text).not.toContain('overhead range');
    expect(text).not.toContain('least to most');
  });

  it('shows the large shape 3,000 images long', () => {
    expect(text).toContain('Large: 533.0 KiB × 3,000 after 100 untimed');
  });

  it('puts each interval and its half-width after its overhead, the unverified one too', () => {
    expect(text).toMatch(
      /overhead\s+95 % CI\s+±\s+ours unverified MB\/s\s+overhead unverified\s+unverified 95 % CI\s+±\s+TX CPU/,
    );
    expect(text).toMatch(/tcp\s+2000\.0\s+1700\.0\s+15 %\s+12 % – 19 %\s+±4\s+1900\.0\s+5 %\s+10 % – 20 %\s+±5\s+-/);
    expect(text).toMatch(/zeromq\s+2000\.0\s+1500\.0\s+25 %\s+−5 % – 26 %\s+±16 wide\s+1800\.0\s+10 %\s+-\s+-\s+-/);
    expect(text).toMatch(/overhead\s+95 % CI\s+±\s+Result/);
    expect(text).toMatch(/tcp\s+100000\s+70000\s+30 %\s+10 % – 21 %\s+±6 wide\s+ok/);
    expect(text).toMatch(/zeromq\s+50000\s+45000\s+10 %\s+-\s+-\s+ok/);
    expect(text).toMatch(/overhead\s+95 % CI\s+±\s+ours one-way p50 ms/);
    expect(text).toMatch(/zeromq\s+-\s+-\s+−14 %\s+−30 % – 30 %\s+±30 wide\s+-\s+ok/);
  });

  it('gives the chart the same interval', () => {
    const note = ceilingCharts(plan, summary, false)[0]!.note;
    expect(note).toContain('TCP 15 % (12 % – 19 %)');
  });
});
