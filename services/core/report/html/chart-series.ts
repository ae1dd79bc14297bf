import type { SectionResult } from '../../model/section.js';
import { bucketSeries, type SeriesBucket } from '../../model/series.js';
import { MIN_SAMPLES_FOR } from '../../model/stats.js';
import type { Point, SectionDrawing, SectionLine } from './chart-types.js';

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
  lines: (buckets: readonly SeriesBucket[]) => SectionLine[],
  missing?: string,
): SectionDrawing {
  if (section.series === undefined) return { lines: [], missing: NO_SERIES };
  const buckets = bucketSeries(section.series, SERIES_MAX_POINTS);
  const last = buckets.at(-1);
  return {
    lines: lines(buckets),
    ...(missing === undefined ? {} : { missing }),
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

/** Chart (a): one-way times over the run: the p50 line, the min–max band, the p99 dashed. */
export function timeOverRunDrawing(section: SectionResult): SectionDrawing {
  return seriesDrawing(section, (buckets) => [
    { figure: 'p50', points: bucketPoints(buckets, (b) => b.oneWay?.p50Ms) },
    { figure: 'p99', points: bucketPoints(buckets, (b) => b.oneWay?.p99Ms), dash: [5, 4] },
    { figure: 'min', points: bucketPoints(buckets, (b) => b.oneWay?.minMs), band: 'min' },
    { figure: 'max', points: bucketPoints(buckets, (b) => b.oneWay?.maxMs), band: 'max' },
  ]);
}

/** Chart (b): MB/s of every bucket; 0 where nothing intact arrived. */
export function mbpsOverTimeDrawing(section: SectionResult): SectionDrawing {
  return seriesDrawing(section, (buckets) => [{ figure: '', points: bucketPoints(buckets, (b) => b.throughputMBps) }]);
}

/** Chart (c): the p99 of every bucket, one-way solid, round trip dashed. */
export function p99OverTimeDrawing(section: SectionResult): SectionDrawing {
  return seriesDrawing(
    section,
    (buckets) => [
      { figure: 'p99', points: bucketPoints(buckets, (b) => b.oneWay?.p99Ms) },
      { figure: 'RTT p99', points: bucketPoints(buckets, (b) => b.rtt?.p99Ms), dash: [5, 4] },
    ],
    // Seconds arrived in, but none with enough images for a p99.
    `no second of ${MIN_SAMPLES_FOR.p99} images`,
  );
}
