import { nsBetween } from './stats.js';

// An open-loop schedule (RATE): image i is due at start + i ÷ rate, whatever the acks do, as wrk2
// and k6's arrival-rate executors schedule requests. Latency counted from the due time instead of
// the actual send corrects coordinated omission: a sender that fell behind cannot hide the wait
// by sending late. Pure: times are given to it. Asked for every image sent, it answers in numbers taken from the
// stamps given (nsBetween), making no bigint.

/** Most images per second RATE allows. */
export const MAX_RATE_PER_SECOND = 1_000_000;

/** When each image of an open-loop section is due, on the transmitter's clock. */
export class OpenLoopSchedule {
  private readonly periodNs: number;

  /** `startNs`: due time of image 0 (the first recorded image); `ratePerSecond`: images per second. */
  constructor(
    readonly ratePerSecond: number,
    readonly startNs: bigint,
  ) {
    if (!(ratePerSecond > 0 && ratePerSecond <= MAX_RATE_PER_SECOND))
      throw new RangeError(`rate must be above 0 and at most ${MAX_RATE_PER_SECOND}: ${ratePerSecond}`);
    this.periodNs = 1e9 / ratePerSecond;
  }

  /** Due time of image `index` (from 0), rounded to the nanosecond. */
  dueNs(index: number): bigint {
    return this.startNs + BigInt(this.dueAfterStartNs(index));
  }

  /** How late `atNs` is for image `index`: atNs − dueNs(index), in ns (negative when early). */
  lagNs(index: number, atNs: bigint): number {
    return nsBetween(this.startNs, atNs) - this.dueAfterStartNs(index);
  }

  /** How many images are due at `nowNs` (image 0 is due at the start). */
  dueCount(nowNs: bigint): number {
    if (nowNs < this.startNs) return 0;
    const elapsedNs = nsBetween(this.startNs, nowNs);
    // The next index's exact due time decides, so rounding never makes an image due early.
    let count = Math.floor(elapsedNs / this.periodNs) + 1;
    while (this.dueAfterStartNs(count) <= elapsedNs) count++;
    while (count > 0 && this.dueAfterStartNs(count - 1) > elapsedNs) count--;
    return count;
  }

  // Image `index`'s due time after the start, in whole ns.
  private dueAfterStartNs(index: number): number {
    return Math.round(index * this.periodNs);
  }
}

/**
 * Images per second of a series of times on one clock (sends, or arrivals): images after the
 * first over the span from the first to the last; null with fewer than two or no span.
 */
export function achievedRate(timesNs: readonly bigint[]): number | null {
  if (timesNs.length < 2) return null;
  let first = timesNs[0]!;
  let last = first;
  for (const t of timesNs) {
    if (t < first) first = t;
    if (t > last) last = t;
  }
  return last === first ? null : ((timesNs.length - 1) * 1e9) / Number(last - first);
}
