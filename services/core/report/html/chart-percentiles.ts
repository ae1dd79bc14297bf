import type { SectionResult } from '../../model/section.js';
import { latencyCurve } from '../../model/series.js';
import type { Point, SectionDrawing } from './chart-types.js';
import { legacyImages, type LegacyImageRecord } from './views.js';

// The latency distribution chart: each section's percentile curve on a log axis of 1 / (1 − p).

/** Most points of a percentile curve: beyond it they are spaced evenly on its log axis (latencyCurve). */
const PERCENTILE_MAX_POINTS = 2000;

/** Positions on the percentile axis, 1/(1 − p): 0 %, 50 %, 75 %, 90 %, 95 %, 99 %, 99.9 %, … */
export const PERCENTILE_TICKS = [1, 2, 4, 10, 20, 100, 1000, 1e4, 1e5, 1e6, 1e7];

/**
 * The latency percentile curve of a section's intact images, at x = 1 / (1 − p), which spreads
 * the tail over a log axis: from its HDR histogram, or in an older file from its per-image times.
 */
export function percentileDrawing(section: SectionResult): SectionDrawing {
  if (section.histograms !== undefined) {
    const encoded = section.histograms.oneWayNs;
    // A histogram bucket's highest value can pass the true slowest time (by under 0.1 %): the table's max caps it, as
    // it caps the table's percentiles.
    const maxMs = section.latency?.maxMs ?? Infinity;
    const points =
      encoded === null
        ? []
        : latencyCurve(encoded, PERCENTILE_MAX_POINTS).map((p) => ({
            x: 100 / (100 - p.percentile),
            y: Math.min(maxMs, p.ms),
          }));
    return { lines: [{ figure: '', points }] };
  }
  return { lines: [{ figure: '', points: legacyPercentilePoints(legacyImages(section) ?? []) }] };
}

/**
 * The percentile curve from per-image records (files written before histograms were): the i-th
 * fastest of n at p = (i + 0.5) / n (Hazen's plotting position, as latencyCurve places them).
 */
function legacyPercentilePoints(images: readonly LegacyImageRecord[]): Point[] {
  const times = images.flatMap((i) => (i.status === 'ok' && i.timeMs !== null ? [i.timeMs] : [])).sort((a, b) => a - b);
  const n = times.length;
  let indexes: number[];
  if (n <= PERCENTILE_MAX_POINTS) {
    indexes = times.map((_, i) => i);
  } else {
    // Evenly spaced in log(x) from 1 to 2n: i = n − 0.5 − n / x.
    const picked = new Set<number>();
    for (let k = 0; k <= PERCENTILE_MAX_POINTS; k++) {
      const x = (2 * n) ** (k / PERCENTILE_MAX_POINTS);
      picked.add(Math.min(n - 1, Math.max(0, Math.round(n - 0.5 - n / x))));
    }
    picked.add(n - 1);
    indexes = [...picked].sort((a, b) => a - b);
  }
  return indexes.map((i) => ({ x: n / (n - i - 0.5), y: times[i]! }));
}
