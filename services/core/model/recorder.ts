import type { AckStatus, FrameHeader } from '../wire/frame.js';
import { AwaitingRoundTrips, type RoundTrip } from './awaiting-round-trips.js';
import { AwaitingVerdicts } from './awaiting-verdicts.js';
import { BROKER_CLOCK_NOT_OURS, BrokerSplitRecorder, type BrokerStamp, type WallClockSample } from './broker-split.js';
import { distributionOf, SecondSeries } from './second-series.js';
import { FrameAges } from './frame-ages.js';
import { resultImageCount, sectionResult } from './section-result.js';
import { SeenSet } from './seen.js';
import type { DeadlineCounts, ImageRecord, SectionExtras, SectionPlan, SectionResult } from './section.js';
import type { SecondDistribution } from './series.js';
import { LatencyRecorder, nsBetween, nsToMs, type TimesSoFar } from './stats.js';
import { warmupImageLimit, type WarmupOutcome } from './warmup.js';

// The receiver's record of one transport's section: which images came, when, and whether intact.
// An image is recorded when it arrives (and acknowledged at once); its checksum verdict comes
// later, after the ack, and its round trip later still, in the transmitter's next batch. Each
// image's record leaves for the receiver's files as soon as it is whole; what stays are
// histograms and sums. Pure: arrival times, verdicts, round trips and the clock offset are given
// to it, so tests drive it exactly. Every image takes this path, which makes no object, bigint or string:
// images wait in columns of typed arrays (awaiting-*.ts), times are numbers taken from the stamps (nsBetween).

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

/** What join is given for the round trip of an image whose round trip never came (a real one is ≥ 0). */
const NO_ROUND_TRIP = -1;

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
  private readonly awaitingVerdict = new AwaitingVerdicts();
  private readonly awaitingRoundTrip = new AwaitingRoundTrips();
  // A round trip that came before its image's verdict (none does while verdicts come within the arrival's turn).
  private readonly awaitingArrival = new Map<number, RoundTrip>();
  // The clock offset applied to send stamps (0 on one kernel): a number for each image, a bigint for the few sums.
  private readonly offsetNs: number;
  private readonly offsetBigNs: bigint;
  private readonly latency = new LatencyRecorder();
  private readonly rtt = new LatencyRecorder();
  // Round trips joined since GET /events' feed last took them: two digits, like a second's one-way times.
  private readonly rttSinceTaken = new LatencyRecorder(2);
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
  // The earliest send stamp, on the transmitter's clock (the offset is added once, at the result).
  private firstSentAtTransmitterNs: bigint | undefined;
  private firstArrivalNs: bigint | undefined;
  private lastArrivalNs: bigint | undefined;
  private verifiedArrivals = 0;
  private firstImageMs: number | null = null;
  private warmedUp: WarmupOutcome | undefined;
  private readonly brokerSplit: BrokerSplitRecorder;
  // Frame ages and, under RATE, the counts against the deadline and the gaps between arrivals.
  private readonly frameAges: FrameAges;

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
    this.offsetNs = plan.clock?.applied ? Math.round(plan.clock.offsetNs) : 0;
    this.offsetBigNs = BigInt(this.offsetNs);
    // Across two kernels the broker's clock is unknown: stamped images are counted, not split.
    this.brokerSplit = plan.clock?.applied
      ? new BrokerSplitRecorder(undefined, BROKER_CLOCK_NOT_OURS)
      : new BrokerSplitRecorder(wallClock?.());
    this.frameAges = new FrameAges(plan.ratePerSecond, plan.deadline?.deadlineMs);
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
    return this.frameAges.takeSinceTaken();
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
      frameAge: times(this.frameAges.ages),
      jitter: this.frameAges.jitterSoFar(boundsNs, times),
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
      this.frameAges.arrived(arrivalNs);
    }
    // The send stamp is held as it came (the transmitter's clock): the offset, if any, goes into each time taken.
    if (seq === 0) this.firstImageMs = nsToMs(arrivalNs - (header.sentAtNs + this.offsetBigNs));
    this.awaitingVerdict.set(
      seq,
      header.sentAtNs,
      arrivalNs,
      header.sizeBytes === this.plan.imageSizeBytes,
      brokerStamp,
    );
    return 'accepted';
  }

  /** Takes the checksum verdict of an accepted frame: a recorded image goes to output.log's sink now. */
  verified(seq: number, checksumOk: boolean): void {
    const awaiting = this.awaitingVerdict;
    if (!awaiting.take(seq)) return;
    const first = this.firstRecordedSeq;
    if (first === undefined || seq < first) return;
    this.takeArrival(seq - first + 1, awaiting.takenSizeOk && checksumOk);
  }

  // The frame the verdicts' columns just gave up (their taken… fields), recorded image `image`: its one-way time
  // (arrival − send, the send moved onto the receiver's clock when the two clocks differ) and the figures it is in.
  private takeArrival(image: number, intact: boolean): void {
    const { takenSentAtNs: sentAtNs, takenArrivalNs: arrivalNs, takenBrokerStamp: brokerStamp } = this.awaitingVerdict;
    const oneWayNs = nsBetween(sentAtNs, arrivalNs) - this.offsetNs;
    if (intact) {
      this.okCount++;
      this.latency.recordNs(oneWayNs);
      // Only a broker's images carry a stamp, and the split is made only on one kernel (no offset).
      if (brokerStamp !== undefined)
        this.brokerSplit.record(this.offsetNs === 0 ? sentAtNs : sentAtNs + this.offsetBigNs, arrivalNs, brokerStamp);
    } else this.corruptCount++;
    this.verifiedArrivals++;
    if (this.firstSentAtTransmitterNs === undefined || sentAtNs < this.firstSentAtTransmitterNs)
      this.firstSentAtTransmitterNs = sentAtNs;
    if (this.firstArrivalNs === undefined || arrivalNs < this.firstArrivalNs) this.firstArrivalNs = arrivalNs;
    if (this.lastArrivalNs === undefined || arrivalNs > this.lastArrivalNs) this.lastArrivalNs = arrivalNs;
    this.series?.addNs(arrivalNs, intact ? this.plan.imageSizeBytes : 0, oneWayNs, intact);
    this.sink.arrived(image, oneWayNs, intact);
    const roundTrip = this.awaitingArrival.size === 0 ? undefined : this.awaitingArrival.get(image);
    if (roundTrip === undefined) this.awaitingRoundTrip.set(image, oneWayNs, intact);
    else {
      this.awaitingArrival.delete(image);
      const hasDueLag = !Number.isNaN(roundTrip.dueLagNs);
      this.join(image, intact, oneWayNs, roundTrip.rttNs, hasDueLag ? roundTrip.dueLagNs : 0, hasDueLag);
    }
  }

  /**
   * Takes a batch of the transmitter's round trips (records of {@link ROUND_TRIP_RECORD_VALUES}:
   * image, round trip ns, stamp − due ns or NaN), each joined with its image's arrival.
   */
  roundTrips(records: Float64Array): void {
    const lastImage = this.plan.imageCount;
    const held = this.awaitingRoundTrip;
    for (let at = 0; at + 2 < records.length; at += 3) {
      const image = records[at]!;
      const rttNs = records[at + 1]!;
      if (!Number.isInteger(image) || image < 1 || image > lastImage || !(rttNs >= 0)) {
        this.strayRoundTrips++;
        continue;
      }
      this.roundTripsTaken++;
      const dueLagNs = records[at + 2]!;
      const hasDueLag = !Number.isNaN(dueLagNs);
      if (held.take(image))
        this.join(image, held.takenIntact, held.takenOneWayNs, rttNs, hasDueLag ? dueLagNs : 0, hasDueLag);
      else this.awaitingArrival.set(image, { rttNs, dueLagNs });
    }
  }

  // A verified arrival and its round trip (NO_ROUND_TRIP: none came) together: the figures needing both, its record.
  // No NaN comes in for a closed loop's missing due lag (`dueLagGiven`): a NaN argument is boxed, every image.
  private join(
    image: number,
    intact: boolean,
    oneWayNs: number,
    rttNs: number,
    dueLagNs: number,
    dueLagGiven: boolean,
  ): void {
    const hasRoundTrip = rttNs !== NO_ROUND_TRIP;
    const hasDueLag = hasRoundTrip && dueLagGiven;
    if (hasRoundTrip) {
      this.rtt.recordNs(rttNs);
      if (!this.rttReleased) this.rttSinceTaken.recordNs(rttNs);
      if (oneWayNs > rttNs) this.arrivalsAfterAck++;
    }
    if (intact && hasDueLag) this.frameAges.aged(oneWayNs + dueLagNs);
    this.sink.recorded(
      image,
      intact ? 'ok' : 'corrupt',
      oneWayNs,
      hasRoundTrip ? rttNs : null,
      hasDueLag ? dueLagNs : null,
    );
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
      // Frames still without a verdict, in the order they came; then arrivals still without a round trip, by image.
      for (const seq of this.awaitingVerdict.seqsInArrivalOrder()) {
        this.awaitingVerdict.take(seq);
        if (seq >= first && seq < first + imageCount) this.takeArrival(seq - first + 1, false);
      }
      const held = this.awaitingRoundTrip;
      for (const image of held.imagesHeld()) {
        held.take(image);
        this.join(image, held.takenIntact, held.takenOneWayNs, NO_ROUND_TRIP, 0, false);
      }
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
      this.firstSentAtTransmitterNs !== undefined && this.lastArrivalNs !== undefined
        ? nsToMs(this.lastArrivalNs - (this.firstSentAtTransmitterNs + this.offsetBigNs))
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
        latencyFromDue: this.frameAges.ages.summary() ?? null,
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
    this.rttReleased = true;
    this.rtt.destroy();
    this.frameAges.destroy();
    this.series?.destroy();
    return result;
  }

  /**
   * Under RATE, the frames counted against the deadline and the schedule so far (read once a second by GET /events'
   * feed, and at a scrape); null in a closed loop. Not after the result is made.
   */
  deadlineCounts(): DeadlineCounts | null {
    return this.frameAges.counts();
  }
}
