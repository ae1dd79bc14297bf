import { describe, expect, it } from 'vitest';
import { joinSeries, SecondSeries } from '../../services/core/model/second-series.js';

// A section's per-second figures, built as images come: each second's count, intact bytes and a
// small distribution of its times, by the second (since the origin) the image was taken in.

const S = 1_000_000_000n;

describe('SecondSeries', () => {
  it(
    'buckets images by the whole second since its origin ' + 'they were taken in, and leaves seconds without one out',
    () => {
      const series = new SecondSeries(10n * S);
      series.add(10n * S + 200_000_000n, 100, 1);
      series.add(10n * S + 900_000_000n, 100, 3);
      // A corrupt image: counted, no intact bytes, no time.
      series.add(11n * S + 500_000_000n, 0, null);
      series.add(13n * S + 100_000_000n, 100, 2);
      const seconds = series.seconds();
      expect(seconds.map((s) => [s.second, s.images, s.intactBytes])).toEqual([
        [0, 2, 200],
        [1, 1, 0],
        [3, 1, 100],
      ]);
      expect(seconds[0]!.times).toMatchObject({ minMs: 1, maxMs: 3, p99Ms: null });
      expect(seconds[1]!.times).toBeNull();
      // Its open second is in the list as it stands.
      expect(seconds[2]!.times).toMatchObject({ minMs: 2, maxMs: 2 });
      series.destroy();
    },
  );

  it('counts a time that comes late (its second already closed) in the second open now', () => {
    const series = new SecondSeries(0n);
    series.add(100_000_000n, 100, 1);
    series.add(1n * S + 100_000_000n, 100, 5);
    // Taken in second 0, after second 1 opened: second 1 has it.
    series.add(900_000_000n, 100, 7);
    series.add(2n * S, 100, 2);
    expect(series.seconds().map((s) => [s.second, s.images, s.times?.maxMs])).toEqual([
      [0, 1, 1],
      [1, 2, 7],
      [2, 1, 2],
    ]);
    series.destroy();
  });

  it('counts a time before its origin in second 0', () => {
    const series = new SecondSeries(5n * S);
    series.add(4n * S, 100, 1);
    expect(series.seconds().map((s) => [s.second, s.images])).toEqual([[0, 1]]);
    series.destroy();
  });

  it('gives p50 within 1 % (two significant digits) and p99 from 100 times in a second', () => {
    const series = new SecondSeries(0n);
    for (let i = 1; i <= 100; i++) series.add(BigInt(i) * 1_000_000n, 10, i / 10);
    const [only] = series.seconds();
    expect(only).toMatchObject({ second: 0, images: 100, intactBytes: 1000 });
    expect(Math.abs(only!.times!.p50Ms - 5) / 5).toBeLessThan(0.01);
    expect(Math.abs(only!.times!.p99Ms! - 9.9) / 9.9).toBeLessThan(0.01);
    expect([only!.times!.minMs, only!.times!.maxMs]).toEqual([0.1, 10]);
    series.destroy();
  });
});

describe('joinSeries', () => {
  it("puts the transmitter's round trips beside the receiver's one-way times, by second", () => {
    const oneWay = [
      { second: 0, images: 2, intactBytes: 200, times: { minMs: 1, p50Ms: 1, p99Ms: null, maxMs: 3 } },
      { second: 2, images: 1, intactBytes: 100, times: null },
    ];
    const rtt = [
      { second: 0, rtt: { minMs: 2, p50Ms: 2, p99Ms: null, maxMs: 4 } },
      { second: 1, rtt: { minMs: 5, p50Ms: 5, p99Ms: null, maxMs: 5 } },
    ];
    expect(joinSeries(oneWay, rtt)).toEqual([
      {
        second: 0,
        images: 2,
        intactBytes: 200,
        oneWay: { minMs: 1, p50Ms: 1, p99Ms: null, maxMs: 3 },
        rtt: { minMs: 2, p50Ms: 2, p99Ms: null, maxMs: 4 },
      },
      { second: 2, images: 1, intactBytes: 100, oneWay: null, rtt: null },
    ]);
  });
});
