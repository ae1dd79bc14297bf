import type { CommandLaneResult } from './command-lane.js';
import type { DeadlineFigures } from './open-loop.js';
import { mergeBrokerSplits, type BrokerSplit } from './broker-split.js';
import type { ClockOffset, SectionClock } from './clock.js';
import type { SectionCost } from './cost.js';
import type { HostLoad } from './host-load.js';
import type { SecondDistribution, SecondSample } from './series.js';
import { mergeLatency, type LatencySummary } from './stats.js';
import type { WarmupOutcome, WarmupPlan } from './warmup.js';

export type { SectionClock } from './clock.js';
export {
  deadlineFigures,
  isOverloaded,
  OVERLOAD_RATE_SHARE,
  type DeadlineCounts,
  type DeadlineFigures,
} from './open-loop.js';
export type { SectionCost } from './cost.js';

// What a section is: its plan, the figures it is reported with, and how several receivers' or
// clients' figures combine. Results are built in section-result.ts, from the receiver's recorder (recorder.ts)
// or from the transmitter's acks alone.

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
  /**
   * DURATION: the recorded images go for this long instead of a count; null for a count. Absent in files written before
   * it existed.
   */
  durationMs?: number | null;
  warmup: WarmupPlan;
  imageSizeBytes: number;
  window: number;
  /** RATE: images per second on an open-loop schedule; null in a closed loop. */
  ratePerSecond: number | null;
  /**
   * Under RATE: DEADLINE_MS, the age (from its due time) past which a frame is late, and DEADLINE_MISS_PERCENT ÷ 100,
   * the share of late frames a section may have before its verdict says so. Null in a closed loop; absent in files
   * written before deadlines.
   */
  deadline?: { deadlineMs: number; allowedLateShare: number } | null;
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
 * three of five within 20 % per transport, under each warm-up rule tried (docs/measurement.md,
 * Warm-up and sample size).
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
  status: ImageStatus;
}

/** Where an image ended: arrived intact or not, written over before it was read (a latest-frame key), or lost. */
export type ImageStatus = 'ok' | 'corrupt' | 'superseded' | 'lost';

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
  /**
   * Images per second that arrived, intact or not (first arrival to last, on the receiver's clock); null with fewer
   * than two.
   */
  deliveredRatePerSecond: number | null;
  /**
   * The sent or the delivered rate fell below {@link OVERLOAD_RATE_SHARE} of RATE: the section did not keep up with its
   * schedule.
   */
  overloaded: boolean;
  /** How late sends were against their due times (stamp − due): a wait for a window slot included. */
  sendLag: LatencySummary | null;
  /** One-way times of intact images counted from their due times. */
  latencyFromDue: LatencySummary | null;
  /** Round trips counted from their due times. */
  rttFromDue: LatencySummary | null;
  /** The frames against their deadline and their schedule; absent in files written before deadlines. */
  deadline?: DeadlineFigures | null;
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
  /** Written over before this receiver read them (a latest-frame key); absent in older files. */
  supersededCount?: number;
  latency: LatencySummary | null;
  rtt: LatencySummary | null;
  totalMs: number | null;
  throughputMBps: number | null;
  /**
   * Its one-way times' clock error bound when it ran on another kernel than the transmitter (see SectionResult); null
   * on the same one. Absent in files written before it was recorded.
   */
  oneWayClockErrorMs?: number | null;
}

/** A section that went to several receivers: each one's figures, and all of them together. */
export interface FanOut {
  /** How each image reached them: a copy per receiver (point-to-point), or one send that reached all (pub/sub). */
  mode: 'copies' | 'one send';
  perReceiver: ReceiverFigures[];
  /**
   * Every receiver's images as one distribution: counts summed, times of every intact image, every round trip; the
   * largest clock error bound of any receiver.
   */
  aggregate: {
    okCount: number;
    lostCount: number;
    corruptCount: number;
    /** Every receiver's superseded images; absent in older files. */
    supersededCount?: number;
    latency: LatencySummary | null;
    rtt: LatencySummary | null;
    oneWayClockErrorMs?: number | null;
    /** Every receiver's broker splits as one (see SectionResult.brokerSplit); null or absent when none split. */
    brokerSplit?: BrokerSplit | null;
  };
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
      supersededCount: r.supersededCount ?? 0,
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
      supersededCount: sum((r) => r.supersededCount ?? 0),
      // Every receiver's times as one distribution: their histograms added, their moments pooled.
      latency:
        mergeLatency(results.map((r) => ({ summary: r.latency, histogramNs: r.histograms?.oneWayNs ?? null }))) ?? null,
      rtt: mergeLatency(results.map((r) => ({ summary: r.rtt, histogramNs: r.histograms?.rttNs ?? null }))) ?? null,
      oneWayClockErrorMs: largestClockError(results),
      brokerSplit: mergeBrokerSplits(results.map((r) => r.brokerSplit)),
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

/**
 * What the section's result takes besides the receiver's own record: mostly the transmitter's side of it (SectionEnd).
 */
export interface SectionExtras {
  cost?: SectionCost;
  /** Recorded images the transmitter sent (DURATION: the section's image count); the plan's count when absent. */
  imagesSent?: number;
  /** Round-trip records the transmitter posted; the result says when fewer came. */
  roundTripsShipped?: number;
  /** Receiver's time spent hashing this section's recorded images, after their acks; null when VERIFY=false. */
  verifyMs?: number | null;
  /**
   * Longest run of hashing in one turn of the receiver's event loop while the recorded images arrived; null when
   * VERIFY=false.
   */
  verifyLongestRunMs?: number | null;
  /**
   * Hashing's share of the receiver's event-loop busy time over the measured span, 0 to 1; null when VERIFY=false or
   * unmeasured.
   */
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
  /** COMMAND_RATE's lane: commands timed apart from the images; absent without a lane. */
  commands?: CommandLaneResult;
  /** True when every image arrived intact and nothing failed. */
  ok: boolean;
  /** Why the section failed, when it did. */
  failure: string | null;
  /**
   * The clock offset estimated again after the last ack, beside `clock` (before): how far it drifted. Null when not
   * estimated; absent in files written before it was.
   */
  clockAfter?: ClockOffset | null;
  /**
   * Across two kernels (clock applied): the bound on every one-way time's clock error, in ms, from
   * the offset's uncertainty and its drift (see oneWayClockErrorNs). Null on one kernel, where
   * one-way times need no offset; absent in files written before it was recorded.
   */
  oneWayClockErrorMs?: number | null;
  /**
   * The per-image file (CSV, one line per recorded image) beside results.json, relative to the run's folder; null when
   * the receiver wrote none.
   */
  imagesFile: string | null;
  /**
   * PROFILE=1: the section's V8 CPU profiles beside results.json (relative to the run's folder), by side; null for a
   * side that took none or whose profile did not arrive; absent when neither side profiled.
   */
  cpuProfiles?: { receiver: string | null; transmitter: string | null };
  /** Per-second figures of the measured span, in order; seconds with no arrival are absent. */
  series: SecondSample[];
  /**
   * HDR histograms (hdr-histogram-js compressed base64, whole ns, 3 significant digits) of intact one-way times and of
   * round trips: what several receivers' distributions are merged from.
   */
  histograms: { oneWayNs: string | null; rttNs: string | null };
  okCount: number;
  corruptCount: number;
  lostCount: number;
  /**
   * Images written over before the receiver read them, on a transport that keeps only the latest (a latest-frame
   * key): never delivered, never lost. Absent in files written before it was counted.
   */
  supersededCount?: number;
  duplicateCount: number;
  outOfOrderCount: number;
  /** Frames for this section with a sequence number it never planned. */
  strayCount: number;
  /** Arrival of the last recorded image − send start of the first; null if none arrived. */
  totalMs: number | null;
  /**
   * Under RATE, the headline: intact frames' age at arrival, counted from each one's due time (the same distribution
   * as openLoop.latencyFromDue); null in a closed loop, where `latency` leads. Absent in files written before it.
   */
  frameAge?: LatencySummary | null;
  /**
   * Distribution of intact images' transmission times (from the stamp taken as each is handed to the link: under
   * RATE, the time on the link); null if none arrived intact.
   */
  latency: LatencySummary | null;
  /**
   * Distribution of the recorded images' round trips (stamp → ack processed, transmitter's clock); null without any.
   */
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
  /**
   * Receiver's time spent hashing this section's recorded images, each after its ack, on the thread that stamps
   * arrivals; null when VERIFY=false.
   */
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
  /**
   * True when the recorded span is too short for a stable throughput (see {@link MIN_STABLE_SPAN_MS}): MB/s and
   * images/s are indicative.
   */
  throughputIndicative: boolean;
  /** Open-loop figures (RATE); null in a closed loop. */
  openLoop: OpenLoopFigures | null;
  /** CLIENTS > 1: how evenly the clients were served; null with one client. */
  clientFairness: ClientFairness | null;
  /** RECEIVERS > 1, in the first receiver's record: every receiver's figures and the aggregate; null otherwise. */
  fanOut: FanOut | null;
  /** How the warm-up went; null when the section failed before its warm-up ended. */
  warmedUp: WarmupOutcome | null;
  /**
   * Through a broker that stamps each message (JetStream, Redis streams): intact images' one-way times split into to
   * the broker and from it (model/broker-split.ts). Null when not split (no stamp, or see brokerNotSplit); absent in
   * files written before it was recorded.
   */
  brokerSplit?: BrokerSplit | null;
  /** Why a broker's stamps were not used to split (not the receiver's clock); null otherwise; absent in old files. */
  brokerNotSplit?: string | null;
  coldStart: ColdStart;
  cost: SectionCost;
  /**
   * How busy the receiver's host was over the measured span (model/host-load.ts): load average, steal, other
   * processes' CPU. Null when not read (a section refused at its opening); absent in files written before it.
   */
  hostLoad?: HostLoad | null;
}
