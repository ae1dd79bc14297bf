import type { SectionResult } from '../../model/section.js';
import { bucketSeries, type SecondSample, type SeriesBucket } from '../../model/series.js';
import { MIN_SAMPLES_FOR } from '../../model/stats.js';
import type { Point, SectionDrawing, SectionLine } from './chart-types.js';
import { tailWindows, type TailWindows } from './tail-windows.js';

// The charts over time, from each section's per-second series: time over the run, MB/s, p99.

/** Most points of a line over time: beyond it consecutive seconds merge (bucketSeries). */
export const SERIES_MAX_POINTS = 2000;

/** What a chart over time says of a section from a file written before per-second series were recorded. */
export const NO_SERIES = 'no series in this file';

/**
 * A section's per-second series as chart buckets, drawn by `lines`; none in a file written before series were recorded.
 */
function seriesDrawing(
  section: SectionResult,
  lines: (buckets: readonly SeriesBucket[], samples: readonly SecondSample[]) => SectionLine[],
  missing?: (lines: readonly SectionLine[]) => string,
): SectionDrawing {
  if (section.series === undefined) return { lines: [], missing: NO_SERIES };
  const buckets = bucketSeries(section.series, SERIES_MAX_POINTS);
  const last = buckets.at(-1);
  const drawn = lines(buckets, section.series);
  return {
    lines: drawn,
    ...(missing === undefined ? {} : { missing: missing(drawn) }),
    bucketSeconds: buckets[0]?.seconds ?? 1,
    spanSeconds: last === undefined ? 0 : last.startSecond + last.seconds,
  };
}

/** One figure of every bucket, at its first second; null (a gap) where a bucket has none. */
function bucketPoints(
  buckets: readonly SeriesBucket[],
  figure: (bucket: SeriesBucket) => number | null | undefined,
): Point[] {
  return buckets.map((b) => ({ x: b.startSecond, y: figure(b) ?? null }));
}

/** How a drawing gets a series' tail windows: {@link tailWindows}, or one render's {@link tailWindowsOnce}. */
export type TailWindowsOf = typeof tailWindows;

/**
 * {@link tailWindows} remembered for one render of the page: two charts draw a section's one-way p99 over the same
 * windows, and a day at 30 fps has 86,400 histograms to merge.
 */
export function tailWindowsOnce(): TailWindowsOf {
  const done = new Map<readonly SecondSample[], Map<string, TailWindows | undefined>>();
  return (samples, of, minSeconds) => {
    const bySamples = done.get(samples) ?? new Map<string, TailWindows | undefined>();
    done.set(samples, bySamples);
    const key = `${of} ${minSeconds}`;
    if (!bySamples.has(key)) bySamples.set(key, tailWindows(samples, of, minSeconds));
    return bySamples.get(key);
  };
}

/**
 * A p99 line: a point per bucket, or where a typical second has too few times for a p99, a point per window of
 * consecutive seconds long enough for one (tail-windows.ts), never shorter than a bucket.
 */
function p99Line(
  tails: TailWindowsOf,
  buckets: readonly SeriesBucket[],
  samples: readonly SecondSample[],
  of: 'oneWay' | 'rtt',
  figure: string,
  dash?: number[],
): SectionLine {
  const tail = tails(samples, of, buckets[0]?.seconds ?? 1);
  const dashed = dash === undefined ? {} : { dash };
  if (tail === undefined) return { figure, points: bucketPoints(buckets, (b) => b[of]?.p99Ms), ...dashed };
  return {
    figure,
    points: tail.windows.map((w) => ({ x: w.startSecond, y: w.p99Ms })),
    ...dashed,
    windows: { seconds: tail.windowSeconds, upperBound: tail.windows.some((w) => w.upperBound && w.p99Ms !== null) },
  };
}

/** Chart (a): one-way times over the run: the p50 line, the min–max band, the p99 dashed (in windows at low rates). */
export function timeOverRunDrawing(section: SectionResult, tails: TailWindowsOf = tailWindows): SectionDrawing {
  return seriesDrawing(section, (buckets, samples) => [
    { figure: 'p50', points: bucketPoints(buckets, (b) => b.oneWay?.p50Ms) },
    p99Line(tails, buckets, samples, 'oneWay', 'p99', [5, 4]),
    { figure: 'min', points: bucketPoints(buckets, (b) => b.oneWay?.minMs), band: 'min' },
    { figure: 'max', points: bucketPoints(buckets, (b) => b.oneWay?.maxMs), band: 'max' },
  ]);
}

/** Chart (b): MB/s of every bucket; 0 where nothing intact arrived. */
export function mbpsOverTimeDrawing(section: SectionResult): SectionDrawing {
  return seriesDrawing(section, (buckets) => [{ figure: '', points: bucketPoints(buckets, (b) => b.throughputMBps) }]);
}

/** Chart (c): the p99 of every bucket (or window, at low rates), one-way solid, round trip dashed. */
export function p99OverTimeDrawing(section: SectionResult, tails: TailWindowsOf = tailWindows): SectionDrawing {
  return seriesDrawing(
    section,
    (buckets, samples) => [
      p99Line(tails, buckets, samples, 'oneWay', 'p99'),
      p99Line(tails, buckets, samples, 'rtt', 'RTT p99', [5, 4]),
    ],
    // Seconds arrived in, but none with enough images for a p99; merged into windows, the whole section had fewer.
    (lines) =>
      lines.some((line) => line.windows !== undefined)
        ? `fewer than ${MIN_SAMPLES_FOR.p99} images`
        : `no second of ${MIN_SAMPLES_FOR.p99} images`,
  );
}
