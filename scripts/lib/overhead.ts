import { medianOf, percentile } from '../../services/core/model/stats.js';

// The bench's "harness overhead": how much of what the library can do at all (its ceiling client,
// scripts/ceiling/) the suite leaves on the table. The overhead shown is computed from the two
// medians shown beside it, so the three always agree in sign; each round's own pair (the two runs
// of one minute) gives the range beside it. Pure, so its arithmetic is tested with exact values.

/** Rounds from which a median may carry a claim; with fewer, the bench calls its medians indicative. */
export const MIN_CLAIM_ROUNDS = 10;

/**
 * One round's pair of figures of the same shape: the suite's and the ceiling client's (MB/s, or images/s); null where a
 * run failed.
 */
export interface FigurePair {
  ours: number | null;
  ceiling: number | null;
}

/**
 * 1 − ours ÷ ceiling: 0 when the suite matches its library, 0.25 when it reaches three quarters of it, negative when it
 * is faster; null without both figures or with a ceiling of 0.
 */
export function harnessOverhead(ours: number | null, ceiling: number | null): number | null {
  if (ours === null || ceiling === null || ceiling <= 0) return null;
  return 1 - ours / ceiling;
}

/** A figure over the rounds: how many had it, and its min, quartiles (nearest rank), median and max. */
export interface Distribution {
  rounds: number;
  min: number;
  q1: number;
  median: number;
  q3: number;
  max: number;
}

/** The distribution of `values` (one per round); null when there are none. */
export function distributionOf(values: readonly number[]): Distribution | null {
  const median = medianOf(values);
  if (median === undefined) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return {
    rounds: sorted.length,
    min: sorted[0]!,
    q1: percentile(sorted, 25),
    median,
    q3: percentile(sorted, 75),
    max: sorted[sorted.length - 1]!,
  };
}

/**
 * A transport's pairs of one shape over the rounds: the medians, the overhead they give, each round's overhead range,
 * and each figure's distribution.
 */
export interface OverheadSummary {
  /** Rounds with both figures. */
  pairedRounds: number;
  oursMedian: number | null;
  ceilingMedian: number | null;
  /** The overhead of the two medians above (1 − ours ÷ ceiling; a time: 1 − ceiling ÷ ours). */
  overhead: number | null;
  /** Least and most of the rounds' own overheads (each from one round's pair). */
  overheadMin: number | null;
  overheadMax: number | null;
  ours: Distribution | null;
  ceiling: Distribution | null;
}

/**
 * Summarises `pairs` of a rate (higher is better): the overhead from the medians, its per-round range from each round's
 * pair.
 */
export function summarizeOverhead(pairs: readonly FigurePair[]): OverheadSummary {
  const overheads = pairs.flatMap((p) => {
    const overhead = harnessOverhead(p.ours, p.ceiling);
    return overhead === null ? [] : [overhead];
  });
  const ours = distributionOf(pairs.flatMap((p) => (p.ours === null ? [] : [p.ours])));
  const ceiling = distributionOf(pairs.flatMap((p) => (p.ceiling === null ? [] : [p.ceiling])));
  return {
    pairedRounds: overheads.length,
    oursMedian: ours?.median ?? null,
    ceilingMedian: ceiling?.median ?? null,
    overhead: harnessOverhead(ours?.median ?? null, ceiling?.median ?? null),
    overheadMin: overheads.length === 0 ? null : Math.min(...overheads),
    overheadMax: overheads.length === 0 ? null : Math.max(...overheads),
    ours,
    ceiling,
  };
}

/**
 * The same for a time, where lower is better (a round trip): 1 − ceiling ÷ ours, the share of
 * our time the library alone would not spend, from the medians; per round from its pair.
 */
export function summarizeTimeOverhead(pairs: readonly FigurePair[]): OverheadSummary {
  // A time's overhead is a rate's with the two sides swapped: 1 − ceiling ÷ ours.
  const swapped = summarizeOverhead(pairs.map((p) => ({ ours: p.ceiling, ceiling: p.ours })));
  return {
    ...swapped,
    oursMedian: swapped.ceilingMedian,
    ceilingMedian: swapped.oursMedian,
    ours: swapped.ceiling,
    ceiling: swapped.ours,
  };
}

/** "12 %" (whole percent), "−3 %" when the suite beat its ceiling, "-" without a figure. */
export function percentText(share: number | null): string {
  if (share === null) return '-';
  const rounded = Math.round(share * 100);
  return `${rounded < 0 ? '−' : ''}${Math.abs(rounded)} %`;
}
