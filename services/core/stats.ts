import { build as buildHistogram } from 'hdr-histogram-js';

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

/** The distribution of per-image times (ms); undefined when there are none. */
export function summarizeLatency(timesMs: readonly number[]): LatencySummary | undefined {
  if (timesMs.length === 0) return undefined;
  const histogram = buildHistogram({ lowestDiscernibleValue: 1, highestTrackableValue: HISTOGRAM_HIGHEST_NS, numberOfSignificantValueDigits: 3 });
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  for (const t of timesMs) {
    histogram.recordValue(Math.min(HISTOGRAM_HIGHEST_NS, Math.max(1, Math.round(t * 1e6))));
    min = Math.min(min, t);
    max = Math.max(max, t);
    sum += t;
  }
  const mean = sum / timesMs.length;
  const variance = timesMs.length > 1 ? timesMs.reduce((acc, t) => acc + (t - mean) ** 2, 0) / (timesMs.length - 1) : 0;
  // The histogram reports a bucket's highest equivalent value; it can never exceed the true max.
  const at = (p: number): number => Math.min(max, histogram.getValueAtPercentile(p) / 1e6);
  const supported = (p: number, minSamples: number): number | null => (timesMs.length >= minSamples ? at(p) : null);
  const summary: LatencySummary = {
    count: timesMs.length,
    p50Ms: at(50),
    p90Ms: supported(90, MIN_SAMPLES_FOR.p90),
    p99Ms: supported(99, MIN_SAMPLES_FOR.p99),
    p999Ms: supported(99.9, MIN_SAMPLES_FOR.p999),
    minMs: min,
    maxMs: max,
    meanMs: mean,
    stdDevMs: Math.sqrt(variance),
  };
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
