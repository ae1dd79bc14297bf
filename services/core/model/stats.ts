import {
  build as buildHistogram,
  decodeFromCompressedBase64,
  encodeIntoCompressedBase64,
  initWebAssemblySync,
  JsHistogram,
  type Histogram,
} from 'hdr-histogram-js';

/**
 * Fewest times a percentile needs before it is reported: below 1 ÷ (1 − p) times the nearest-rank
 * p-th percentile is the slowest time itself (with 99 times, p99 is the max), so it would be the
 * max printed under another name. p50 is always reported (of one time, that time).
 */
export const MIN_SAMPLES_FOR = { p90: 10, p99: 100, p999: 1000 } as const;

/** Distribution of per-image transmission times, all in milliseconds. */
export interface LatencySummary {
  count: number;
  /**
   * Percentiles from an HDR histogram at 3 significant digits (within 0.1 % of the true value);
   * p90, p99 and p99.9 are null below {@link MIN_SAMPLES_FOR} times (the sample cannot tell them from the max).
   */
  p50Ms: number;
  p90Ms: number | null;
  p99Ms: number | null;
  p999Ms: number | null;
  /** Exact, from the raw times. */
  minMs: number;
  maxMs: number;
  meanMs: number;
  /** Sample standard deviation (divides by n − 1; 0 for one time). */
  stdDevMs: number;
}

/** Smallest and largest of a set of values, e.g. one figure across repeats. */
export interface Range {
  min: number;
  max: number;
}

/** Nanoseconds (a difference of two hrtime.bigint readings) as fractional milliseconds. */
export function nsToMs(ns: bigint): number {
  return Number(ns) / 1e6;
}

// nsBetween's scratch: two stamps as 64-bit words, read back as 32-bit halves (low half first on a little-endian host).
const STAMP_WORDS = new BigInt64Array(2);
const STAMP_LOW_HALVES = new Uint32Array(STAMP_WORDS.buffer);
const STAMP_HIGH_HALVES = new Int32Array(STAMP_WORDS.buffer);
const LOW_HALF = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1 ? 0 : 1;
const HIGH_HALF = 1 - LOW_HALF;
/** The range a signed 64-bit word holds: a stamp outside it (none a clock gives) is subtracted as a bigint. */
const INT64_START = -(1n << 63n);
const INT64_END = 1n << 63n;

/**
 * `toNs − fromNs` (two stamps, e.g. hrtime.bigint readings) as a number, exactly as Number(toNs − fromNs) gives it,
 * without making a bigint: called for every image on both sides, where a bigint difference is 40 bytes of garbage.
 * Each stamp goes into a 64-bit word and the difference is taken on its 32-bit halves: exact in a double up to 2^53 ns
 * (104 days), and rounded as Number() rounds beyond.
 */
export function nsBetween(fromNs: bigint, toNs: bigint): number {
  if (fromNs >= INT64_END || toNs >= INT64_END || fromNs < INT64_START || toNs < INT64_START)
    return Number(toNs - fromNs);
  STAMP_WORDS[0] = fromNs;
  STAMP_WORDS[1] = toNs;
  return (
    (STAMP_HIGH_HALVES[2 + HIGH_HALF]! - STAMP_HIGH_HALVES[HIGH_HALF]!) * 4294967296 +
    (STAMP_LOW_HALVES[2 + LOW_HALF]! - STAMP_LOW_HALVES[LOW_HALF]!)
  );
}

/**
 * Nearest-rank percentile of ascending values: the smallest value with at least `percent` % of
 * the values at or below it. Exact and never interpolated, so it is always a value that happened.
 */
export function percentile(ascending: readonly number[], percent: number): number {
  if (ascending.length === 0) throw new RangeError('percentile of no values');
  if (percent <= 0) return ascending[0]!;
  const rank = Math.ceil((percent / 100) * ascending.length);
  return ascending[Math.min(rank, ascending.length) - 1]!;
}

// Times are recorded in whole nanoseconds, from 1 ns up to an hour; 3 significant digits keep
// every percentile within 0.1 % at a fixed, small memory cost however many images there are.
const HISTOGRAM_HIGHEST_NS = 3_600_000_000_000;

// hdr-histogram-js's WebAssembly build records a time in about 20 ns where its JavaScript one takes
// about 120 (measured here): histograms take every image on both sides' hot paths, so that is
// the one used. It loads synchronously once, from the package itself (nothing is fetched).
initWebAssemblySync();

// The package sets JsHistogram.decode (an uncompressed encoding into a JS histogram) at load, yet its types declare
// it in a module augmentation that TypeScript does not see from the package's entry.
const decodeUncompressed = (JsHistogram as unknown as { decode(data: Uint8Array, bitBucketSize: 32): JsHistogram })
  .decode;

/** A fresh histogram of whole-nanosecond times at `digits` significant digits. */
function newHistogram(digits: 1 | 2 | 3 = 3): Histogram {
  return buildHistogram({
    lowestDiscernibleValue: 1,
    highestTrackableValue: HISTOGRAM_HIGHEST_NS,
    numberOfSignificantValueDigits: digits,
    useWebAssembly: true,
  });
}

/**
 * A distribution of times built one time at a time, in constant memory: an HDR histogram for the
 * percentiles, exact running count, min, max, mean and variance (Welford's) beside it. What a
 * section of 20 million images keeps instead of 20 million times.
 */
export class LatencyRecorder {
  private readonly histogram: Histogram;
  private count = 0;
  private minMs = Infinity;
  private maxMs = -Infinity;
  private meanMs = 0;
  // Sum of squared differences from the running mean (Welford): no cancellation over millions of times.
  private m2 = 0;

  constructor(digits: 1 | 2 | 3 = 3) {
    this.histogram = newHistogram(digits);
  }

  /** Takes one time in ms. */
  record(ms: number): void {
    this.histogram.recordValue(Math.min(HISTOGRAM_HIGHEST_NS, Math.max(1, Math.round(ms * 1e6))));
    this.count++;
    if (ms < this.minMs) this.minMs = ms;
    if (ms > this.maxMs) this.maxMs = ms;
    const delta = ms - this.meanMs;
    this.meanMs += delta / this.count;
    this.m2 += delta * (ms - this.meanMs);
  }

  /**
   * Takes one time given in whole ns, exactly as record(ns / 1e6) takes it: what every image's path calls, since a
   * whole number of ns (below 2^30) is passed as a small integer where a fraction of a ms is boxed on the heap
   * whenever the call is not inlined.
   */
  recordNs(ns: number): void {
    const ms = ns / 1e6;
    this.histogram.recordValue(Math.min(HISTOGRAM_HIGHEST_NS, Math.max(1, Math.round(ms * 1e6))));
    this.count++;
    if (ms < this.minMs) this.minMs = ms;
    if (ms > this.maxMs) this.maxMs = ms;
    const delta = ms - this.meanMs;
    this.meanMs += delta / this.count;
    this.m2 += delta * (ms - this.meanMs);
  }

  /** Times taken so far. */
  get size(): number {
    return this.count;
  }

  /** The distribution so far; undefined with no time. */
  summary(): LatencySummary | undefined {
    if (this.count === 0) return undefined;
    return summaryOf(this.histogram, {
      count: this.count,
      minMs: this.minMs,
      maxMs: this.maxMs,
      meanMs: this.meanMs,
      stdDevMs: this.count > 1 ? Math.sqrt(this.m2 / (this.count - 1)) : 0,
    });
  }

  /** Sum of the times taken so far, in ms (count × running mean: no extra work per time). */
  get sumMs(): number {
    return this.count * this.meanMs;
  }

  /** How many times so far lie at or below each of `boundsNs` (ascending, ns): see {@link countsAtOrBelowNs}. */
  countsAtOrBelowNs(boundsNs: readonly number[]): number[] {
    if (this.count === 0) return boundsNs.map(() => 0);
    // Copied out of WebAssembly uncompressed (under a millisecond for a full histogram) to walk its buckets in JS.
    const copy = decodeUncompressed((this.histogram as Histogram & { encode(): Uint8Array }).encode(), 32);
    return bucketCountsAtOrBelow(copy, boundsNs);
  }

  /** The histogram as HDR's compressed base64 (values in whole ns); null with no time. */
  encoded(): string | null {
    return this.count === 0 ? null : encodeIntoCompressedBase64(this.histogram);
  }

  /** Forgets every time (a new second of a series): the memory is kept. */
  reset(): void {
    this.histogram.reset();
    this.count = 0;
    this.minMs = Infinity;
    this.maxMs = -Infinity;
    this.meanMs = 0;
    this.m2 = 0;
  }

  /** Frees the histogram's memory. */
  destroy(): void {
    this.histogram.destroy();
  }
}

/**
 * How many of an encoded histogram's times (HDR compressed base64 of whole ns, as {@link LatencyRecorder.encoded}
 * gives) lie at or below each of `boundsNs` (ascending, ns): a time counts toward a bound only when its whole HDR
 * bucket lies at or below it, as HDR's percentiles report a bucket's highest value. A bucket spans under 0.1 % of its
 * values at 3 significant digits, so a time on a bound, or under it by less than its bucket's width, may count toward
 * the next bound up instead (never toward a lower one).
 */
export function countsAtOrBelowNs(encoded: string | null, boundsNs: readonly number[]): number[] {
  if (encoded === null) return boundsNs.map(() => 0);
  return bucketCountsAtOrBelow(decodeFromCompressedBase64(encoded, 32, false) as JsHistogram, boundsNs);
}

// One pass over the buckets up to the last bound's, a running count taken at each bound's last whole bucket.
function bucketCountsAtOrBelow(histogram: JsHistogram, boundsNs: readonly number[]): number[] {
  const lastIndexOf = (boundNs: number): number => {
    const index = Math.min(histogram.countsArrayIndex(boundNs), histogram.countsArrayLength - 1);
    return histogram.highestEquivalentValue(histogram.valueFromIndex(index)) > boundNs ? index - 1 : index;
  };
  const counts: number[] = [];
  let index = 0;
  let below = 0;
  for (const boundNs of boundsNs) {
    const last = lastIndexOf(boundNs);
    for (; index <= last; index++) below += histogram.getCountAtIndex(index);
    counts.push(below);
  }
  return counts;
}

// The exact moments beside the histogram's percentiles, which never exceed the true max.
function summaryOf(
  histogram: Histogram,
  moments: Pick<LatencySummary, 'count' | 'minMs' | 'maxMs' | 'meanMs' | 'stdDevMs'>,
): LatencySummary {
  // The histogram reports a bucket's highest equivalent value; it can never exceed the true max.
  const at = (p: number): number => Math.min(moments.maxMs, histogram.getValueAtPercentile(p) / 1e6);
  const supported = (p: number, minSamples: number): number | null => (moments.count >= minSamples ? at(p) : null);
  return {
    count: moments.count,
    p50Ms: at(50),
    p90Ms: supported(90, MIN_SAMPLES_FOR.p90),
    p99Ms: supported(99, MIN_SAMPLES_FOR.p99),
    p999Ms: supported(99.9, MIN_SAMPLES_FOR.p999),
    minMs: moments.minMs,
    maxMs: moments.maxMs,
    meanMs: moments.meanMs,
    stdDevMs: moments.stdDevMs,
  };
}

/** The distribution of per-image times (ms); undefined when there are none. */
export function summarizeLatency(timesMs: readonly number[]): LatencySummary | undefined {
  const recorder = new LatencyRecorder();
  for (const t of timesMs) recorder.record(t);
  const summary = recorder.summary();
  recorder.destroy();
  return summary;
}

/**
 * Several distributions as one (every receiver's images): percentiles from their histograms
 * added, count, min, max, mean and standard deviation pooled exactly from the summaries. Undefined
 * when none has a time; a summary without its histogram cannot be merged and makes it undefined.
 */
export function mergeLatency(
  parts: readonly { summary: LatencySummary | null; histogramNs: string | null }[],
): LatencySummary | undefined {
  const present = parts.filter(
    (p): p is { summary: LatencySummary; histogramNs: string | null } => p.summary !== null && p.summary.count > 0,
  );
  if (present.length === 0 || present.some((p) => p.histogramNs === null)) return undefined;
  const histogram = newHistogram();
  for (const part of present) {
    const decoded = decodeFromCompressedBase64(part.histogramNs!, 32, true);
    histogram.add(decoded);
    decoded.destroy();
  }
  const count = present.reduce((n, p) => n + p.summary.count, 0);
  const meanMs = present.reduce((sum, p) => sum + p.summary.meanMs * p.summary.count, 0) / count;
  // Pooled variance: each part's own sum of squares plus its mean's distance from the whole's.
  const squares = present.reduce(
    (sum, p) =>
      sum + p.summary.stdDevMs ** 2 * (p.summary.count - 1) + p.summary.count * (p.summary.meanMs - meanMs) ** 2,
    0,
  );
  const summary = summaryOf(histogram, {
    count,
    minMs: Math.min(...present.map((p) => p.summary.minMs)),
    maxMs: Math.max(...present.map((p) => p.summary.maxMs)),
    meanMs,
    stdDevMs: count > 1 ? Math.sqrt(squares / (count - 1)) : 0,
  });
  histogram.destroy();
  return summary;
}

/** Min and max of values; undefined when there are none. */
export function rangeOf(values: readonly number[]): Range | undefined {
  if (values.length === 0) return undefined;
  return { min: Math.min(...values), max: Math.max(...values) };
}

/** Throughput in MB/s (10^6 bytes per second) of `bytes` moved in `ms` milliseconds. */
export function throughputMBps(bytes: number, ms: number): number {
  return ms > 0 ? bytes / 1e3 / ms : 0;
}

/** Images per second of `count` images moved in `ms` milliseconds. */
export function imagesPerSecond(count: number, ms: number): number {
  return ms > 0 ? (count * 1e3) / ms : 0;
}

/** Median of values (the mean of the middle two for an even count); undefined when there are none. */
export function medianOf(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** A distribution of times so far: count, sum and how many at or below each bound asked for. */
export interface TimesSoFar {
  count: number;
  sumMs: number;
  atOrBelow: number[];
}
