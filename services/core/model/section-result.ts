import type { BrokerSplitOutcome } from './broker-split.js';
import { oneWayClockErrorNs } from './clock.js';
import { joinSeries, type SecondSeries } from './second-series.js';
import {
  clientFairness,
  deadlineFigures,
  isOverloaded,
  type DeadlineCounts,
  MIN_STABLE_IMAGES,
  MIN_STABLE_SPAN_MS,
  type SectionExtras,
  type SectionPlan,
  type SectionResult,
} from './section.js';
import { imagesPerSecond, throughputMBps, type LatencySummary } from './stats.js';
import type { WarmupOutcome } from './warmup.js';

// A section's result from what was recorded of it: the receiver's recorder gives its record, and
// a section whose record is gone (a failed one the transmitter reports alone) gives what it knows.
// Both go through sectionResult, so the two shapes cannot drift apart. Pure.

// The window check allows for rounding only: the round trips and stamps are whole nanoseconds.
const WINDOW_CHECK_SLACK = 1.000001;

// A section whose record is gone: every frame it planned missed the deadline by not arriving.
const NO_FRAME_AGED: DeadlineCounts = {
  agedFrames: 0,
  lateCount: 0,
  veryLateCount: 0,
  longestGapMs: null,
  jitter: null,
};

/** What a section's record holds once it is over: counts, summaries and spans, times in ms. */
export interface SectionRecord {
  okCount: number;
  corruptCount: number;
  /** Images written over before they were read (a latest-frame key): neither delivered nor lost. */
  supersededCount: number;
  duplicateCount: number;
  outOfOrderCount: number;
  strayCount: number;
  /** Images stamped as arriving after their ack was processed (one clock). */
  arrivalsAfterAck: number;
  /** Round-trip records that reached the record. */
  roundTripsTaken: number;
  /** First recorded send to last arrival; null without an arrival. */
  totalMs: number | null;
  /** Images per second that arrived (first arrival to last); null with fewer than two. */
  deliveredPerSecond: number | null;
  latency: LatencySummary | null;
  rtt: LatencySummary | null;
  latencyFromDue: LatencySummary | null;
  /** Under RATE: the frames counted against their deadline and their schedule; null in a closed loop. */
  deadlineCounts?: DeadlineCounts | null;
  histograms: SectionResult['histograms'];
  /** The arrivals by the second they came in. */
  arrivalSeconds: ReturnType<SecondSeries['seconds']>;
  firstImageMs: number | null;
  warmedUp: WarmupOutcome | null;
  /** The one-way times split at the broker's stamps; absent or null parts when the broker stamped nothing. */
  brokerSplit?: BrokerSplitOutcome;
}

/** The record of a section in which nothing arrived (or whose record is gone), after warm-up `warmedUp`. */
export function nothingRecorded(warmedUp: WarmupOutcome | null): SectionRecord {
  return {
    okCount: 0,
    corruptCount: 0,
    supersededCount: 0,
    duplicateCount: 0,
    outOfOrderCount: 0,
    strayCount: 0,
    arrivalsAfterAck: 0,
    roundTripsTaken: 0,
    totalMs: null,
    deliveredPerSecond: null,
    latency: null,
    rtt: null,
    latencyFromDue: null,
    histograms: { oneWayNs: null, rttNs: null },
    arrivalSeconds: [],
    firstImageMs: null,
    warmedUp,
  };
}

/**
 * The section's image count: under DURATION those the transmitter sent (none for a section refused before it sent:
 * its plan's count is only a cap), else the plan's.
 */
export function resultImageCount(plan: SectionPlan, extras: SectionExtras): number {
  return plan.durationMs != null ? (extras.imagesSent ?? 0) : plan.imageCount;
}

/**
 * The section's result from its record; `failure` is the reason it ended early, if it did. The
 * checks (timing, window, round trips shipped) add their failures to it.
 */
export function sectionResult(
  plan: SectionPlan,
  failure: string | null,
  record: SectionRecord,
  extras: SectionExtras = {},
): SectionResult {
  const imageCount = resultImageCount(plan, extras);
  const { okCount, corruptCount, supersededCount, totalMs, deliveredPerSecond, rtt } = record;
  const lostCount = Math.max(0, imageCount - okCount - corruptCount - supersededCount);
  const rttCount = rtt?.count ?? 0;
  const inFlight = plan.ratePerSecond === null && plan.receivers === 1 ? (extras.meanInFlight ?? null) : null;
  const arrivalsAfterAck = plan.clock?.applied || rttCount === 0 ? null : record.arrivalsAfterAck;
  const timingFailure = arrivalsAfterAck
    ? `timing check: ${arrivalsAfterAck} of ${rttCount} images stamped as arriving after their ack was ` +
      `processed (one-way time over round trip on one clock): an arrival stamp came late`
    : null;
  const windowFailure =
    inFlight !== null && inFlight > plan.clients * plan.window * WINDOW_CHECK_SLACK
      ? `window check: ${inFlight.toFixed(2)} images in flight on average, more than CLIENTS × WINDOW ` +
        `= ${plan.clients * plan.window}`
      : null;
  const shipped = extras.roundTripsShipped;
  const roundTripFailure =
    shipped !== undefined && shipped > record.roundTripsTaken
      ? `round trips: ${shipped - record.roundTripsTaken} of ${shipped} the transmitter sent never reached the ` +
        `receiver's record`
      : null;
  const checkFailures = [timingFailure, windowFailure, roundTripFailure].filter((f): f is string => f !== null);
  const sectionFailure =
    failure === null && checkFailures.length === 0
      ? null
      : [failure, ...checkFailures].filter((f): f is string => f !== null).join('; ');
  const clockAfter = extras.clockAfter ?? null;
  const deadline =
    plan.ratePerSecond === null
      ? null
      : deadlineFigures(
          plan.deadline ?? { deadlineMs: 1000 / plan.ratePerSecond, allowedLateShare: 0.01 },
          plan.ratePerSecond,
          imageCount,
          okCount,
          record.deadlineCounts ?? NO_FRAME_AGED,
        );
  return {
    ...plan,
    imageCount,
    clockAfter,
    oneWayClockErrorMs: plan.clock?.applied ? oneWayClockErrorNs(plan.clock, clockAfter) / 1e6 : null,
    ok:
      sectionFailure === null &&
      okCount + supersededCount === imageCount &&
      record.duplicateCount === 0 &&
      record.strayCount === 0,
    failure: sectionFailure,
    imagesFile: null,
    series: joinSeries(record.arrivalSeconds, extras.rttSeconds ?? []),
    histograms: record.histograms,
    okCount,
    corruptCount,
    lostCount,
    supersededCount,
    duplicateCount: record.duplicateCount,
    outOfOrderCount: record.outOfOrderCount,
    strayCount: record.strayCount,
    totalMs,
    frameAge: plan.ratePerSecond === null ? null : record.latencyFromDue,
    latency: record.latency,
    rtt,
    littleRatio: inFlight === null ? null : inFlight / (plan.clients * plan.window),
    meanInFlight: inFlight,
    arrivalsAfterAck,
    verifyMs: extras.verifyMs ?? null,
    verifyLongestRunMs: extras.verifyLongestRunMs ?? null,
    verifyBusyShare: extras.verifyBusyShare ?? null,
    throughputMBps: totalMs === null ? null : throughputMBps(okCount * plan.imageSizeBytes, totalMs),
    imagesPerSecond: totalMs === null ? null : imagesPerSecond(okCount, totalMs),
    throughputIndicative: totalMs === null || totalMs < MIN_STABLE_SPAN_MS || okCount < MIN_STABLE_IMAGES,
    openLoop:
      plan.ratePerSecond === null
        ? null
        : {
            ratePerSecond: plan.ratePerSecond,
            achievedRatePerSecond: extras.achievedRatePerSecond ?? null,
            deliveredRatePerSecond: deliveredPerSecond,
            overloaded: isOverloaded(plan.ratePerSecond, extras.achievedRatePerSecond ?? null, deliveredPerSecond),
            sendLag: extras.sendLag ?? null,
            latencyFromDue: record.latencyFromDue,
            rttFromDue: extras.rttFromDue ?? null,
            deadline,
          },
    clientFairness: extras.clientFigures ? clientFairness(extras.clientFigures, plan.imageSizeBytes) : null,
    fanOut: null,
    warmedUp: record.warmedUp,
    brokerSplit: record.brokerSplit?.split ?? null,
    brokerNotSplit: record.brokerSplit?.notSplit ?? null,
    coldStart: {
      connectMs: extras.coldStart?.connectMs ?? null,
      firstImageMs: record.firstImageMs,
      firstImageRttMs: extras.coldStart?.firstImageRttMs ?? null,
    },
    cost: extras.cost ?? { transmitter: null, receiver: null, broker: null },
  };
}

/**
 * A section the transmitter must report on its own because the receiver's record is gone (the
 * receiver died): acknowledged images count as delivered intact but without a one-way time, the
 * rest as lost; round trips are the transmitter's own.
 */
export function acknowledgedOnlyResult(
  plan: SectionPlan,
  acknowledgedImages: number,
  failure: string,
  warmedUp: WarmupOutcome | undefined,
  extras: SectionExtras & { rtt?: LatencySummary | null } = {},
): SectionResult {
  const result = sectionResult(plan, failure, nothingRecorded(warmedUp ?? null), extras);
  const imageCount = result.imageCount;
  // Without a warm-up outcome no image was recorded: an acknowledged one was a warm-up image.
  const okCount = warmedUp === undefined ? 0 : Math.min(acknowledgedImages, imageCount);
  return { ...result, okCount, lostCount: imageCount - okCount, rtt: extras.rtt ?? null };
}

/** What the transmitter's acks tell of a failed section's recorded images. */
export interface AcknowledgedImages {
  /** Recorded images acknowledged. */
  count: number;
  /** The warm-up's outcome; undefined when it never ended (then every ack was a warm-up image's). */
  warmedUp: WarmupOutcome | undefined;
  /** The transmitter's figures of the section, its round trips among them. */
  extras: SectionExtras & { rtt?: LatencySummary | null };
}

/**
 * A failed section's result when no receiver's record came back: with recorded images
 * acknowledged, from the acks alone ({@link acknowledgedOnlyResult}); with none, a section in
 * which nothing arrived, with only the transmitter's cold start.
 */
export function failedSectionResult(
  plan: SectionPlan,
  failure: string,
  coldStart: SectionExtras['coldStart'],
  acknowledged: AcknowledgedImages | undefined,
): SectionResult {
  return acknowledged !== undefined && acknowledged.count > 0
    ? acknowledgedOnlyResult(plan, acknowledged.count, failure, acknowledged.warmedUp, acknowledged.extras)
    : sectionResult(plan, failure, nothingRecorded(null), { coldStart });
}
