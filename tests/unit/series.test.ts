import { build, encodeIntoCompressedBase64 } from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import {
  bucketSeries,
  latencyCurve,
  type SecondDistribution,
  type SecondSample,
} from '../../services/core/model/series.js';

/** A distribution with a p99 only when given one. */
const dist = (minMs: number, p50Ms: number, maxMs: number, p99Ms: number | null = null): SecondDistribution => ({
  minMs,
  p50Ms,
  p99Ms,
  maxMs,
});

const sample = (
  second: number,
  images: number,
  intactBytes: number,
  oneWay: SecondDistribution | null,
  rtt: SecondDistribution | null = null,
): SecondSample => ({ second, images, intactBytes, oneWay, rtt });

describe('bucketSeries', () => {
  it('keeps one bucket per second when they fit, a second without arrivals as rates 0 and no distribution', () => {
    const samples = [
      sample(0, 10, 5_000_000, dist(1, 2, 3), dist(1.5, 2.5, 3.5)),
      sample(1, 4, 2_000_000, dist(1, 1.5, 2)),
      sample(3, 1, 0, null, dist(9, 9, 9)),
    ];
    expect(bucketSeries(samples, 10)).toEqual([
      {
        startSecond: 0,
        seconds: 1,
        images: 10,
        imagesPerSecond: 10,
        throughputMBps: 5,
        oneWay: dist(1, 2, 3),
        rtt: dist(1.5, 2.5, 3.5),
      },
      {
        startSecond: 1,
        seconds: 1,
        images: 4,
        imagesPerSecond: 4,
        throughputMBps: 2,
        oneWay: dist(1, 1.5, 2),
        rtt: null,
      },
      { startSecond: 2, seconds: 1, images: 0, imagesPerSecond: 0, throughputMBps: 0, oneWay: null, rtt: null },
      // A corrupt image only: it counts as an arrival, with no intact bytes and no one-way time.
      {
        startSecond: 3,
        seconds: 1,
        images: 1,
        imagesPerSecond: 1,
        throughputMBps: 0,
        oneWay: null,
        rtt: dist(9, 9, 9),
      },
    ]);
  });

  it('merges seconds: rates over the whole bucket, min of mins, median of p50s, largest p99, max of maxes', () => {
    const samples = [
      sample(0, 300, 3_000_000, dist(1.0, 2.0, 9.0, 5.0), dist(2, 3, 10, 6)),
      sample(1, 200, 2_000_000, dist(0.5, 4.0, 7.0, 6.5), dist(1, 5, 8, null)),
      // Second 2 had no arrival: it still counts in the first bucket's three seconds.
      sample(3, 100, 1_000_000, dist(0.8, 3.0, 4.0, null)),
      sample(4, 150, 600_000, dist(0.9, 5.0, 6.0, null)),
    ];
    // Five seconds into at most two buckets: three seconds each, the last one two.
    expect(bucketSeries(samples, 2)).toEqual([
      {
        startSecond: 0,
        seconds: 3,
        images: 500,
        imagesPerSecond: 500 / 3,
        throughputMBps: 5 / 3,
        oneWay: dist(0.5, 3.0, 9.0, 6.5),
        rtt: dist(1, 4, 10, 6),
      },
      // Two p50s: their mean; no second had a p99 (under 100 times each), so neither has the bucket.
      {
        startSecond: 3,
        seconds: 2,
        images: 250,
        imagesPerSecond: 125,
        throughputMBps: 0.8,
        oneWay: dist(0.8, 4.0, 6.0, null),
        rtt: null,
      },
    ]);
  });

  it('gives a day of seconds in at most 2,000 buckets of equal whole seconds, the last shorter', () => {
    const day = Array.from({ length: 86_400 }, (_, second) => sample(second, 100, 100_000_000, dist(1, 2, 3, 2.5)));
    const buckets = bucketSeries(day, 2000);
    expect(buckets).toHaveLength(1964);
    expect(
      buckets.slice(0, -1).every((b, i) => b.startSecond === i * 44 && b.seconds === 44 && b.images === 4400),
    ).toBe(true);
    expect(buckets.at(-1)).toMatchObject({
      startSecond: 86_372,
      seconds: 28,
      images: 2800,
      imagesPerSecond: 100,
      throughputMBps: 100,
    });
  });

  it('is empty without samples and refuses a bad maxPoints or second', () => {
    expect(bucketSeries([], 5)).toEqual([]);
    expect(() => bucketSeries([sample(0, 1, 1, null)], 0)).toThrow(RangeError);
    expect(() => bucketSeries([sample(0, 1, 1, null)], 1.5)).toThrow(RangeError);
    expect(() => bucketSeries([sample(-1, 1, 1, null)], 5)).toThrow(RangeError);
    expect(() => bucketSeries([sample(0.5, 1, 1, null)], 5)).toThrow(RangeError);
  });
});

/** An encoded histogram as the receiver writes it: whole ns, 1 ns to an hour, 3 significant digits. */
function encoded(record: (histogram: ReturnType<typeof build>) => void): string {
  const histogram = build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000_000,
    numberOfSignificantValueDigits: 3,
  });
  record(histogram);
  const text = encodeIntoCompressedBase64(histogram);
  histogram.destroy();
  return text;
}

describe('latencyCurve', () => {
  it('draws every time of a small sample at Hazen’s position, slowest not at 100 %', () => {
    // Values under 2,048 ns are exact at 3 significant digits.
    const curve = latencyCurve(
      encoded((h) => {
        for (const v of [400, 100, 300, 100]) h.recordValue(v);
      }),
      10,
    );
    expect(curve).toEqual([
      { percentile: 12.5, ms: 0.0001 },
      { percentile: 37.5, ms: 0.0001 },
      { percentile: 62.5, ms: 0.0003 },
      { percentile: 87.5, ms: 0.0004 },
    ]);
  });

  it('gives a time as its histogram bucket’s highest value, within 0.1 %', () => {
    // 5 ms falls in a bucket 4,096 ns wide: 4,997,120 to 5,001,215 ns.
    expect(
      latencyCurve(
        encoded((h) => h.recordValue(5_000_000)),
        2,
      ),
    ).toEqual([{ percentile: 50, ms: 5.001215 }]);
  });

  it('spreads at most maxPoints evenly on log(1 / (1 − p)), from the fastest to the slowest', () => {
    // 1,000 times of 1 … 1,000 ns into 5 points: x = 2000^(k/4) = 1, 6.69, 44.7, 299, 2000, rank = round(999.5 − 1000 /
    // x).
    const curve = latencyCurve(
      encoded((h) => {
        for (let v = 1; v <= 1000; v++) h.recordValue(v);
      }),
      5,
    );
    expect(curve.map((p) => p.ms)).toEqual([0.000001, 0.000851, 0.000978, 0.000997, 0.001]);
    const expected = [0.05, 85.05, 97.75, 99.65, 99.95];
    curve.forEach((p, i) => {
      expect(p.percentile).toBeCloseTo(expected[i]!, 12);
    });
  });

  it('draws the tail of a million times as finely as the middle, and its slowest hundred images every one', () => {
    // Times 1 … 1,000 ns, a thousand of each: the image of rank r took floor(r / 1000) + 1 ns.
    const n = 1_000_000;
    const curve = latencyCurve(
      encoded((h) => {
        for (let v = 1; v <= 1000; v++) h.recordValueWithCount(v, 1000);
      }),
      2000,
    );
    expect(curve.length).toBeLessThanOrEqual(2000);
    const ranks = curve.map((p) => Math.round((p.percentile / 100) * n - 0.5));
    curve.forEach((p, i) => {
      expect(p.ms).toBe((Math.floor(ranks[i]! / 1000) + 1) / 1e6);
    });
    const between = (from: number, to: number): number =>
      curve.filter((p) => p.percentile >= from && p.percentile < to).length;
    // log10(2n) = 6.3 decades over 2,000 points: about 317 a decade, …
    for (const [from, to] of [
      [90, 99],
      [99, 99.9],
      [99.9, 99.99],
    ] as const) {
      expect(between(from, to), `p${from} to p${to}`).toBeGreaterThan(310);
      expect(between(from, to), `p${from} to p${to}`).toBeLessThan(325);
    }
    // … until a decade holds fewer images than that: past p99.99 (the slowest 100) each one is a point.
    expect(ranks.filter((r) => r >= n - 100)).toEqual(Array.from({ length: 100 }, (_, i) => n - 100 + i));
    expect(curve[0]).toEqual({ percentile: 0.5 / 10_000, ms: 0.000001 });
    expect(curve.at(-1)).toEqual({ percentile: (100 * (n - 0.5)) / n, ms: 0.001 });
  });

  it('is empty for an empty histogram, and needs two points at least', () => {
    expect(
      latencyCurve(
        encoded(() => {}),
        10,
      ),
    ).toEqual([]);
    expect(() =>
      latencyCurve(
        encoded((h) => h.recordValue(1)),
        1,
      ),
    ).toThrow(RangeError);
  });
});
