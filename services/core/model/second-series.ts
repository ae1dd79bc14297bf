import type { SecondDistribution, SecondSample } from './series.js';
import { LatencyRecorder } from './stats.js';

// A section's per-second aggregates, built as images come: one second's histogram at a time, so a
// soak of hours holds one small histogram and a list of seconds, never its images.

/** One second's times as a {@link SecondDistribution}; null with none. */
export function distributionOf(recorder: LatencyRecorder): SecondDistribution | null {
  const summary = recorder.summary();
  return summary === undefined
    ? null
    : { minMs: summary.minMs, p50Ms: summary.p50Ms, p99Ms: summary.p99Ms, maxMs: summary.maxMs };
}

/**
 * Times bucketed by whole seconds since `originNs`. Times come in (nearly) time order: a time for a
 * second already closed (one that came late) is counted in the second open now, so each second's
 * figures are those of the images taken while it was open.
 */
export class SecondSeries {
  private readonly samples: {
    second: number;
    images: number;
    intactBytes: number;
    times: SecondDistribution | null;
  }[] = [];
  private current = -1;
  // The open second's end on the origin's clock: a compare per image, a division only at a new second.
  private currentEndNs = -1n;
  private images = 0;
  private intactBytes = 0;
  // Two significant digits: a per-second p50 or p99 within 1 %, in a few KiB.
  private readonly times = new LatencyRecorder(2);

  /**
   * `keepSmallHistograms`: a second with too few times for a p99 keeps its histogram (SecondDistribution.histogramNs),
   * so a report can merge it with its neighbours; the receiver's series does, the round trips' (sent to it) do not.
   */
  constructor(
    private readonly originNs: bigint,
    private readonly keepSmallHistograms = false,
  ) {}

  /**
   * Takes one image at `atNs` (same clock as the origin): its intact bytes (0 when corrupt) and its time, if it has
   * one.
   */
  add(atNs: bigint, intactBytes: number, timeMs: number | null): void {
    if (atNs >= this.currentEndNs) this.reach(atNs);
    this.images++;
    this.intactBytes += intactBytes;
    if (timeMs !== null) this.times.record(timeMs);
  }

  /**
   * As {@link add}, the time in whole ns (`timed` false: none): what every image's path calls, passing nothing that is
   * boxed on the heap (LatencyRecorder.recordNs).
   */
  addNs(atNs: bigint, intactBytes: number, timeNs: number, timed: boolean): void {
    if (atNs >= this.currentEndNs) this.reach(atNs);
    this.images++;
    this.intactBytes += intactBytes;
    if (timed) this.times.recordNs(timeNs);
  }

  /** The seconds so far, the open one included. */
  seconds(): { second: number; images: number; intactBytes: number; times: SecondDistribution | null }[] {
    const open =
      this.current >= 0 && this.images > 0
        ? [
            {
              second: this.current,
              images: this.images,
              intactBytes: this.intactBytes,
              times: this.distribution(),
            },
          ]
        : [];
    return [...this.samples, ...open];
  }

  /** The closed seconds from the `from`-th on (the open one is not whole yet): a slice, for a reader once a second. */
  closedSince(
    from: number,
  ): { second: number; images: number; intactBytes: number; times: SecondDistribution | null }[] {
    return this.samples.slice(from);
  }

  /** Frees the histogram. */
  destroy(): void {
    this.times.destroy();
  }

  private distribution(): SecondDistribution | null {
    const times = distributionOf(this.times);
    if (times === null || times.p99Ms !== null || !this.keepSmallHistograms) return times;
    return { ...times, histogramNs: this.times.encoded()! };
  }

  // A time at or past the open second's end: the second it falls in is opened, unless it came late.
  private reach(atNs: bigint): void {
    const second = Math.max(0, Number((atNs - this.originNs) / 1_000_000_000n));
    if (second > this.current) this.close(second);
  }

  private close(next: number): void {
    if (this.current >= 0 && this.images > 0)
      this.samples.push({
        second: this.current,
        images: this.images,
        intactBytes: this.intactBytes,
        times: this.distribution(),
      });
    this.current = next;
    this.currentEndNs = this.originNs + BigInt(next + 1) * 1_000_000_000n;
    this.images = 0;
    this.intactBytes = 0;
    this.times.reset();
  }
}

/** The receiver's one-way seconds and the transmitter's round-trip seconds as one series, by second. */
export function joinSeries(
  oneWay: ReturnType<SecondSeries['seconds']>,
  rtt: readonly { second: number; rtt: SecondDistribution | null }[],
): SecondSample[] {
  const rttBySecond = new Map(rtt.map((r) => [r.second, r.rtt]));
  return oneWay.map((s) => ({
    second: s.second,
    images: s.images,
    intactBytes: s.intactBytes,
    oneWay: s.times,
    rtt: rttBySecond.get(s.second) ?? null,
  }));
}
