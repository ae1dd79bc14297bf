import { describe, expect, it } from 'vitest';
import type { MedianInterval, OverheadSummary } from '../../scripts/lib/overhead.js';
import type { CeilingCell, CeilingSummary, ShapeName } from '../../scripts/bench/ceiling-model.js';
import { ceilingCharts, ceilingLines, halfWidthText, intervalText } from '../../scripts/bench/ceiling-tables.js';
import { optionsFrom, planFrom } from '../../scripts/bench/options.js';
import type { CeilingFigures } from '../../scripts/ceiling/drive.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { fixtureCost, fixturePlan, fixtureSection } from '../helpers/fixtures.js';

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
    // With its rounds: how many would bring it to ±5, as the interval narrows with √rounds: 10 × (8 / 5)² = 25.6.
    expect(halfWidthText(ci(0.32, 0.48), 10)).toBe('±8 wide, ~26 rounds');
    expect(halfWidthText(ci(-0.05, 0.26), 30)).toBe('±16 wide, ~289 rounds');
    expect(halfWidthText(ci(0.121, 0.193), 10)).toBe('±4');
  });
});

describe('ceilingLines', () => {
  const text = ceilingLines(plan, [], summary, false).join('\n');

  it('says what the interval is, and no longer shows the min–max range', () => {
    expect(text).toContain(
      "95 % CI: a distribution-free confidence interval of the median of the rounds' own pair overheads (order " +
        'statistics of the binomial; needs 6 rounds or more); a half-width over 5 points is marked wide, with ' +
        'about how many rounds would narrow it to 5 (it narrows with the square root of the rounds: --rounds=).',
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
    expect(text).toMatch(
      /zeromq\s+2000\.0\s+1500\.0\s+25 %\s+−5 % – 26 %\s+±16 wide, ~97 rounds\s+1800\.0\s+10 %\s+-\s+-\s+-/,
    );
    expect(text).toMatch(/overhead\s+95 % CI\s+±\s+Result/);
    expect(text).toMatch(/tcp\s+100000\s+70000\s+30 %\s+10 % – 21 %\s+±6 wide, ~13 rounds\s+ok/);
    expect(text).toMatch(/zeromq\s+50000\s+45000\s+10 %\s+-\s+-\s+ok/);
    expect(text).toMatch(/overhead\s+95 % CI\s+±\s+ours one-way p50 ms/);
    expect(text).toMatch(/zeromq\s+-\s+-\s+−14 %\s+−30 % – 30 %\s+±30 wide, ~360 rounds\s+-\s+ok/);
  });

  it('gives the chart the same interval', () => {
    const note = ceilingCharts(plan, summary, false)[0]!.note;
    expect(note).toContain('TCP 15 % (12 % – 19 %)');
  });
});

describe("the large table's CPU columns", () => {
  // Three rounds of 3,000 images: ours' receiver hashed for 60, 75 and 90 ms (0.020, 0.025, 0.030 per image); the
  // ceiling's sender spent 300, 330 and 360 ms (0.100, 0.110, 0.120), its receiver 450 and 510 ms (0.150, 0.170), and
  // once nothing it could tell (null, as in one process).
  const ours = (verifyMs: number | null, receiverCpuMsPerImage: number): SectionResult => ({
    ...fixtureSection(fixturePlan({ transport: 'tcp', label: 'tcp' }), [1, 1], null, {
      ...fixtureCost,
      receiver: { ...fixtureCost.receiver, cpuMsPerImage: receiverCpuMsPerImage },
    }),
    imageCount: 3000,
    verifyMs,
  });
  const ceiling = (senderCpuMs: number, receiverCpuMs: number | null): CeilingFigures => ({
    MBps: 2000,
    imagesPerSecond: 3664,
    spanMs: 818.7,
    rttP50Ms: 3.2,
    rttP99Ms: 8.1,
    senderCpuMs,
    receiverCpuMs,
    count: 3000,
    imageBytes: 545_792,
    window: 16,
  });
  const cell = (
    transport: string,
    round: number,
    own: SectionResult | undefined,
    figures: CeilingCell['ceiling'],
  ): CeilingCell => ({ transport, shape: 'large', round, ours: own, oursUnverified: undefined, ceiling: figures });
  const cells: CeilingCell[] = [
    cell('tcp', 0, ours(60, 1.4), ceiling(300, 450)),
    cell('tcp', 1, ours(90, 1.5), ceiling(360, null)),
    cell('tcp', 2, ours(75, 1.6), ceiling(330, 510)),
    // No hashing (VERIFY=false) and a failed ceiling: nothing to show.
    cell('zeromq', 0, ours(null, 2), { failed: 'no ack for 10000 ms after 3 of 3100 images' }),
  ];

  it("shows the ceiling's TX and RX CPU and our hashing per image beside ours, medians of the rounds", () => {
    const text = ceilingLines(plan, cells, summary, false).join('\n');
    expect(text).toMatch(/TX CPU\s+RX CPU\s+ceiling TX CPU\s+ceiling RX CPU\s+RX hash\s+Result/);
    expect(text).toMatch(/tcp\s+2000\.0\s+1700\.0\s+.*\s+2\.000\s+1\.500\s+0\.110\s+0\.160\s+0\.025\s+ok\n/);
    expect(text).toMatch(/zeromq\s+2000\.0\s+1500\.0\s+.*\s+2\.000\s+2\.000\s+-\s+-\s+-\s+ok; ceiling FAILED: no ack/);
    expect(text).toContain(
      "ceiling RX CPU: the ceiling client's receiving process, per image over the same span; RX hash: our " +
        "receiver's checksum time per image, inside its RX CPU.",
    );
  });

  it("shows only the ceiling's CPU per image under --ceiling-only", () => {
    const only = cells.map((c) => ({ ...c, ours: undefined }));
    const text = ceilingLines(plan, only, summary, true).join('\n');
    expect(text).toMatch(/Transport\s+ceiling MB\/s\s+ceiling TX CPU\s+ceiling RX CPU\s+Result\n/);
    expect(text).toMatch(/tcp\s+2000\.0\s+0\.110\s+0\.160\s+ok\n/);
    expect(text).toMatch(/zeromq\s+2000\.0\s+-\s+-\s+ok; ceiling FAILED/);
    expect(text).toContain('CPU: ms per image, each process from its first timed image to the last ack.');
    expect(text).not.toContain('RX hash');
  });
});
