/** Summary of a set of per-image times, all in milliseconds. */
export interface TimeSummary {
  count: number;
  minMs: number;
  p50Ms: number;
  maxMs: number;
  meanMs: number;
}

/** Nanoseconds (a difference of two hrtime.bigint readings) as fractional milliseconds. */
export function nsToMs(ns: bigint): number {
  return Number(ns) / 1e6;
}

/**
 * Nearest-rank percentile of ascending values: the smallest value with at least `percent` % of
 * the values at or below it. Exact and never interpolated, so it is always a time that happened.
 */
export function percentile(ascending: readonly number[], percent: number): number {
  if (ascending.length === 0) throw new RangeError('percentile of no values');
  if (percent <= 0) return ascending[0]!;
  const rank = Math.ceil((percent / 100) * ascending.length);
  return ascending[Math.min(rank, ascending.length) - 1]!;
}

/** Min, median, max and mean of per-image times; undefined when there are none. */
export function summarizeTimes(timesMs: readonly number[]): TimeSummary | undefined {
  if (timesMs.length === 0) return undefined;
  const ascending = [...timesMs].sort((a, b) => a - b);
  const sum = ascending.reduce((acc, t) => acc + t, 0);
  return {
    count: ascending.length,
    minMs: ascending[0]!,
    p50Ms: percentile(ascending, 50),
    maxMs: ascending[ascending.length - 1]!,
    meanMs: sum / ascending.length,
  };
}

/** Throughput in MB/s (10^6 bytes per second) of `bytes` moved in `ms` milliseconds. */
export function throughputMBps(bytes: number, ms: number): number {
  return ms > 0 ? bytes / 1e3 / ms : 0;
}
