import { decodeFromCompressedBase64, JsHistogram } from 'hdr-histogram-js';
import { medianOf } from './stats.js';

// What report.html draws a section's run from once its per-image records live in a file of their
// own: one aggregate per second of the measured span, and the HDR histograms of its times. Both
// stay small however many images a run sends (20 million in a day's soak), and these functions
// shrink them further to what a chart can show. Pure: no clock, no file.

/** A distribution of one second's times, in ms; p99 null below 100 times (MIN_SAMPLES_FOR.p99 in stats.ts). */
export interface SecondDistribution {
  minMs: number;
  p50Ms: number;
  p99Ms: number | null;
  maxMs: number;
  /**
   * With too few times for a p99: the second's HDR histogram (compressed base64, whole ns, 2 significant digits), what
   * consecutive seconds merge from into windows of 100 for report.html's tail charts. Absent otherwise, and in files
   * written before it was kept.
   */
  histogramNs?: string;
}

/** One second of a section's measured span, by arrival on the receiver's clock. */
export interface SecondSample {
  /** Whole seconds since the section's measured span began (its first recorded image's stamp). */
  second: number;
  /** Images that arrived in this second, intact or not. */
  images: number;
  /** Bytes of the intact images among them. */
  intactBytes: number;
  /** One-way times of the intact images that arrived in it; null when none. */
  oneWay: SecondDistribution | null;
  /**
   * Round trips (stamp -> ack processed) acknowledged in this second of the transmitter's clock (from its first
   * recorded stamp); null when none.
   */
  rtt: SecondDistribution | null;
}

/**
 * Consecutive seconds merged into one chart point. Its p50 is the median of its seconds' p50s and
 * its p99 the largest of their p99s: percentiles do not merge, so the p99 is an upper bound on the
 * bucket's true p99 (no second in it had a worse one), never an estimate of it.
 */
export interface SeriesBucket {
  /** First second it covers, in seconds since the section's measured span began. */
  startSecond: number;
  /** Seconds it covers, arrivals or not: its duration (the last bucket may be shorter than the others). */
  seconds: number;
  /** Images that arrived in it, intact or not. */
  images: number;
  /** Those images per second of its duration. */
  imagesPerSecond: number;
  /** Intact bytes per second of its duration, in MB/s (10^6 bytes). */
  throughputMBps: number;
  /** Its seconds' one-way times merged (see above); null when no second in it had an intact image. */
  oneWay: SecondDistribution | null;
  /** Its seconds' round trips merged (see above); null when no second in it had one. */
  rtt: SecondDistribution | null;
}

/**
 * A section's per-second samples as at most `maxPoints` buckets of equal whole seconds (the last
 * one possibly shorter), from second 0 to its last sample's second. A second with no sample had no
 * arrival: it counts as 0 images in its bucket's rates, and a bucket of such seconds only is kept
 * (rates 0, distributions null) so a stall shows as a drop and a gap rather than a line across it.
 * The last second is counted whole, though the section may have ended within it.
 */
export function bucketSeries(samples: readonly SecondSample[], maxPoints: number): SeriesBucket[] {
  if (!Number.isInteger(maxPoints) || maxPoints < 1)
    throw new RangeError(`bucketSeries needs maxPoints a whole number from 1, got ${maxPoints}`);
  if (samples.length === 0) return [];
  let spanSeconds = 0;
  for (const s of samples) {
    if (!Number.isInteger(s.second) || s.second < 0)
      throw new RangeError(`a second sample's second must be a whole number from 0, got ${s.second}`);
    spanSeconds = Math.max(spanSeconds, s.second + 1);
  }
  const bucketSeconds = Math.ceil(spanSeconds / maxPoints);
  const groups: SecondSample[][] = Array.from({ length: Math.ceil(spanSeconds / bucketSeconds) }, () => []);
  for (const s of samples) groups[Math.floor(s.second / bucketSeconds)]!.push(s);
  return groups.map((group, index): SeriesBucket => {
    const startSecond = index * bucketSeconds;
    const seconds = Math.min(bucketSeconds, spanSeconds - startSecond);
    const images = group.reduce((n, s) => n + s.images, 0);
    const intactBytes = group.reduce((n, s) => n + s.intactBytes, 0);
    return {
      startSecond,
      seconds,
      images,
      imagesPerSecond: images / seconds,
      throughputMBps: intactBytes / 1e6 / seconds,
      oneWay: mergeDistributions(group.flatMap((s) => (s.oneWay === null ? [] : [s.oneWay]))),
      rtt: mergeDistributions(group.flatMap((s) => (s.rtt === null ? [] : [s.rtt]))),
    };
  });
}

/** Seconds' distributions as one bucket's (see {@link SeriesBucket}); null when there are none. */
function mergeDistributions(distributions: readonly SecondDistribution[]): SecondDistribution | null {
  if (distributions.length === 0) return null;
  const p99s = distributions.flatMap((d) => (d.p99Ms === null ? [] : [d.p99Ms]));
  return {
    minMs: Math.min(...distributions.map((d) => d.minMs)),
    p50Ms: medianOf(distributions.map((d) => d.p50Ms))!,
    p99Ms: p99s.length === 0 ? null : Math.max(...p99s),
    maxMs: Math.max(...distributions.map((d) => d.maxMs)),
  };
}

/** One point of a latency percentile curve. */
export interface CurvePoint {
  /** Where the time sits among all of them, in percent: the i-th fastest of n at 100 × (i + 0.5) ÷ n. */
  percentile: number;
  /** The time, in ms: the highest value of its histogram bucket (within 0.1 % at 3 significant digits). */
  ms: number;
}

/**
 * The percentile curve of an HDR histogram of times in whole nanoseconds (encodeIntoCompressedBase64):
 * the i-th fastest of n at Hazen's plotting position (i + 0.5) ÷ n, so the slowest is not at 100 %.
 * With more than `maxPoints` times the points are spread evenly over log(1 ÷ (1 − p)), from p = 0 to
 * the slowest: each decade of that axis (90 %, 99 %, 99.9 %, 99.99 %, …) gets as many, so the tail
 * is drawn as finely as the middle. Empty for an empty histogram.
 */
export function latencyCurve(encodedHistogram: string, maxPoints: number): CurvePoint[] {
  if (!Number.isInteger(maxPoints) || maxPoints < 2)
    throw new RangeError(`latencyCurve needs maxPoints a whole number from 2, got ${maxPoints}`);
  // 64-bit counts: a day's soak can put more than 2^31 times in one bucket. Decoded in JavaScript
  // (not WebAssembly), so nothing outlives the call but garbage; destroy() says so all the same.
  const histogram = decodeFromCompressedBase64(encodedHistogram, 64, false);
  try {
    if (!(histogram instanceof JsHistogram))
      throw new TypeError('hdr-histogram-js decoded to a WebAssembly histogram where a JavaScript one was asked for');
    const n = histogram.totalCount;
    if (n === 0) return [];
    const ranks = curveRanks(n, maxPoints);
    const points: CurvePoint[] = [];
    // One walk up the counts: ranks ascend, so each is found at or after the previous one's bucket.
    let next = 0;
    let below = 0;
    for (let index = 0; index < histogram.countsArrayLength && next < ranks.length; index++) {
      const count = histogram.getCountAtIndex(index);
      if (count === 0) continue;
      const valueNs = histogram.highestEquivalentValue(histogram.valueFromIndex(index));
      below += count;
      while (next < ranks.length && ranks[next]! < below) {
        points.push({ percentile: (100 * (ranks[next]! + 0.5)) / n, ms: valueNs / 1e6 });
        next++;
      }
    }
    return points;
  } finally {
    histogram.destroy();
  }
}

/** Ranks (0 = fastest) of n times to draw: all of them, or at most maxPoints evenly spread on the log axis. */
function curveRanks(n: number, maxPoints: number): number[] {
  if (n <= maxPoints) return Array.from({ length: n }, (_, i) => i);
  // x = 1 ÷ (1 − p) runs from 1 (the fastest, nearly) to 2n (the slowest, at p = 1 − 0.5 ÷ n);
  // the rank at x is n − 0.5 − n ÷ x. Neighbouring x can round to one rank: the set keeps it once.
  const ranks = new Set<number>();
  for (let k = 0; k < maxPoints; k++) {
    const x = (2 * n) ** (k / (maxPoints - 1));
    ranks.add(Math.min(n - 1, Math.max(0, Math.round(n - 0.5 - n / x))));
  }
  return [...ranks].sort((a, b) => a - b);
}
