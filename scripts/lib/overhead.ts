import { medianOf } from '../../services/core/stats.js';

// The bench's "harness overhead": how much of what the library can do at all (its ceiling client,
// scripts/ceiling/) the suite leaves on the table, per run pair in the same minute and then over
// the rounds. Pure, so its arithmetic is tested with exact values.

/** One round's pair of figures of the same shape: the suite's and the ceiling client's (MB/s, or images/s); null where a run failed. */
export interface FigurePair {
  ours: number | null;
  ceiling: number | null;
}

/** 1 − ours ÷ ceiling: 0 when the suite matches its library, 0.25 when it reaches three quarters of it, negative when it is faster; null without both figures or with a ceiling of 0. */
export function harnessOverhead(ours: number | null, ceiling: number | null): number | null {
  if (ours === null || ceiling === null || ceiling <= 0) return null;
  return 1 - ours / ceiling;
}

/** A transport's pairs of one shape over the rounds: the medians, and the overhead's median and spread (min–max over the rounds that have both figures). */
export interface OverheadSummary {
  /** Rounds with both figures. */
  pairedRounds: number;
  oursMedian: number | null;
  ceilingMedian: number | null;
  overheadMedian: number | null;
  overheadMin: number | null;
  overheadMax: number | null;
}

/** Summarises `pairs`: each round's overhead from its own pair (the two runs of one minute), never from medians taken apart. */
export function summarizeOverhead(pairs: readonly FigurePair[]): OverheadSummary {
  const overheads = pairs.flatMap((p) => {
    const overhead = harnessOverhead(p.ours, p.ceiling);
    return overhead === null ? [] : [overhead];
  });
  return {
    pairedRounds: overheads.length,
    oursMedian: medianOf(pairs.flatMap((p) => (p.ours === null ? [] : [p.ours]))) ?? null,
    ceilingMedian: medianOf(pairs.flatMap((p) => (p.ceiling === null ? [] : [p.ceiling]))) ?? null,
    overheadMedian: medianOf(overheads) ?? null,
    overheadMin: overheads.length === 0 ? null : Math.min(...overheads),
    overheadMax: overheads.length === 0 ? null : Math.max(...overheads),
  };
}

/**
 * The same for a time, where lower is better (a round trip): per round 1 − ceiling ÷ ours, the
 * share of our time the library alone would not spend; the medians are the figures' own.
 */
export function summarizeTimeOverhead(pairs: readonly FigurePair[]): OverheadSummary {
  // A time's overhead is a rate's with the two sides swapped: 1 − ceiling ÷ ours.
  const swapped = summarizeOverhead(pairs.map((p) => ({ ours: p.ceiling, ceiling: p.ours })));
  return { ...swapped, oursMedian: swapped.ceilingMedian, ceilingMedian: swapped.oursMedian };
}

/** "12 %" (whole percent), "−3 %" when the suite beat its ceiling, "-" without a figure. */
export function percentText(share: number | null): string {
  if (share === null) return '-';
  const rounded = Math.round(share * 100);
  return `${rounded < 0 ? '−' : ''}${Math.abs(rounded)} %`;
}
