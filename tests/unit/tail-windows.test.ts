import { decodeFromCompressedBase64 } from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import { joinSeries, SecondSeries } from '../../services/core/model/second-series.js';
import type { SecondSample } from '../../services/core/model/series.js';
import { tailWindows } from '../../services/core/report/html/tail-windows.js';

// report.html's tail charts at low rates: seconds too small for a p99 merged into windows from their histograms.

const S = 1_000_000_000n;

/** A receiver's series of one-way times (ms) by second: `perSecond[k]` arrived in second k; absent when empty. */
function seriesOf(perSecond: readonly (readonly number[])[]): SecondSample[] {
  const series = new SecondSeries(0n, true);
  perSecond.forEach((times, second) => {
    for (const [i, ms] of times.entries()) series.add(BigInt(second) * S + BigInt(i) * 1000n, 100, ms);
  });
  const samples = joinSeries(series.seconds(), []);
  series.destroy();
  return samples;
}

/** 1, 2, …, n ms. */
const upTo = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

describe('SecondSeries keeping small histograms', () => {
  it('keeps the histogram of a second too small for a p99, and only when asked', () => {
    const kept = new SecondSeries(0n, true);
    const plain = new SecondSeries(0n);
    for (const series of [kept, plain]) {
      for (const ms of upTo(30)) series.add(0n, 100, ms);
      for (const ms of upTo(100)) series.add(S, 100, ms);
    }
    const [small, full] = kept.seconds();
    expect(small!.times!.p99Ms).toBeNull();
    const histogram = decodeFromCompressedBase64(small!.times!.histogramNs!, 32, false);
    expect([histogram.totalCount, histogram.maxValue]).toEqual([30, 30_015_487]);
    histogram.destroy();
    // A second of 100 has its own p99: nothing to merge, nothing kept.
    expect(full!.times!.p99Ms).not.toBeNull();
    expect(full!.times).not.toHaveProperty('histogramNs');
    expect(plain.seconds().map((s) => s.times)).not.toContainEqual(
      expect.objectContaining({ histogramNs: expect.anything() }),
    );
    kept.destroy();
    plain.destroy();
  });
});

describe('tailWindows', () => {
  it('merges 30-a-second seconds into windows of 4 s (120 times), each p99 from their histograms added', () => {
    // Second 5 has two slow times (80 and 90 ms): its window's p99 (the 119th of 120) is the 80 ms one, at the top
    // of its two-digit HDR bucket; the first window's is 30 ms, capped at the window's max.
    const samples = seriesOf([upTo(30), upTo(30), upTo(30), upTo(30), upTo(30), [...upTo(28), 80, 90], upTo(30)]);
    expect(samples.map((s) => s.oneWay?.p99Ms)).toEqual([null, null, null, null, null, null, null]);
    expect(tailWindows(samples, 'oneWay', 1)).toEqual({
      windowSeconds: 4,
      windows: [
        { startSecond: 0, seconds: 4, count: 120, p99Ms: 30, upperBound: false },
        { startSecond: 4, seconds: 3, count: 90, p99Ms: null, upperBound: false },
      ],
    });
    const eight = seriesOf([...Array.from({ length: 5 }, () => upTo(30)), [...upTo(28), 80, 90], upTo(30), upTo(30)]);
    expect(tailWindows(eight, 'oneWay', 1)!.windows[1]).toEqual({
      startSecond: 4,
      seconds: 4,
      count: 120,
      p99Ms: 80.216063,
      upperBound: false,
    });
  });

  it('never makes windows shorter than the buckets a long run is drawn in', () => {
    // 240 times in one 8 s window: the p99, the 238th, is one of the eight 30 ms times (capped at the max).
    const samples = seriesOf(Array.from({ length: 8 }, () => upTo(30)));
    expect(tailWindows(samples, 'oneWay', 8)).toEqual({
      windowSeconds: 8,
      windows: [{ startSecond: 0, seconds: 8, count: 240, p99Ms: 30, upperBound: false }],
    });
  });

  it('widens the windows until one holds 100 when uneven seconds would leave every one short', () => {
    // 60 in second 0 and 60 in second 3: windows of 2 or 3 s hold 60 each; 4 s hold all 120, the 119th 60 ms.
    const samples = seriesOf([upTo(60), [], [], upTo(60)]);
    expect(tailWindows(samples, 'oneWay', 1)).toEqual({
      windowSeconds: 4,
      windows: [{ startSecond: 0, seconds: 4, count: 120, p99Ms: 60, upperBound: false }],
    });
  });

  it('gives no p99 to a section of fewer than 100 times, however wide its window', () => {
    expect(tailWindows(seriesOf([upTo(30), upTo(30)]), 'oneWay', 1)).toEqual({
      windowSeconds: 4,
      windows: [{ startSecond: 0, seconds: 2, count: 60, p99Ms: null, upperBound: false }],
    });
  });

  it('bounds a window holding a second of its own p99 (no histogram kept) from above', () => {
    // Second 0 had 150 times (p99 12 ms); seconds 1 to 3, 20 each, the slowest 20 ms: the bound is the larger. A
    // typical second holds 20: windows of 5 s, the one here cut at the span's 4.
    const full: SecondSample = {
      second: 0,
      images: 150,
      intactBytes: 0,
      oneWay: { minMs: 1, p50Ms: 2, p99Ms: 12, maxMs: 40 },
      rtt: null,
    };
    const samples = [full, ...seriesOf([[], upTo(20), upTo(20), upTo(20)])];
    expect(tailWindows(samples, 'oneWay', 1)).toEqual({
      windowSeconds: 5,
      windows: [{ startSecond: 0, seconds: 4, count: 160, p99Ms: 20, upperBound: true }],
    });
  });

  it('leaves seconds be when a typical second has its p99, or none kept a histogram (an older file)', () => {
    const second = (n: number, p99Ms: number | null): SecondSample => ({
      second: n,
      images: 150,
      intactBytes: 0,
      oneWay: { minMs: 1, p50Ms: 2, p99Ms, maxMs: 3 },
      rtt: null,
    });
    expect(tailWindows([second(0, 2.5), second(1, 2.5)], 'oneWay', 1)).toBeUndefined();
    // A file written before seconds kept histograms: nothing to merge from.
    expect(tailWindows([second(0, null), second(1, null)], 'oneWay', 1)).toBeUndefined();
    // Two seconds with their own p99 and one short of it: the typical second has one.
    const [short] = seriesOf([upTo(40)]);
    expect(tailWindows([second(0, 2.5), second(1, 2.5), { ...short!, second: 2 }], 'oneWay', 1)).toBeUndefined();
    // The round trips' seconds (the transmitter's) keep no histogram: drawn by the second.
    expect(tailWindows(seriesOf([upTo(30), upTo(30)]), 'rtt', 1)).toBeUndefined();
  });

  it('refuses a window shorter than a second', () => {
    expect(() => tailWindows([], 'oneWay', 0)).toThrow(RangeError);
  });
});
