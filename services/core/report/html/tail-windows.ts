import { decodeFromCompressedBase64 } from 'hdr-histogram-js';
import type { SecondDistribution, SecondSample } from '../../model/series.js';
import { MIN_SAMPLES_FOR } from '../../model/stats.js';

// The tail charts at low rates: a second of 30 frames has no p99, so consecutive seconds merge into windows long
// enough for one. Each such second kept its histogram (SecondDistribution.histogramNs); a window's p99 comes from their
// sum, the same nearest-rank figure a second of 100 would give, never from averaging p99s. Pure: no clock, no file.

/** One window of a tail line: consecutive seconds whose times are taken as one distribution. */
export interface TailWindow {
  /** First second it covers, in seconds since the section's measured span began. */
  startSecond: number;
  /** Seconds it covers (the last window may be shorter than the others). */
  seconds: number;
  /** Times in it; a second that kept no histogram (one of 100 or more) counts as its lower bound, 100. */
  count: number;
  /** Its 99th percentile in ms; null with fewer than MIN_SAMPLES_FOR.p99 times. */
  p99Ms: number | null;
  /**
   * True when a second in it kept no histogram (it had a p99 of its own): the p99 is then the largest of its seconds'
   * p99s and of the others' max, an upper bound, not the window's own.
   */
  upperBound: boolean;
}

/** A section's tail line over windows of equal whole seconds. */
export interface TailWindows {
  windowSeconds: number;
  windows: TailWindow[];
}

/**
 * The windows of `minSeconds` or more that a tail line of `samples[figure]` is drawn over when its typical second (the
 * median count of those with times) has too few times for a p99 and its seconds kept their histograms: as short as
 * holds MIN_SAMPLES_FOR.p99 at that count, longer if no window would hold them although the section does. Undefined
 * when seconds need no merging (a typical second has its p99, or none kept a histogram: an older file).
 */
export function tailWindows(
  samples: readonly SecondSample[],
  figure: 'oneWay' | 'rtt',
  minSeconds: number,
): TailWindows | undefined {
  if (!Number.isInteger(minSeconds) || minSeconds < 1)
    throw new RangeError(`tailWindows needs minSeconds a whole number from 1, got ${minSeconds}`);
  const timed = samples.flatMap((s) => {
    const times = s[figure];
    return times === null ? [] : [{ second: s.second, times }];
  });
  if (!timed.some((s) => s.times.histogramNs !== undefined)) return undefined;
  const spanSeconds = samples.reduce((span, s) => Math.max(span, s.second + 1), 0);
  const counts = timed.map((s) => countOf(s.times));
  const typical = lowerMedian(counts);
  const needed = MIN_SAMPLES_FOR.p99;
  if (typical >= needed) return undefined;
  const total = counts.reduce((a, b) => a + b, 0);
  const windowCounts = (width: number): number[] => {
    const sums = new Array<number>(Math.ceil(spanSeconds / width)).fill(0);
    timed.forEach((s, i) => {
      sums[Math.floor(s.second / width)]! += counts[i]!;
    });
    return sums;
  };
  let width = Math.max(minSeconds, Math.ceil(needed / typical));
  // Uneven seconds (a stall, a burst) can leave every window short of what the whole section holds: widen until one
  // has it, at worst one window of the whole span.
  while (width < spanSeconds && total >= needed && !windowCounts(width).some((n) => n >= needed)) width++;
  const groups: { second: number; times: SecondDistribution }[][] = Array.from(
    { length: Math.ceil(spanSeconds / width) },
    () => [],
  );
  for (const s of timed) groups[Math.floor(s.second / width)]!.push(s);
  const sums = windowCounts(width);
  return {
    windowSeconds: width,
    windows: groups.map((group, index) => {
      const startSecond = index * width;
      return {
        startSecond,
        seconds: Math.min(width, spanSeconds - startSecond),
        count: sums[index]!,
        ...windowP99(group.map((s) => s.times)),
      };
    }),
  };
}

/** A second's count of times: its histogram's, or with none kept (it had a p99) the least that gives one. */
function countOf(times: SecondDistribution): number {
  if (times.histogramNs === undefined) return MIN_SAMPLES_FOR.p99;
  const histogram = decodeFromCompressedBase64(times.histogramNs, 32, false);
  try {
    return histogram.totalCount;
  } finally {
    histogram.destroy();
  }
}

/** The lower median of counts (one of them, never between two). */
function lowerMedian(counts: readonly number[]): number {
  const sorted = [...counts].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** The p99 of seconds' times taken as one distribution (see {@link TailWindow}). */
function windowP99(seconds: readonly SecondDistribution[]): Pick<TailWindow, 'p99Ms' | 'upperBound'> {
  if (seconds.length === 0) return { p99Ms: null, upperBound: false };
  if (seconds.some((s) => s.histogramNs === undefined))
    return { p99Ms: seconds.reduce((bound, s) => Math.max(bound, s.p99Ms ?? s.maxMs), 0), upperBound: true };
  // One histogram decoded at a time: a window of a long run can merge thousands of seconds.
  const merged = decodeFromCompressedBase64(seconds[0]!.histogramNs!, 32, false);
  try {
    for (const s of seconds.slice(1)) {
      const other = decodeFromCompressedBase64(s.histogramNs!, 32, false);
      merged.add(other);
      other.destroy();
    }
    if (merged.totalCount < MIN_SAMPLES_FOR.p99) return { p99Ms: null, upperBound: false };
    // A bucket's highest value can pass the true slowest time: the seconds' max caps it, as a summary's does.
    const maxMs = seconds.reduce((max, s) => Math.max(max, s.maxMs), 0);
    return { p99Ms: Math.min(maxMs, merged.getValueAtPercentile(99) / 1e6), upperBound: false };
  } finally {
    merged.destroy();
  }
}
