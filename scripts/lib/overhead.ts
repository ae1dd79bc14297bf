import { medianOf, percentile } from '../../services/core/model/stats.js';

// The bench's "harness overhead": how much of what the library can do at all (its ceiling client,
// scripts/ceiling/) the suite leaves on the table. The overhead shown is computed from the two
// medians shown beside it, so the three always agree in sign; each round's own pair (the two runs
// of one minute) gives an overhead of its own, whose median gets a distribution-free confidence
// interval: whether a 5 % overhead can be told from 15 % on a host whose runs vary by ±20 %. Pure,
// so its arithmetic is tested with exact values.

/** Rounds from which a median may carry a claim; with fewer, the bench calls its medians indicative. */
export const MIN_CLAIM_ROUNDS = 10;

/** Said beside the ceiling's medians when they rest on fewer rounds than a claim needs: '' from MIN_CLAIM_ROUNDS on. */
export function indicativeNote(rounds: number): string {
  return rounds < MIN_CLAIM_ROUNDS
    ? ` With ${rounds} rounds (fewer than ${MIN_CLAIM_ROUNDS}) the medians are indicative: no claim rests on them.`
    : '';
}

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

/** A confidence interval of a median: two of the sample's own values, and how sure it is to hold the true median. */
export interface MedianInterval {
  low: number;
  high: number;
  /** P(low ≤ the true median ≤ high) before the sample is drawn, at least 95 %: exact for a continuous distribution. */
  coverage: number;
}

/**
 * The distribution-free confidence interval of the median of `values` (in any order): the narrowest symmetric pair of
 * order statistics x_(k), x_(n+1−k) whose coverage 1 − 2·P(X ≤ k−1), X ~ Binom(n, ½), is at least 95 %; null when n
 * is too small for any pair to reach it (n ≤ 5: even x_(1), x_(n) cover only 1 − 2/2ⁿ).
 */
export function medianInterval(values: readonly number[]): MedianInterval | null {
  const n = values.length;
  const sorted = [...values].sort((a, b) => a - b);
  // Each value falls below the true median with probability ½, so how many do is Binom(n, ½); x_(k) lies above the
  // median when fewer than k values fall below it, x_(n+1−k) below it when fewer than k fall above. Counted in whole
  // numbers (2ⁿ·P), BigInt, so the tail and the 95 % test are exact however many rounds: a float's 2⁻ⁿ would
  // underflow past n ≈ 1074.
  const outcomes = 1n << BigInt(n);
  let choose = 1n; // C(n, k−1)
  let below = 0n; // 2ⁿ·P(X ≤ k−1)
  let best: { k: number; below: bigint } | null = null;
  for (let k = 1; 2 * k <= n + 1; k++) {
    below += choose;
    choose = (choose * BigInt(n - k + 1)) / BigInt(k);
    // Coverage 1 − 2·below/2ⁿ ≥ 0.95 ⟺ 40·below ≤ 2ⁿ; coverage falls as k rises, so the last k that passes is the
    // narrowest.
    if (40n * below > outcomes) break;
    best = { k, below };
  }
  if (best === null) return null;
  // below/2ⁿ as a float, through 2⁶⁴ths: exact for n ≤ 64, within 2⁻⁶⁴ beyond (2ⁿ overflows a float past 1023).
  const tail = Number((best.below << 64n) >> BigInt(n)) / 2 ** 64;
  return { low: sorted[best.k - 1]!, high: sorted[n - best.k]!, coverage: 1 - 2 * tail };
}

/**
 * A transport's pairs of one shape over the rounds: the medians, the overhead they give, each round's own overhead (its
 * median, that median's confidence interval, the least and most), and each figure's distribution.
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
  /** Median of the rounds' own overheads; may differ from `overhead` (from the two medians), even in sign. */
  pairMedian: number | null;
  /** 95 % confidence interval of that median (null under 6 paired rounds): how far `overhead` can be trusted. */
  pairCI: MedianInterval | null;
  ours: Distribution | null;
  ceiling: Distribution | null;
}

/**
 * Summarises `pairs` of a rate (higher is better): the overhead from the medians; from each round's pair, the rounds'
 * own overheads' median, its confidence interval and range.
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
    pairMedian: medianOf(overheads) ?? null,
    pairCI: medianInterval(overheads),
    ours,
    ceiling,
  };
}

/**
 * The same for a time, where lower is better (a round trip): 1 − ceiling ÷ ours, the share of
 * our time the library alone would not spend, from the medians; per round from its pair.
 */
export function summarizeTimeOverhead(pairs: readonly FigurePair[]): OverheadSummary {
  // A time's overhead is a rate's with the two sides swapped: 1 − ceiling ÷ ours, each round's pair (so its median,
  // interval and range) included; only the figures go back to their own sides.
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
