import { oneWayClockErrorNs, type ClockOffset } from './clock.js';
import type { SideCost } from './cost.js';
import type { AckStatus, FrameHeader } from './frame.js';
import { SecondSeries, joinSeries } from './second-series.js';
import { SeenSet } from './seen.js';
import type { SecondDistribution, SecondSample } from './series.js';
import { imagesPerSecond, LatencyRecorder, mergeLatency, nsToMs, throughputMBps, type LatencySummary } from './stats.js';
import { warmupImageLimit, type WarmupOutcome, type WarmupPlan } from './warmup.js';

// The receiver's record of one transport's section: which images came, when, and whether intact.
// An image is recorded when it arrives (and acknowledged at once); its checksum verdict comes
// later, after the ack, and its round trip later still, in the transmitter's next batch. Each
// image's record leaves for the receiver's files as soon as it is whole; what stays are
// histograms and sums. Pure: arrival times, verdicts, round trips and the clock offset are given
// to it, so tests drive it exactly.

/** The clock offset estimated at the start of a section, and whether times were corrected by it. */
export interface SectionClock extends ClockOffset {
  /**
   * True when transmitter and receiver run on different kernels (different clocks), so every
   * send time was moved onto the receiver's clock by offsetNs. On one kernel the clock is the
   * same and the estimate is only reported, never applied: it would add its own error.
   */
  applied: boolean;
}

/** What the transmitter announces before a section starts. */
export interface SectionPlan {
  sectionId: number;
  transport: string;
  label: string;
  baseline: boolean;
  /** Which repeat of this transport's section this is, from 1. */
  repeat: number;
  /** Recorded images to send; under DURATION the most the section may send, its result's count being those sent. */
  imageCount: number;
  /** DURATION: the recorded images go for this long instead of a count; null for a count. Absent in files written before it existed. */
  durationMs?: number | null;
  warmup: WarmupPlan;
  imageSizeBytes: number;
  window: number;
  /** RATE: images per second on an open-loop schedule; null in a closed loop. */
  ratePerSecond: number | null;
  /** CLIENTS: connections the transmitter sent over at once, each with its own WINDOW. */
  clients: number;
  /** RECEIVERS: receivers every image of the section went to. */
  receivers: number;
  /** This receiver's place among them, from 0 (the one that writes the run's figures for all). */
  receiverIndex: number;
  clock: SectionClock | null;
}

/**
 * A recorded span shorter than this, or fewer images than {@link MIN_STABLE_IMAGES}, gives a
 * throughput that moves by more than the run-to-run spread: it is reported as indicative.
 */
export const MIN_STABLE_SPAN_MS = 200;
/** Fewest recorded images for a throughput that is more than indicative. */
export const MIN_STABLE_IMAGES = 30;
/**
 * Fewest recorded images for a p50 to compare with another run's. Below it, the spread from one
 * process pair to the next outweighs what the warm-up can settle: a 10-image p50 ranged from 0.5
 * to 4.2 times a 1,000-image run's of the same transport in five interleaved rounds here, one to
 * three of five within 20 % per transport, under each warm-up rule tried (README, Warm-up and
 * sample size).
 */
export const COMPARABLE_RUN_IMAGES = 1000;

/**
 * A new connection's first steps, apart from the steady figures: the time `connect` took (until
 * the transport could send) and the first image sent on it (warm-up or not): one-way and round trip.
 */
export interface ColdStart {
  connectMs: number | null;
  firstImageMs: number | null;
  firstImageRttMs: number | null;
}

/** The transmitter's part of the cold start: the receiver adds the first image's one-way time. */
export type TransmitterColdStart = Omit<ColdStart, 'firstImageMs'>;

/**
 * One recorded image's fate: `timeMs` is its one-way transmission time (null when it never
 * arrived), `rttMs` the transmitter's stamp → ack processed (null without an ack).
 */
export interface ImageRecord {
  image: number;
  timeMs: number | null;
  rttMs: number | null;
  status: 'ok' | 'corrupt' | 'lost';
}

/**
 * An open-loop section is overloaded when its images went out, or arrived, at under this share of
 * RATE. Healthy sections measured here keep both within 0.5 % of RATE (jitter at the two ends of
 * the span), so 5 % is a shortfall of the transport (or of the sender on its core), not noise; a
 * stall that the section catches up on is not overload, and its wait is in the times from due.
 */
export const OVERLOAD_RATE_SHARE = 0.95;

/**
 * An open-loop section's figures (RATE): images are due on a schedule, so latency also counts from
 * the due time (coordinated omission corrected, as wrk2 does) besides the actual send. An image
 * due while every window is full waits for a slot and goes late: its wait is in its send lag and
 * in every figure from due, so a section that cannot keep up shows it in its tail.
 */
export interface OpenLoopFigures {
  /** RATE: images per second offered. */
  ratePerSecond: number;
  /** Images per second actually sent (first stamp to last); null with fewer than two. */
  achievedRatePerSecond: number | null;
  /** Images per second that arrived, intact or not (first arrival to last, on the receiver's clock); null with fewer than two. */
  deliveredRatePerSecond: number | null;
  /** The sent or the delivered rate fell below {@link OVERLOAD_RATE_SHARE} of RATE: the section did not keep up with its schedule. */
  overloaded: boolean;
  /** How late sends were against their due times (stamp − due): a wait for a window slot included. */
  sendLag: LatencySummary | null;
  /** One-way times of intact images counted from their due times. */
  latencyFromDue: LatencySummary | null;
  /** Round trips counted from their due times. */
  rttFromDue: LatencySummary | null;
}

/** True when an open-loop section with these rates did not keep up with `ratePerSecond` (see {@link OVERLOAD_RATE_SHARE}). */
export function isOverloaded(ratePerSecond: number, sentPerSecond: number | null, deliveredPerSecond: number | null): boolean {
  const floor = OVERLOAD_RATE_SHARE * ratePerSecond;
  return (sentPerSecond !== null && sentPerSecond < floor) || (deliveredPerSecond !== null && deliveredPerSecond < floor);
}

/** One client's share of a section (CLIENTS > 1), as the transmitter counted it. */
export interface ClientFigures {
  /** Recorded images it carried that were acknowledged. */
  images: number;
  /** Those images per second over its own span (its first stamp to its last ack); null without two ends. */
  imagesPerSecond: number | null;
}

/** How evenly a transport served a section's clients (CLIENTS > 1). */
export interface ClientFairness {
  clients: number;
  /** Fewest and most recorded images one client carried (acknowledged). */
  fewestImages: number;
  mostImages: number;
  /** Slowest and fastest client's throughput over its own span, in MB/s (10^6 bytes). */
  slowestMBps: number | null;
  fastestMBps: number | null;
  /** Jain's index over the clients' throughputs, (Σx)² ÷ (n·Σx²): 1 when all are equal, 1/n when one has it all. */
  jainIndex: number | null;
}

/** The fairness of `figures` for images of `imageSizeBytes`; null without clients. */
export function clientFairness(figures: readonly ClientFigures[], imageSizeBytes: number): ClientFairness | null {
  if (figures.length === 0) return null;
  const images = figures.map((f) => f.images);
  // A client without a rate (no image, or one instant) counts as 0 in the index: it was served nothing measurable.
  const rates = figures.map((f) => f.imagesPerSecond ?? 0);
  const measured = figures.flatMap((f) => (f.imagesPerSecond === null ? [] : [f.imagesPerSecond]));
  const sum = rates.reduce((a, b) => a + b, 0);
  const sumOfSquares = rates.reduce((a, b) => a + b * b, 0);
  const mbps = (perSecond: number): number => (perSecond * imageSizeBytes) / 1e6;
  return {
    clients: figures.length,
    fewestImages: Math.min(...images),
    mostImages: Math.max(...images),
    slowestMBps: measured.length === 0 ? null : mbps(Math.min(...rates)),
    fastestMBps: measured.length === 0 ? null : mbps(Math.max(...measured)),
    jainIndex: sumOfSquares === 0 ? null : (sum * sum) / (figures.length * sumOfSquares),
  };
}

/** One receiver's figures in a section that went to several (RECEIVERS > 1). */
export interface ReceiverFigures {
  /** Its place among the receivers, from 0. */
  receiver: number;
  ok: boolean;
  failure: string | null;
  okCount: number;
  lostCount: number;
  corruptCount: number;
  latency: LatencySummary | null;
  rtt: LatencySummary | null;
  totalMs: number | null;
  throughputMBps: number | null;
  /** Its one-way times' clock error bound when it ran on another kernel than the transmitter (see SectionResult); null on the same one. Absent in files written before it was recorded. */
  oneWayClockErrorMs?: number | null;
}

/** A section that went to several receivers: each one's figures, and all of them together. */
export interface FanOut {
  /** How each image reached them: a copy per receiver (point-to-point), or one send that reached all (pub/sub). */
  mode: 'copies' | 'one send';
  perReceiver: ReceiverFigures[];
  /** Every receiver's images as one distribution: counts summed, times of every intact image, every round trip; the largest clock error bound of any receiver. */
  aggregate: { okCount: number; lostCount: number; corruptCount: number; latency: LatencySummary | null; rtt: LatencySummary | null; oneWayClockErrorMs?: number | null };
}

/** The fan-out figures of one section from every receiver's result (the first receiver's first). */
export function fanOutOf(results: readonly SectionResult[], mode: FanOut['mode']): FanOut {
  const sum = (of: (r: SectionResult) => number): number => results.reduce((total, r) => total + of(r), 0);
  return {
    mode,
    perReceiver: results.map((r) => ({
      receiver: r.receiverIndex,
      ok: r.ok,
      failure: r.failure,
      okCount: r.okCount,
      lostCount: r.lostCount,
      corruptCount: r.corruptCount,
      latency: r.latency,
      rtt: r.rtt,
      totalMs: r.totalMs,
      throughputMBps: r.throughputMBps,
      oneWayClockErrorMs: r.oneWayClockErrorMs ?? null,
    })),
    aggregate: {
      okCount: sum((r) => r.okCount),
      lostCount: sum((r) => r.lostCount),
      corruptCount: sum((r) => r.corruptCount),
      // Every receiver's times as one distribution: their histograms added, their moments pooled.
      latency: mergeLatency(results.map((r) => ({ summary: r.latency, histogramNs: r.histograms?.oneWayNs ?? null }))) ?? null,
      rtt: mergeLatency(results.map((r) => ({ summary: r.rtt, histogramNs: r.histograms?.rttNs ?? null }))) ?? null,
      oneWayClockErrorMs: largestClockError(results),
    },
  };
}

/** The largest one-way clock error bound among sections; null when every one ran on the transmitter's kernel. */
function largestClockError(results: readonly Pick<SectionResult, 'oneWayClockErrorMs'>[]): number | null {
  const bounds = results.flatMap((r) => (r.oneWayClockErrorMs == null ? [] : [r.oneWayClockErrorMs]));
  return bounds.length === 0 ? null : Math.max(...bounds);
}

/**
 * The first receiver's result with every receiver's figures: not ok, with the first other
 * receiver's reason, when another receiver's section was not ok.
 */
export function withFanOut(result: SectionResult, fanOut: FanOut): SectionResult {
  const bad = fanOut.perReceiver.find((r) => r.receiver !== result.receiverIndex && !r.ok);
  if (bad === undefined) return { ...result, fanOut };
  const why = bad.failure ?? `${bad.lostCount} lost, ${bad.corruptCount} corrupt`;
  const failure = `receiver ${bad.receiver + 1} of ${fanOut.perReceiver.length}: ${why}`;
  return { ...result, fanOut, ok: false, failure: result.failure === null ? failure : `${result.failure}; ${failure}` };
}

/** Each side's cost of the section; null for a side that could not measure (section failed early, or no broker). */
export interface SectionCost {
  transmitter: SideCost | null;
  receiver: SideCost | null;
  /** The broker the transport goes through (Redis), from its own counters. */
  broker: SideCost | null;
}

/** What the section's result takes besides the receiver's own record: mostly the transmitter's side of it (SectionEnd). */
export interface SectionExtras {
  cost?: SectionCost;
  /** Recorded images the transmitter sent (DURATION: the section's image count); the plan's count when absent. */
  imagesSent?: number;
  /** Round-trip records the transmitter posted; the result says when fewer came. */
  roundTripsShipped?: number;
  /** Receiver's time spent hashing this section's recorded images, after their acks; null when VERIFY=false. */
  verifyMs?: number | null;
  /** Longest run of hashing in one turn of the receiver's event loop while the recorded images arrived; null when VERIFY=false. */
  verifyLongestRunMs?: number | null;
  /** Hashing's share of the receiver's event-loop busy time over the measured span, 0 to 1; null when VERIFY=false or unmeasured. */
  verifyBusyShare?: number | null;
  /** The transmitter's connect time and first round trip. */
  coldStart?: TransmitterColdStart;
  /** Open loop: the recorded images' stamp − due, and their round trips from due (the transmitter's). */
  sendLag?: LatencySummary | null;
  rttFromDue?: LatencySummary | null;
  /** Open loop: images per second actually sent. */
  achievedRatePerSecond?: number | null;
  /** Mean recorded images in flight, by Little's law on the transmitter's clock. */
  meanInFlight?: number | null;
  /** Round trips by the second their ack was processed in. */
  rttSeconds?: readonly { second: number; rtt: SecondDistribution | null }[];
  /** CLIENTS > 1: each client's share, by client. */
  clientFigures?: readonly ClientFigures[] | null;
  /** The clock offset estimated again after the section's last ack; null when it was not. */
  clockAfter?: ClockOffset | null;
}

/** Everything known about one section once it is over. */
export interface SectionResult extends SectionPlan {
  /** True when every image arrived intact and nothing failed. */
  ok: boolean;
  /** Why the section failed, when it did. */
  failure: string | null;
  /** The clock offset estimated again after the last ack, beside `clock` (before): how far it drifted. Null when not estimated; absent in files written before it was. */
  clockAfter?: ClockOffset | null;
  /**
   * Across two kernels (clock applied): the bound on every one-way time's clock error, in ms, from
   * the offset's uncertainty and its drift (see oneWayClockErrorNs). Null on one kernel, where
   * one-way times need no offset; absent in files written before it was recorded.
   */
  oneWayClockErrorMs?: number | null;
  /** The per-image file (CSV, one line per recorded image) beside results.json, relative to the run's folder; null when the receiver wrote none. */
  imagesFile: string | null;
  /** Per-second figures of the measured span, in order; seconds with no arrival are absent. */
  series: SecondSample[];
  /** HDR histograms (hdr-histogram-js compressed base64, whole ns, 3 significant digits) of intact one-way times and of round trips: what several receivers' distributions are merged from. */
  histograms: { oneWayNs: string | null; rttNs: string | null };
  okCount: number;
  corruptCount: number;
  lostCount: number;
  duplicateCount: number;
  outOfOrderCount: number;
  /** Frames for this section with a sequence number it never planned. */
  strayCount: number;
  /** Arrival of the last recorded image − send start of the first; null if none arrived. */
  totalMs: number | null;
  /** Distribution of intact images' transmission times; null if none arrived intact. */
  latency: LatencySummary | null;
  /** Distribution of the recorded images' round trips (stamp → ack processed, transmitter's clock); null without any. */
  rtt: LatencySummary | null;
  /**
   * How full the window stayed: the mean number of images in flight (Little's law: the round trips
   * summed over the span from the first stamp to the last ack) ÷ the most the transmitter may keep
   * in flight (CLIENTS × WINDOW). 1 when the window stays full; above 1 only if the window was
   * broken. It says nothing about whether the times are right: a delay anywhere in a closed loop
   * keeps it at 1. Null under RATE and with several receivers, where no single window bounds it.
   */
  littleRatio: number | null;
  /** The mean number of images in flight behind {@link littleRatio}; absent in files written before it was recorded. */
  meanInFlight?: number | null;
  /**
   * On one clock, images whose one-way time exceeds their round trip: stamped as arriving after
   * their ack was processed, which only a late arrival stamp can produce. Any makes the section
   * fail. Null across two clocks (where the offset's error allows it) or without round trips.
   */
  arrivalsAfterAck?: number | null;
  /** Receiver's time spent hashing this section's recorded images, each after its ack, on the thread that stamps arrivals; null when VERIFY=false. */
  verifyMs: number | null;
  /**
   * Longest run of hashing in one turn of the receiver's event loop while the recorded images
   * arrived: bytes that came in during it were read, and their image stamped, only after it. Null
   * when VERIFY=false; absent in files written before it was recorded.
   */
  verifyLongestRunMs?: number | null;
  /**
   * Hashing's share of the receiver's event-loop busy time over the measured span, 0 to 1: when
   * that thread is the bottleneck (a full window), the images behind it queue for this share of its
   * time, in their one-way times. Null when VERIFY=false or unmeasured; absent in older files.
   */
  verifyBusyShare?: number | null;
  /** Intact bytes delivered per second over totalMs, in MB/s (10^6 bytes). */
  throughputMBps: number | null;
  /** Intact images delivered per second over totalMs. */
  imagesPerSecond: number | null;
  /** True when the recorded span is too short for a stable throughput (see {@link MIN_STABLE_SPAN_MS}): MB/s and images/s are indicative. */
  throughputIndicative: boolean;
  /** Open-loop figures (RATE); null in a closed loop. */
  openLoop: OpenLoopFigures | null;
  /** CLIENTS > 1: how evenly the clients were served; null with one client. */
  clientFairness: ClientFairness | null;
  /** RECEIVERS > 1, in the first receiver's record: every receiver's figures and the aggregate; null otherwise. */
  fanOut: FanOut | null;
  /** How the warm-up went; null when the section failed before its warm-up ended. */
  warmedUp: WarmupOutcome | null;
  coldStart: ColdStart;
  cost: SectionCost;
}

// The window check allows for rounding only: the round trips and stamps are whole nanoseconds.
const WINDOW_CHECK_SLACK = 1.000001;

/**
 * Where a section's per-image records go as they are made (the receiver's files), so the recorder
 * keeps none: times in whole ns, null where there is none.
 */
export interface SectionSink {
  /** A recorded image arrived and was verified: output.log's line for it, as it happens. */
  arrived(image: number, oneWayNs: number, intact: boolean): void;
  /** A recorded image's whole record once its round trip is in (or the section is over without one): each image once, the lost last. */
  recorded(image: number, status: ImageRecord['status'], oneWayNs: number | null, rttNs: number | null, dueLagNs: number | null): void;
}

const NO_SINK: SectionSink = { arrived() {}, recorded() {} };

interface Arrival {
  sentAtNs: bigint;
  arrivalNs: bigint;
  sizeOk: boolean;
}

/** A verified arrival waiting for its round trip, or a round trip waiting for its verified arrival. */
interface Verified {
  oneWayNs: number;
  intact: boolean;
}
interface RoundTrip {
  rttNs: number;
  dueLagNs: number;
}

/**
 * Verified arrivals waiting for their round trips, by image: a ring of typed arrays, so holding an
 * image costs no allocation and no hashing (it is on the receiver's path for every image); a map
 * only for one whose place a later image needs while it still waits.
 */
class AwaitingRoundTrips {
  private static readonly SIZE = 1 << 18;
  private readonly images = new Float64Array(AwaitingRoundTrips.SIZE);
  private readonly oneWayNs = new Float64Array(AwaitingRoundTrips.SIZE);
  private readonly intact = new Uint8Array(AwaitingRoundTrips.SIZE);
  private readonly overflow = new Map<number, Verified>();
  private inRing = 0;

  /** Images held. */
  get size(): number {
    return this.inRing + this.overflow.size;
  }

  /** Holds image `image` (from 1). */
  set(image: number, verified: Verified): void {
    const slot = image & (AwaitingRoundTrips.SIZE - 1);
    const previous = this.images[slot]!;
    if (previous !== 0) this.overflow.set(previous, { oneWayNs: this.oneWayNs[slot]!, intact: this.intact[slot] === 1 });
    else this.inRing++;
    this.images[slot] = image;
    this.oneWayNs[slot] = verified.oneWayNs;
    this.intact[slot] = verified.intact ? 1 : 0;
  }

  /** Takes image `image` out; undefined when it is not held. */
  take(image: number): Verified | undefined {
    const slot = image & (AwaitingRoundTrips.SIZE - 1);
    if (this.images[slot] === image) {
      this.images[slot] = 0;
      this.inRing--;
      return { oneWayNs: this.oneWayNs[slot]!, intact: this.intact[slot] === 1 };
    }
    const held = this.overflow.get(image);
    if (held !== undefined) this.overflow.delete(image);
    return held;
  }

  /** Every image held, taken out. */
  *drain(): Generator<[number, Verified]> {
    for (let slot = 0; slot < AwaitingRoundTrips.SIZE && this.inRing > 0; slot++) {
      const image = this.images[slot]!;
      if (image === 0) continue;
      this.images[slot] = 0;
      this.inRing--;
      yield [image, { oneWayNs: this.oneWayNs[slot]!, intact: this.intact[slot] === 1 }];
    }
    yield* this.overflow;
    this.overflow.clear();
  }
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
  private series: SecondSeries | undefined;
  private duplicateCount = 0;
  private outOfOrderCount = 0;
  private strayCount = 0;
  private highestSeq = -1;
  private recordedArrivals = 0;
  private okCount = 0;
  private corruptCount = 0;
  private arrivalsAfterAck = 0;
  private roundTripsTaken = 0;
  private strayRoundTrips = 0;
  private firstSentAtNs: bigint | undefined;
  private firstArrivalNs: bigint | undefined;
  private lastArrivalNs: bigint | undefined;
  private verifiedArrivals = 0;
  private firstImageMs: number | null = null;
  private warmedUp: WarmupOutcome | undefined;

  constructor(
    readonly plan: SectionPlan,
    private readonly sink: SectionSink = NO_SINK,
  ) {
    this.offsetNs = plan.clock?.applied ? BigInt(Math.round(plan.clock.offsetNs)) : 0n;
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

  /** Images held now for a verdict or a round trip: bounded by the verifier's queue and a batch of round trips, not by the section. */
  get heldImages(): number {
    return this.awaitingVerdict.size + this.awaitingRoundTrip.size + this.awaitingArrival.size;
  }

  /**
   * The warm-up is over (every warm-up image acknowledged): seqs from `outcome.images` on are
   * the recorded ones, and the per-second series counts from `atNs` (the receiver's clock). The
   * transmitter sends none of them before this.
   */
  beginRecording(outcome: WarmupOutcome, atNs: bigint): void {
    if (this.warmedUp !== undefined) return;
    this.warmedUp = outcome;
    this.series = new SecondSeries(atNs);
  }

  /**
   * Records one frame of this section as it arrives and returns the ack status to send back at
   * once: accepted (its checksum verdict comes later through {@link verified}) or rejected (a
   * duplicate, or a seq the section never planned).
   */
  record(header: FrameHeader, arrivalNs: bigint): AckStatus {
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
    if (first !== undefined && seq >= first) this.recordedArrivals++;
    // The send time moves onto the receiver's clock when the two clocks differ.
    const sentAtNs = header.sentAtNs + this.offsetNs;
    if (seq === 0) this.firstImageMs = nsToMs(arrivalNs - sentAtNs);
    this.awaitingVerdict.set(seq, { sentAtNs, arrivalNs, sizeOk: header.sizeBytes === this.plan.imageSizeBytes });
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
    } else this.corruptCount++;
    this.verifiedArrivals++;
    if (this.firstSentAtNs === undefined || arrival.sentAtNs < this.firstSentAtNs) this.firstSentAtNs = arrival.sentAtNs;
    if (this.firstArrivalNs === undefined || arrival.arrivalNs < this.firstArrivalNs) this.firstArrivalNs = arrival.arrivalNs;
    if (this.lastArrivalNs === undefined || arrival.arrivalNs > this.lastArrivalNs) this.lastArrivalNs = arrival.arrivalNs;
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
    if (rttNs !== null) this.rtt.record(rttNs / 1e6);
    if (arrival !== undefined && rttNs !== null && arrival.oneWayNs > rttNs) this.arrivalsAfterAck++;
    if (arrival?.intact && dueLagNs !== null) this.latencyFromDue.record((arrival.oneWayNs + dueLagNs) / 1e6);
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
    const imageCount = this.plan.durationMs != null && extras.imagesSent !== undefined ? extras.imagesSent : this.plan.imageCount;
    if (first !== undefined) {
      for (const [seq, arrival] of this.awaitingVerdict) if (seq >= first && seq < first + imageCount) this.takeArrival(seq - first + 1, arrival, false);
      this.awaitingVerdict.clear();
      for (const [image, arrival] of this.awaitingRoundTrip.drain()) this.join(image, arrival, undefined);
      // A round trip without an arrival: acknowledged, yet not recorded here (cannot happen with one receiver per record).
      this.strayRoundTrips += this.awaitingArrival.size;
      this.awaitingArrival.clear();
      for (const seq of this.seen.missing(first, first + imageCount)) this.sink.recorded(seq - first + 1, 'lost', null, null, null);
    }
    const okCount = this.okCount;
    const corruptCount = this.corruptCount;
    const lostCount = Math.max(0, imageCount - okCount - corruptCount);
    const rtt = this.rtt.summary() ?? null;
    const rttCount = rtt?.count ?? 0;
    const inFlight = this.plan.ratePerSecond === null && this.plan.receivers === 1 ? (extras.meanInFlight ?? null) : null;
    const arrivalsAfterAck = this.plan.clock?.applied || rttCount === 0 ? null : this.arrivalsAfterAck;
    const timingFailure = arrivalsAfterAck ? `timing check: ${arrivalsAfterAck} of ${rttCount} images stamped as arriving after their ack was processed (one-way time over round trip on one clock): an arrival stamp came late` : null;
    const windowFailure = inFlight !== null && inFlight > this.plan.clients * this.plan.window * WINDOW_CHECK_SLACK ? `window check: ${inFlight.toFixed(2)} images in flight on average, more than CLIENTS × WINDOW = ${this.plan.clients * this.plan.window}` : null;
    const shipped = extras.roundTripsShipped;
    const roundTripFailure = shipped !== undefined && shipped > this.roundTripsTaken ? `round trips: ${shipped - this.roundTripsTaken} of ${shipped} the transmitter sent never reached the receiver's record` : null;
    const checkFailures = [timingFailure, windowFailure, roundTripFailure].filter((f): f is string => f !== null);
    const sectionFailure = failure === null && checkFailures.length === 0 ? null : [failure, ...checkFailures].filter((f): f is string => f !== null).join('; ');
    const totalMs = this.firstSentAtNs !== undefined && this.lastArrivalNs !== undefined ? nsToMs(this.lastArrivalNs - this.firstSentAtNs) : null;
    const deliveredPerSecond = this.verifiedArrivals < 2 || this.firstArrivalNs === undefined || this.lastArrivalNs === undefined || this.lastArrivalNs === this.firstArrivalNs ? null : ((this.verifiedArrivals - 1) * 1e9) / Number(this.lastArrivalNs - this.firstArrivalNs);
    const clockAfter = extras.clockAfter ?? null;
    const result: SectionResult = {
      ...this.plan,
      imageCount,
      clockAfter,
      oneWayClockErrorMs: this.plan.clock?.applied ? oneWayClockErrorNs(this.plan.clock, clockAfter) / 1e6 : null,
      ok: sectionFailure === null && okCount === imageCount && this.duplicateCount === 0 && this.strayCount === 0,
      failure: sectionFailure,
      imagesFile: null,
      series: joinSeries(this.series?.seconds() ?? [], extras.rttSeconds ?? []),
      histograms: { oneWayNs: this.latency.encoded(), rttNs: this.rtt.encoded() },
      okCount,
      corruptCount,
      lostCount,
      duplicateCount: this.duplicateCount,
      outOfOrderCount: this.outOfOrderCount,
      strayCount: this.strayCount,
      totalMs,
      latency: this.latency.summary() ?? null,
      rtt,
      littleRatio: inFlight === null ? null : inFlight / (this.plan.clients * this.plan.window),
      meanInFlight: inFlight,
      arrivalsAfterAck,
      verifyMs: extras.verifyMs ?? null,
      verifyLongestRunMs: extras.verifyLongestRunMs ?? null,
      verifyBusyShare: extras.verifyBusyShare ?? null,
      throughputMBps: totalMs === null ? null : throughputMBps(okCount * this.plan.imageSizeBytes, totalMs),
      imagesPerSecond: totalMs === null ? null : imagesPerSecond(okCount, totalMs),
      throughputIndicative: totalMs === null || totalMs < MIN_STABLE_SPAN_MS || okCount < MIN_STABLE_IMAGES,
      openLoop:
        this.plan.ratePerSecond === null
          ? null
          : {
              ratePerSecond: this.plan.ratePerSecond,
              achievedRatePerSecond: extras.achievedRatePerSecond ?? null,
              deliveredRatePerSecond: deliveredPerSecond,
              overloaded: isOverloaded(this.plan.ratePerSecond, extras.achievedRatePerSecond ?? null, deliveredPerSecond),
              sendLag: extras.sendLag ?? null,
              latencyFromDue: this.latencyFromDue.summary() ?? null,
              rttFromDue: extras.rttFromDue ?? null,
            },
      clientFairness: extras.clientFigures ? clientFairness(extras.clientFigures, this.plan.imageSizeBytes) : null,
      fanOut: null,
      warmedUp: this.warmedUp ?? null,
      coldStart: {
        connectMs: extras.coldStart?.connectMs ?? null,
        firstImageMs: this.firstImageMs,
        firstImageRttMs: extras.coldStart?.firstImageRttMs ?? null,
      },
      cost: extras.cost ?? { transmitter: null, receiver: null, broker: null },
    };
    this.latency.destroy();
    this.rtt.destroy();
    this.latencyFromDue.destroy();
    this.series?.destroy();
    return result;
  }
}

/**
 * A section the transmitter must report on its own because the receiver's record is gone (the
 * receiver died): acknowledged images count as delivered intact but without a one-way time, the
 * rest as lost; round trips are the transmitter's own.
 */
export function acknowledgedOnlyResult(plan: SectionPlan, acknowledgedImages: number, failure: string, warmedUp: WarmupOutcome | undefined, extras: SectionExtras & { rtt?: LatencySummary | null } = {}): SectionResult {
  const recorder = new SectionRecorder(plan);
  if (warmedUp !== undefined) recorder.beginRecording(warmedUp, 0n);
  const result = recorder.result(failure, extras);
  const imageCount = result.imageCount;
  // Without a warm-up outcome no image was recorded: an acknowledged one was a warm-up image.
  const okCount = warmedUp === undefined ? 0 : Math.min(acknowledgedImages, imageCount);
  return { ...result, okCount, lostCount: imageCount - okCount, rtt: extras.rtt ?? null };
}
