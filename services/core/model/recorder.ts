import type { AckStatus, FrameHeader } from '../wire/frame.js';
import { AwaitingRoundTrips, type RoundTrip, type Verified } from './awaiting-round-trips.js';
import { BROKER_CLOCK_NOT_OURS, BrokerSplitRecorder, type BrokerStamp, type WallClockSample } from './broker-split.js';
import { distributionOf, SecondSeries } from './second-series.js';
import { resultImageCount, sectionResult } from './section-result.js';
import { SeenSet } from './seen.js';
import type { DeadlineCounts, ImageRecord, SectionExtras, SectionPlan, SectionResult } from './section.js';
import type { SecondDistribution } from './series.js';
import { LatencyRecorder, nsToMs, type TimesSoFar } from './stats.js';
import { warmupImageLimit, type WarmupOutcome } from './warmup.js';

// The receiver's record of one transport's section: which images came, when, and whether intact.
// An image is recorded when it arrives (and acknowledged at once); its checksum verdict comes
// later, after the ack, and its round trip later still, in the transmitter's next batch. Each
// image's record leaves for the receiver's files as soon as it is whole; what stays are
// histograms and sums. Pure: arrival times, verdicts, round trips and the clock offset are given
// to it, so tests drive it exactly.

/**
 * Where a section's per-image records go as they are made (the receiver's files), so the recorder
 * keeps none: times in whole ns, null where there is none.
 */
export interface SectionSink {
  /** A recorded image arrived and was verified: output.log's line for it, as it happens. */
  arrived(image: number, oneWayNs: number, intact: boolean): void;
  /**
   * A recorded image's whole record once its round trip is in (or the section is over without one): each image once,
   * the lost last.
   */
  recorded(
    image: number,
    status: ImageRecord['status'],
    oneWayNs: number | null,
    rttNs: number | null,
    dueLagNs: number | null,
  ): void;
}

const NO_SINK: SectionSink = { arrived() {}, recorded() {} };

interface Arrival {
  sentAtNs: bigint;
  arrivalNs: bigint;
  sizeOk: boolean;
  brokerStamp: BrokerStamp | undefined;
}

export type { TimesSoFar } from './stats.js';

/** What a section's record holds so far, read while it runs (GET /metrics): verdicts given and times taken. */
export interface RecordSoFar {
  okCount: number;
  corruptCount: number;
  /** Intact images' one-way times. */
  oneWay: TimesSoFar;
  /** Round trips joined with their image's arrival. */
  roundTrip: TimesSoFar;
  /** Under RATE: intact frames' ages from their due times (joined with their round trips); none in a closed loop. */
  frameAge: TimesSoFar;
  /** Under RATE: |gap − interval| between consecutive arrivals; none in a closed loop. */
  jitter: TimesSoFar;
  /** Under RATE: the frames counted against their deadline so far; null in a closed loop. */
  deadline: DeadlineCounts | null;
}

/**
 * Collects one section's frames on the receiver and turns them into a {@link SectionResult}, in
 * memory that does not grow with the section: each image is held only from its arrival to its
 * verdict (the verifier's queue) and from then to its round trip (the transmitter's batch, a
 * second at most), then goes to the sink; the figures are histograms and running sums.
 */
export class SectionRecorder {
  private readonly seen = new SeenSet();
  private readonly awaitingVerdict = new Map<number, Arrival>();
  private readonly awaitingRoundTrip = new AwaitingRoundTrips();
  private readonly awaitingArrival = new Map<number, RoundTrip>();
  private readonly offsetNs: bigint;
  private readonly latency = new LatencyRecorder();
  private readonly rtt = new LatencyRecorder();
  private readonly latencyFromDue = new LatencyRecorder();
  // Round trips joined since GET /events' feed last took them: two digits, like a second's one-way times.
  private readonly rttSinceTaken = new LatencyRecorder(2);
  // Under RATE, frame ages joined since the feed last took them (with the round trips that gave them their due lag).
  private readonly ageSinceTaken = new LatencyRecorder(2);
  private rttReleased = false;
  private recordingStartNs: bigint | undefined;
  private series: SecondSeries | undefined;
  private duplicateCount = 0;
  private outOfOrderCount = 0;
  private strayCount = 0;
  private highestSeq = -1;
  private recordedArrivals = 0;
  private okCount = 0;
  private corruptCount = 0;
  private supersededCount = 0;
  private arrivalsAfterAck = 0;
  private roundTripsTaken = 0;
  private strayRoundTrips = 0;
  private firstSentAtNs: bigint | undefined;
  private firstArrivalNs: bigint | undefined;
  private lastArrivalNs: bigint | undefined;
  private verifiedArrivals = 0;
  private firstImageMs: number | null = null;
  private warmedUp: WarmupOutcome | undefined;
  private readonly brokerSplit: BrokerSplitRecorder;
  // Under RATE: the deadline and three intervals in ns, the inter-arrival jitter and the counts against them.
  private readonly deadlineNs: number;
  private readonly veryLateNs: number;
  private readonly intervalMs: number;
  private readonly jitter: LatencyRecorder | undefined;
  private lastRecordedArrivalNs: bigint | undefined;
  private longestGapNs = 0;
  private agedFrames = 0;
  private lateCount = 0;
  private veryLateCount = 0;

  /**
   * `wallClock` pairs the receiver's wall clock with its hrtime (broker-split.ts): read here, as the section opens,
   * and again as its result is made, to split the one-way times of images a broker stamped; none: nothing is split.
   */
  constructor(
    readonly plan: SectionPlan,
    private readonly sink: SectionSink = NO_SINK,
    private readonly wallClock?: () => WallClockSample,
    /**
     * The transport keeps only the latest image, written by one link in order (TransportTraits.supersedesImages): an
     * image missing below the highest that arrived was written over before it was read.
     */
    private readonly supersedes = false,
  ) {
    this.offsetNs = plan.clock?.applied ? BigInt(Math.round(plan.clock.offsetNs)) : 0n;
    // Across two kernels the broker's clock is unknown: stamped images are counted, not split.
    this.brokerSplit = plan.clock?.applied
      ? new BrokerSplitRecorder(undefined, BROKER_CLOCK_NOT_OURS)
      : new BrokerSplitRecorder(wallClock?.());
    const rate = plan.ratePerSecond;
    this.intervalMs = rate === null ? 0 : 1000 / rate;
    this.deadlineNs = (plan.deadline?.deadlineMs ?? this.intervalMs) * 1e6;
    this.veryLateNs = 3 * this.intervalMs * 1e6;
    this.jitter = rate === null ? undefined : new LatencyRecorder();
  }

  /** Frames taken so far, warm-up included, duplicates and strays not. */
  get receivedCount(): number {
    return this.seen.size;
  }

  /** Recorded (not warm-up) images taken so far: the section's last ack is due when this reaches imageCount. */
  get recordedCount(): number {
    return this.recordedArrivals;
  }

  /** The highest recorded image (from 1) that arrived; 0 before any. */
  get highestRecordedImage(): number {
    const first = this.firstRecordedSeq;
    return first === undefined || this.highestSeq < first ? 0 : this.highestSeq - first + 1;
  }

  /** Seq of the first recorded image; undefined while the section warms up. */
  get firstRecordedSeq(): number | undefined {
    return this.warmedUp?.images;
  }

  /**
   * Images held now for a verdict or a round trip: bounded by the verifier's queue and a batch of round trips, not by
   * the section.
   */
  get heldImages(): number {
    return this.awaitingVerdict.size + this.awaitingRoundTrip.size + this.awaitingArrival.size;
  }

  /**
   * The per-second series' closed seconds from the `from`-th on (none while warming up): read by GET /events' feed
   * once a second, never per image.
   */
  closedSeconds(from: number): ReturnType<SecondSeries['closedSince']> {
    return this.series?.closedSince(from) ?? [];
  }

  /**
   * The round trips joined since the last call (they come in the transmitter's batches, a second apart at most), then
   * forgets them: read by GET /events' feed once a second. Null with none, or once the result is made.
   */
  takeRoundTrips(): { count: number; times: SecondDistribution } | null {
    if (this.rttReleased || this.rttSinceTaken.size === 0) return null;
    const taken = { count: this.rttSinceTaken.size, times: distributionOf(this.rttSinceTaken)! };
    this.rttSinceTaken.reset();
    return taken;
  }

  /**
   * Under RATE, the frame ages joined since the last call (with their round trips), then forgets them: read by GET
   * /events' feed with {@link takeRoundTrips}. Null with none, in a closed loop, or once the result is made.
   */
  takeFrameAges(): { count: number; times: SecondDistribution } | null {
    if (this.rttReleased || this.ageSinceTaken.size === 0) return null;
    const taken = { count: this.ageSinceTaken.size, times: distributionOf(this.ageSinceTaken)! };
    this.ageSinceTaken.reset();
    return taken;
  }

  /** The last recorded arrival, in ms since the recording began (the per-second series' origin); null before any. */
  get lastArrivalMs(): number | null {
    if (this.recordingStartNs === undefined || this.lastArrivalNs === undefined) return null;
    return nsToMs(this.lastArrivalNs - this.recordingStartNs);
  }

  /**
   * The record so far (recorded images only: warm-up is in no figure), its times counted at or below each of
   * `boundsNs` (ascending, ns); read at a scrape, never per image.
   */
  recordSoFar(boundsNs: readonly number[]): RecordSoFar {
    const times = (recorder: LatencyRecorder): TimesSoFar => ({
      count: recorder.size,
      sumMs: recorder.sumMs,
      atOrBelow: recorder.countsAtOrBelowNs(boundsNs),
    });
    return {
      okCount: this.okCount,
      corruptCount: this.corruptCount,
      oneWay: times(this.latency),
      roundTrip: times(this.rtt),
      frameAge: times(this.latencyFromDue),
      jitter: this.jitter === undefined ? { count: 0, sumMs: 0, atOrBelow: boundsNs.map(() => 0) } : times(this.jitter),
      deadline: this.deadlineCounts(),
    };
  }

  /**
   * The warm-up is over (every warm-up image acknowledged): seqs from `outcome.images` on are
   * the recorded ones, and the per-second series counts from `atNs` (the receiver's clock). The
   * transmitter sends none of them before this.
   */
  beginRecording(outcome: WarmupOutcome, atNs: bigint): void {
    if (this.warmedUp !== undefined) return;
    this.warmedUp = outcome;
    this.recordingStartNs = atNs;
    this.series = new SecondSeries(atNs, true);
  }

  /**
   * Records one frame of this section as it arrives and returns the ack status to send back at
   * once: accepted (its checksum verdict comes later through {@link verified}) or rejected (a
   * duplicate, or a seq the section never planned).
   */
  record(header: FrameHeader, arrivalNs: bigint, brokerStamp?: BrokerStamp): AckStatus {
    const { seq } = header;
    const first = this.firstRecordedSeq;
    if (seq >= (first === undefined ? warmupImageLimit(this.plan.warmup) : first + this.plan.imageCount)) {
      this.strayCount++;
      return 'rejected';
    }
    if (!this.seen.add(seq)) {
      this.duplicateCount++;
      return 'rejected';
    }
    if (seq < this.highestSeq) this.outOfOrderCount++;
    this.highestSeq = Math.max(this.highestSeq, seq);
    if (first !== undefined && seq >= first) {
      this.recordedArrivals++;
      // Gaps between arrivals in the order they came, the first recorded one's from nothing.
      if (this.jitter !== undefined && this.lastRecordedArrivalNs !== undefined) {
        const gapNs = Number(arrivalNs - this.lastRecordedArrivalNs);
        if (gapNs > this.longestGapNs) this.longestGapNs = gapNs;
        this.jitter.record(Math.abs(gapNs / 1e6 - this.intervalMs));
      }
      this.lastRecordedArrivalNs = arrivalNs;
    }
    // The send time moves onto the receiver's clock when the two clocks differ.
    const sentAtNs = header.sentAtNs + this.offsetNs;
    if (seq === 0) this.firstImageMs = nsToMs(arrivalNs - sentAtNs);
    this.awaitingVerdict.set(seq, {
      sentAtNs,
      arrivalNs,
      sizeOk: header.sizeBytes === this.plan.imageSizeBytes,
      brokerStamp,
    });
    return 'accepted';
  }

  /** Takes the checksum verdict of an accepted frame: a recorded image goes to output.log's sink now. */
  verified(seq: number, checksumOk: boolean): void {
    const arrival = this.awaitingVerdict.get(seq);
    if (arrival === undefined) return;
    this.awaitingVerdict.delete(seq);
    const first = this.firstRecordedSeq;
    if (first === undefined || seq < first) return;
    this.takeArrival(seq - first + 1, arrival, arrival.sizeOk && checksumOk);
  }

  private takeArrival(image: number, arrival: Arrival, intact: boolean): void {
    const oneWayNs = Number(arrival.arrivalNs - arrival.sentAtNs);
    const oneWayMs = oneWayNs / 1e6;
    if (intact) {
      this.okCount++;
      this.latency.record(oneWayMs);
      if (arrival.brokerStamp !== undefined)
        this.brokerSplit.record(arrival.sentAtNs, arrival.arrivalNs, arrival.brokerStamp);
    } else this.corruptCount++;
    this.verifiedArrivals++;
    if (this.firstSentAtNs === undefined || arrival.sentAtNs < this.firstSentAtNs)
      this.firstSentAtNs = arrival.sentAtNs;
    if (this.firstArrivalNs === undefined || arrival.arrivalNs < this.firstArrivalNs)
      this.firstArrivalNs = arrival.arrivalNs;
    if (this.lastArrivalNs === undefined || arrival.arrivalNs > this.lastArrivalNs)
      this.lastArrivalNs = arrival.arrivalNs;
    this.series?.add(arrival.arrivalNs, intact ? this.plan.imageSizeBytes : 0, intact ? oneWayMs : null);
    this.sink.arrived(image, oneWayNs, intact);
    const roundTrip = this.awaitingArrival.size === 0 ? undefined : this.awaitingArrival.get(image);
    if (roundTrip === undefined) this.awaitingRoundTrip.set(image, { oneWayNs, intact });
    else {
      this.awaitingArrival.delete(image);
      this.join(image, { oneWayNs, intact }, roundTrip);
    }
  }

  /**
   * Takes a batch of the transmitter's round trips (records of {@link ROUND_TRIP_RECORD_VALUES}:
   * image, round trip ns, stamp − due ns or NaN), each joined with its image's arrival.
   */
  roundTrips(records: Float64Array): void {
    const lastImage = this.plan.imageCount;
    for (let at = 0; at + 2 < records.length; at += 3) {
      const image = records[at]!;
      const rttNs = records[at + 1]!;
      if (!Number.isInteger(image) || image < 1 || image > lastImage || !(rttNs >= 0)) {
        this.strayRoundTrips++;
        continue;
      }
      this.roundTripsTaken++;
      const roundTrip = { rttNs, dueLagNs: records[at + 2]! };
      const arrival = this.awaitingRoundTrip.take(image);
      if (arrival === undefined) this.awaitingArrival.set(image, roundTrip);
      else this.join(image, arrival, roundTrip);
    }
  }

  // An image's arrival and its round trip together: the figures that need both, and its record.
  private join(image: number, arrival: Verified | undefined, roundTrip: RoundTrip | undefined): void {
    const rttNs = roundTrip?.rttNs ?? null;
    const dueLagNs = roundTrip === undefined || Number.isNaN(roundTrip.dueLagNs) ? null : roundTrip.dueLagNs;
    if (rttNs !== null) {
      this.rtt.record(rttNs / 1e6);
      if (!this.rttReleased) this.rttSinceTaken.record(rttNs / 1e6);
    }
    if (arrival !== undefined && rttNs !== null && arrival.oneWayNs > rttNs) this.arrivalsAfterAck++;
    if (arrival?.intact && dueLagNs !== null) {
      const ageNs = arrival.oneWayNs + dueLagNs;
      this.latencyFromDue.record(ageNs / 1e6);
      if (!this.rttReleased) this.ageSinceTaken.record(ageNs / 1e6);
      this.agedFrames++;
      if (ageNs > this.deadlineNs) this.lateCount++;
      if (ageNs > this.veryLateNs) this.veryLateCount++;
    }
    const status = arrival === undefined ? 'lost' : arrival.intact ? 'ok' : 'corrupt';
    this.sink.recorded(image, status, arrival?.oneWayNs ?? null, rttNs, dueLagNs);
  }

  /**
   * The section's result; `failure` is the reason it ended early, if it did. An image whose
   * verdict never came counts as corrupt: it was not shown to be intact. Call once: it sends the
   * images still held, and the lost ones, to the sink.
   */
  result(failure: string | null, extras: SectionExtras = {}): SectionResult {
    const first = this.firstRecordedSeq;
    const imageCount = resultImageCount(this.plan, extras);
    if (first !== undefined) {
      for (const [seq, arrival] of this.awaitingVerdict)
        if (seq >= first && seq < first + imageCount) this.takeArrival(seq - first + 1, arrival, false);
      this.awaitingVerdict.clear();
      for (const [image, arrival] of this.awaitingRoundTrip.drain()) this.join(image, arrival, undefined);
      // A round trip without an arrival: acknowledged, yet not recorded here (cannot happen with one receiver per
      // record).
      this.strayRoundTrips += this.awaitingArrival.size;
      this.awaitingArrival.clear();
      for (const seq of this.seen.missing(first, first + imageCount)) {
        const superseded = this.supersedes && seq < this.highestSeq;
        if (superseded) this.supersededCount++;
        this.sink.recorded(seq - first + 1, superseded ? 'superseded' : 'lost', null, null, null);
      }
    }
    const totalMs =
      this.firstSentAtNs !== undefined && this.lastArrivalNs !== undefined
        ? nsToMs(this.lastArrivalNs - this.firstSentAtNs)
        : null;
    const deliveredPerSecond =
      this.verifiedArrivals < 2 ||
      this.firstArrivalNs === undefined ||
      this.lastArrivalNs === undefined ||
      this.lastArrivalNs === this.firstArrivalNs
        ? null
        : ((this.verifiedArrivals - 1) * 1e9) / Number(this.lastArrivalNs - this.firstArrivalNs);
    // The end of the mapping's span, read only when there is something to map.
    const brokerSplit = this.brokerSplit.result(
      this.brokerSplit.size > 0 && this.wallClock !== undefined ? this.wallClock() : null,
    );
    const result = sectionResult(
      this.plan,
      failure,
      {
        okCount: this.okCount,
        corruptCount: this.corruptCount,
        supersededCount: this.supersededCount,
        duplicateCount: this.duplicateCount,
        outOfOrderCount: this.outOfOrderCount,
        strayCount: this.strayCount,
        arrivalsAfterAck: this.arrivalsAfterAck,
        roundTripsTaken: this.roundTripsTaken,
        totalMs,
        deliveredPerSecond,
        latency: this.latency.summary() ?? null,
        rtt: this.rtt.summary() ?? null,
        latencyFromDue: this.latencyFromDue.summary() ?? null,
        deadlineCounts: this.deadlineCounts(),
        histograms: { oneWayNs: this.latency.encoded(), rttNs: this.rtt.encoded() },
        arrivalSeconds: this.series?.seconds() ?? [],
        firstImageMs: this.firstImageMs,
        warmedUp: this.warmedUp ?? null,
        brokerSplit,
      },
      extras,
    );
    this.latency.destroy();
    this.rttSinceTaken.destroy();
    this.ageSinceTaken.destroy();
    this.rttReleased = true;
    this.rtt.destroy();
    this.latencyFromDue.destroy();
    this.jitter?.destroy();
    this.series?.destroy();
    return result;
  }

  /**
   * Under RATE, the frames counted against the deadline and the schedule so far (read once a second by GET /events'
   * feed, and at a scrape); null in a closed loop. Not after the result is made.
   */
  deadlineCounts(): DeadlineCounts | null {
    if (this.jitter === undefined) return null;
    return {
      agedFrames: this.agedFrames,
      lateCount: this.lateCount,
      veryLateCount: this.veryLateCount,
      longestGapMs: this.jitter.size === 0 ? null : this.longestGapNs / 1e6,
      jitter: this.jitter.summary() ?? null,
    };
  }
}
