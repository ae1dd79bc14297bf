import type { LatencySummary } from './stats.js';

// An open-loop section's verdicts (RATE): whether it kept up with its schedule, and a camera stream's question, how
// old its frames were against their deadline (DEADLINE_MS, from each frame's due time), how many never came and how
// steady the arrivals were. Pure: the recorder (recorder.ts) counts, this takes the shares and the verdicts.

/**
 * An open-loop section is overloaded when its images went out, or arrived, at under this share of
 * RATE. Healthy sections measured here keep both within 0.5 % of RATE (jitter at the two ends of
 * the span), so 5 % is a shortfall of the transport (or of the sender on its core), not noise; a
 * stall that the section catches up on is not overload, and its wait is in the times from due.
 */
export const OVERLOAD_RATE_SHARE = 0.95;

/**
 * True when an open-loop section with these rates did not keep up with `ratePerSecond` (see {@link
 * OVERLOAD_RATE_SHARE}).
 */
export function isOverloaded(
  ratePerSecond: number,
  sentPerSecond: number | null,
  deliveredPerSecond: number | null,
): boolean {
  const floor = OVERLOAD_RATE_SHARE * ratePerSecond;
  return (
    (sentPerSecond !== null && sentPerSecond < floor) || (deliveredPerSecond !== null && deliveredPerSecond < floor)
  );
}

/**
 * An open-loop section's frames against their deadline (DEADLINE_MS, counted from each frame's due time) and against
 * their schedule (the gaps between arrivals), as a camera stream's reader asks: how often too late, how steady.
 */
export interface DeadlineFigures {
  /** DEADLINE_MS. */
  deadlineMs: number;
  /** One frame interval, 1000 ÷ RATE. */
  intervalMs: number;
  /** DEADLINE_MISS_PERCENT ÷ 100: the share of frames sent that may miss the deadline. */
  allowedLateShare: number;
  /** Frames sent (the section's image count): what the shares are of. */
  framesSent: number;
  /** Frames whose age at arrival is known (intact, with their round trip's due lag). */
  agedFrames: number;
  /** Intact frames older than the deadline at arrival. */
  lateCount: number;
  /** Intact frames older than three intervals at arrival. */
  veryLateCount: number;
  /** Frames sent that never arrived intact (lost, corrupt, written over): they missed the deadline too. */
  undeliveredCount: number;
  /** (lateCount + undeliveredCount) ÷ framesSent: the share that missed the deadline; null with none sent. */
  missedShare: number | null;
  /** lateCount ÷ framesSent and veryLateCount ÷ framesSent; null with none sent. */
  lateShare: number | null;
  veryLateShare: number | null;
  /** Longest time between two consecutive arrivals of recorded frames, ms; null with fewer than two. */
  longestGapMs: number | null;
  /** Inter-arrival jitter: |gap − interval| over every two consecutive arrivals, ms; null with fewer than two. */
  jitter: LatencySummary | null;
  /** missedShare is over allowedLateShare: the section did not meet its deadline (its verdict says so). */
  overDeadline: boolean;
}

/** What a recorder counted of a section's frames against its deadline, before the shares are taken. */
export interface DeadlineCounts {
  agedFrames: number;
  lateCount: number;
  veryLateCount: number;
  longestGapMs: number | null;
  jitter: LatencySummary | null;
}

/** The deadline figures of a section that sent `framesSent` frames and delivered `deliveredCount` intact. */
export function deadlineFigures(
  deadline: { deadlineMs: number; allowedLateShare: number },
  ratePerSecond: number,
  framesSent: number,
  deliveredCount: number,
  counts: DeadlineCounts,
): DeadlineFigures {
  const undeliveredCount = Math.max(0, framesSent - deliveredCount);
  const share = (count: number): number | null => (framesSent === 0 ? null : count / framesSent);
  const missedShare = share(counts.lateCount + undeliveredCount);
  return {
    deadlineMs: deadline.deadlineMs,
    intervalMs: 1000 / ratePerSecond,
    allowedLateShare: deadline.allowedLateShare,
    framesSent,
    agedFrames: counts.agedFrames,
    lateCount: counts.lateCount,
    veryLateCount: counts.veryLateCount,
    undeliveredCount,
    missedShare,
    lateShare: share(counts.lateCount),
    veryLateShare: share(counts.veryLateCount),
    longestGapMs: counts.longestGapMs,
    jitter: counts.jitter,
    overDeadline: missedShare !== null && missedShare > deadline.allowedLateShare,
  };
}
