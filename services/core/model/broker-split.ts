import { LatencyRecorder, mergeLatency, type LatencySummary } from './stats.js';

// Where an image's one-way time goes through a broker that stamps an arrival of its own (JetStream
// stores each message's wall-clock time in ns; a Redis stream entry's ID is the server's wall clock
// in ms): "to the broker" is the transmitter's stamp → the broker's, "from the broker" the broker's
// stamp → the whole image in the receiver's hand. One stamp cannot tell the time spent in the
// broker from the way out: both are in "from the broker".
// The broker stamps with its wall clock (CLOCK_REALTIME), the receiver with its monotonic one
// (hrtime): the receiver pairs the two at the section's opening and again at its end, and the pair
// maps every broker stamp onto its hrtime. That holds only when the broker reads the receiver's
// wall clock: one kernel (a loopback broker, or one in a container beside it: containers share the
// kernel's CLOCK_REALTIME). The rule: a section is split when its transmitter and receiver share
// one kernel (no clock offset applied), where the broker is taken to run beside them as npm start's
// private servers and compose's services do; across two kernels the broker's clock is a third one
// nothing measured, and the section is not split ("broker clock not ours"). A broker elsewhere on
// one-kernel runs (a REDIS_URL to another machine) shifts the two parts by its clock's offset: the
// parts below −bound are counted and reported as a clock disagreement, never hidden.
// Pure: the clock readings are given to it (services/receiver/wall-clock.ts takes them).

/** A broker's own stamp of a message, read from the message (no I/O). */
export interface BrokerStamp {
  /** The broker's wall clock (Unix epoch ns) when it stored the message, truncated to `resolutionNs`. */
  atWallNs: bigint;
  /** The stamp's step: 1 for JetStream's ns, 1e6 for Redis's ms. */
  resolutionNs: number;
}

/** The receiver's wall clock (CLOCK_REALTIME) at one of its hrtime readings, within ± errorNs. */
export interface WallClockSample {
  hrNs: bigint;
  wallNs: bigint;
  errorNs: number;
}

/**
 * Bound on a mapped broker stamp's clock error: the two samples' own errors plus how far the wall
 * clock moved against hrtime between them (NTP slewing, a step); a linear drift keeps every moment
 * in between within it. Without an end sample, the start's error alone.
 */
export function mappingErrorNs(start: WallClockSample, end: WallClockSample | null): number {
  if (end === null) return start.errorNs;
  const driftNs = Number(end.wallNs - end.hrNs - (start.wallNs - start.hrNs));
  return start.errorNs + end.errorNs + Math.abs(driftNs);
}

/** One image's split, in ns on the receiver's hrtime: to + from is exactly arrival − send. */
export function splitOneWay(
  sentAtNs: bigint,
  arrivalNs: bigint,
  stamp: BrokerStamp,
  start: WallClockSample,
): { toBrokerNs: number; fromBrokerNs: number } {
  // A truncated stamp's moment lies anywhere in its step: its middle halves the error (± half a step).
  const brokerAtNs = stamp.atWallNs - (start.wallNs - start.hrNs) + BigInt(Math.floor(stamp.resolutionNs / 2));
  return { toBrokerNs: Number(brokerAtNs - sentAtNs), fromBrokerNs: Number(arrivalNs - brokerAtNs) };
}

/** A section's one-way times split at the broker's stamp (see the top of broker-split.ts). */
export interface BrokerSplit {
  /** Intact recorded images that carried a broker stamp. */
  count: number;
  /** Transmitter's stamp → the broker's. */
  toBroker: LatencySummary;
  /** Broker's stamp → the whole image in the receiver's hand: the time in the broker and the way out together. */
  fromBroker: LatencySummary;
  /** HDR histograms (compressed base64, whole ns, parts below 1 ns as 1) to merge receivers' splits from. */
  histograms: { toBrokerNs: string | null; fromBrokerNs: string | null };
  /** The broker stamp's step in ms (JetStream 0.000001, Redis 1). */
  resolutionMs: number;
  /** Every part is within ± this of the truth: half the stamp's step plus the wall-clock mapping's error. */
  clockBoundMs: number;
  /**
   * Parts below 0, which the stamp's step or the clock's error can give: counted here, in the
   * histogram's percentiles as 0, in min and mean as they came.
   */
  belowZero: { toBroker: number; fromBroker: number };
  /** Parts below −clockBoundMs: the broker's clock is not the receiver's (a broker on another machine). */
  beyondBound: number;
}

/** What a section reports of its split: the split, or why there is none although the broker stamped. */
export interface BrokerSplitOutcome {
  split: BrokerSplit | null;
  /** Why stamped images were not split; null when split or when no image carried a stamp. */
  notSplit: string | null;
}

/** Why a section across two kernels is not split. */
export const BROKER_CLOCK_NOT_OURS =
  "broker clock not ours: transmitter and receiver run on two kernels, so the broker's wall clock is a third one " +
  'nothing measured';

/** Collects a section's splits, one intact recorded image at a time, in constant memory. */
export class BrokerSplitRecorder {
  private readonly toBroker = new LatencyRecorder();
  private readonly fromBroker = new LatencyRecorder();
  private resolutionNs = 0;
  private readonly toParts: number[] = [];
  private readonly fromParts: number[] = [];
  private belowZeroTo = 0;
  private belowZeroFrom = 0;
  // The smallest parts, to count those below −bound once the bound is known (at the end).
  private lowestNs = Infinity;
  private stamped = 0;

  /** `start` maps the broker's wall clock; undefined when the section is not split (`notSplit` says why). */
  constructor(
    private readonly start: WallClockSample | undefined,
    private readonly notSplit: string | null = null,
  ) {}

  /** Stamped images taken so far (split or not). */
  get size(): number {
    return this.stamped;
  }

  /** Takes one intact recorded image's times and its broker stamp. */
  record(sentAtNs: bigint, arrivalNs: bigint, stamp: BrokerStamp): void {
    this.stamped++;
    if (this.start === undefined) return;
    const { toBrokerNs, fromBrokerNs } = splitOneWay(sentAtNs, arrivalNs, stamp, this.start);
    if (stamp.resolutionNs > this.resolutionNs) this.resolutionNs = stamp.resolutionNs;
    this.toBroker.record(toBrokerNs / 1e6);
    this.fromBroker.record(fromBrokerNs / 1e6);
    if (toBrokerNs < 0) this.belowZeroTo++;
    if (fromBrokerNs < 0) this.belowZeroFrom++;
    // Parts below zero are few (within the bound) unless the clocks disagree: kept to count against the bound.
    if (toBrokerNs < 0 && this.toParts.length < MAX_NEGATIVE_KEPT) this.toParts.push(toBrokerNs);
    if (fromBrokerNs < 0 && this.fromParts.length < MAX_NEGATIVE_KEPT) this.fromParts.push(fromBrokerNs);
    this.lowestNs = Math.min(this.lowestNs, toBrokerNs, fromBrokerNs);
  }

  /** The section's outcome, `end` the wall-clock pair taken at its end (null: none); frees the histograms. */
  result(end: WallClockSample | null): BrokerSplitOutcome {
    try {
      if (this.stamped === 0) return { split: null, notSplit: null };
      if (this.start === undefined || this.toBroker.size === 0)
        return { split: null, notSplit: this.notSplit ?? 'no wall-clock pair to map the broker stamps' };
      const boundNs = mappingErrorNs(this.start, end) + this.resolutionNs / 2;
      const beyond = (parts: number[], belowZero: number): number =>
        // Past MAX_NEGATIVE_KEPT, every part below zero counts: the clocks disagree by then anyway.
        parts.length < belowZero ? belowZero : parts.filter((p) => p < -boundNs).length;
      return {
        split: {
          count: this.toBroker.size,
          toBroker: this.toBroker.summary()!,
          fromBroker: this.fromBroker.summary()!,
          histograms: { toBrokerNs: this.toBroker.encoded(), fromBrokerNs: this.fromBroker.encoded() },
          resolutionMs: this.resolutionNs / 1e6,
          clockBoundMs: boundNs / 1e6,
          belowZero: { toBroker: this.belowZeroTo, fromBroker: this.belowZeroFrom },
          beyondBound:
            this.lowestNs >= -boundNs
              ? 0
              : beyond(this.toParts, this.belowZeroTo) + beyond(this.fromParts, this.belowZeroFrom),
        },
        notSplit: null,
      };
    } finally {
      this.toBroker.destroy();
      this.fromBroker.destroy();
    }
  }
}

/** Parts below zero kept for the count against the bound: beyond it, the clocks disagree and all count. */
const MAX_NEGATIVE_KEPT = 100_000;

/**
 * Several receivers' splits as one (their histograms added, as latency is merged): null when none
 * has one or one lacks its histograms; the widest bound and step.
 */
export function mergeBrokerSplits(splits: readonly (BrokerSplit | null | undefined)[]): BrokerSplit | null {
  const present = splits.filter((s): s is BrokerSplit => s != null);
  if (present.length === 0) return null;
  if (present.length === 1) return present[0]!;
  const toBroker = mergeLatency(present.map((s) => ({ summary: s.toBroker, histogramNs: s.histograms.toBrokerNs })));
  const fromBroker = mergeLatency(
    present.map((s) => ({ summary: s.fromBroker, histogramNs: s.histograms.fromBrokerNs })),
  );
  if (toBroker === undefined || fromBroker === undefined) return null;
  const sum = (of: (s: BrokerSplit) => number): number => present.reduce((n, s) => n + of(s), 0);
  return {
    count: sum((s) => s.count),
    toBroker,
    fromBroker,
    // The parts' own histograms stay with each receiver: a merged one is not what any receiver recorded.
    histograms: { toBrokerNs: null, fromBrokerNs: null },
    resolutionMs: Math.max(...present.map((s) => s.resolutionMs)),
    clockBoundMs: Math.max(...present.map((s) => s.clockBoundMs)),
    belowZero: { toBroker: sum((s) => s.belowZero.toBroker), fromBroker: sum((s) => s.belowZero.fromBroker) },
    beyondBound: sum((s) => s.beyondBound),
  };
}
