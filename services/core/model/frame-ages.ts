import type { SecondDistribution } from './series.js';
import { distributionOf } from './second-series.js';
import type { DeadlineCounts } from './section.js';
import { LatencyRecorder, nsBetween, type TimesSoFar } from './stats.js';

// A section's figures against its schedule (RATE) and deadline: each frame's age from its due time, the counts past
// the deadline and past three intervals, and the gaps between arrivals. Cut from the recorder, whose per-image path
// calls it: like the recorder it makes no object, bigint or string per image.

/** The frame ages and the schedule's figures of one section; in a closed loop only the (empty) age figures. */
export class FrameAges {
  readonly ages = new LatencyRecorder();
  // Ages joined since GET /events' feed last took them: two digits, like a second's one-way times.
  private readonly agesSinceTaken = new LatencyRecorder(2);
  private readonly deadlineNs: number;
  private readonly veryLateNs: number;
  private readonly intervalMs: number;
  private readonly jitter: LatencyRecorder | undefined;
  private lastArrivalNs: bigint | undefined;
  private longestGapNs = 0;
  private agedFrames = 0;
  private lateCount = 0;
  private veryLateCount = 0;
  private released = false;

  /** `ratePerSecond` null: a closed loop (no schedule, no jitter); `deadlineMs` undefined: one interval. */
  constructor(ratePerSecond: number | null, deadlineMs: number | undefined) {
    this.intervalMs = ratePerSecond === null ? 0 : 1000 / ratePerSecond;
    this.deadlineNs = (deadlineMs ?? this.intervalMs) * 1e6;
    this.veryLateNs = 3 * this.intervalMs * 1e6;
    this.jitter = ratePerSecond === null ? undefined : new LatencyRecorder();
  }

  /** A recorded frame arrived at `arrivalNs`: the gap from the one before, in the order they came. */
  arrived(arrivalNs: bigint): void {
    if (this.jitter !== undefined && this.lastArrivalNs !== undefined) {
      const gapNs = nsBetween(this.lastArrivalNs, arrivalNs);
      if (gapNs > this.longestGapNs) this.longestGapNs = gapNs;
      this.jitter.record(Math.abs(gapNs / 1e6 - this.intervalMs));
    }
    this.lastArrivalNs = arrivalNs;
  }

  /** An intact frame's age (one-way time + how late it was sent against its due time), in ns. */
  aged(ageNs: number): void {
    this.ages.recordNs(ageNs);
    if (!this.released) this.agesSinceTaken.recordNs(ageNs);
    this.agedFrames++;
    if (ageNs > this.deadlineNs) this.lateCount++;
    if (ageNs > this.veryLateNs) this.veryLateCount++;
  }

  /** The ages since the last call, then forgets them; null with none or once released. */
  takeSinceTaken(): { count: number; times: SecondDistribution } | null {
    if (this.released || this.agesSinceTaken.size === 0) return null;
    const taken = { count: this.agesSinceTaken.size, times: distributionOf(this.agesSinceTaken)! };
    this.agesSinceTaken.reset();
    return taken;
  }

  /** The jitter's times so far at or below each of `boundsNs`; all zero in a closed loop. */
  jitterSoFar(boundsNs: readonly number[], times: (recorder: LatencyRecorder) => TimesSoFar): TimesSoFar {
    return this.jitter === undefined ? { count: 0, sumMs: 0, atOrBelow: boundsNs.map(() => 0) } : times(this.jitter);
  }

  /** Under RATE, the frames counted against the deadline and the schedule so far; null in a closed loop. */
  counts(): DeadlineCounts | null {
    if (this.jitter === undefined) return null;
    return {
      agedFrames: this.agedFrames,
      lateCount: this.lateCount,
      veryLateCount: this.veryLateCount,
      longestGapMs: this.jitter.size === 0 ? null : this.longestGapNs / 1e6,
      jitter: this.jitter.summary() ?? null,
    };
  }

  /** Frees the histograms once the section's result is made. */
  destroy(): void {
    this.released = true;
    this.agesSinceTaken.destroy();
    this.ages.destroy();
    this.jitter?.destroy();
  }
}
