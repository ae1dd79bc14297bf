import type { CommandLaneResult, CommandPhaseResult } from '../model/command-lane.js';
import type { DeadlineCounts, DeadlineFigures, SectionPlan, SectionResult } from '../model/section.js';
import type { SecondDistribution } from '../model/series.js';
import type { RunInfo, RunReport } from '../report/report.js';
import { runSucceeded } from '../report/report.js';
import type { WarmupPlan } from '../model/warmup.js';

// What GET /events says about a run, as plain data: the run's settings, each section's start, one
// aggregate per second of its measured span, its verdict, the run's end. Built from what the
// receiver already has at its transitions and from the recorder's closed seconds (read once a
// second, never per image). Pure: the receiver gives it the readings it makes.

/** The events GET /events sends, in the order a run makes them. */
export const LIVE_EVENT_NAMES = ['run', 'section-start', 'second', 'section-end', 'run-end'] as const;

/** One of {@link LIVE_EVENT_NAMES}. */
export type LiveEventName = (typeof LIVE_EVENT_NAMES)[number];

/** `run`: the run's settings as the report gives them; nothing secret (no token, no URL, no password). */
export interface LiveRunData {
  startedAt: string;
  /** TRANSPORTS in order, each with its display name as the report shows it. */
  transports: { name: string; label: string }[];
  imageDescription: string;
  imageSizeBytes: number;
  /** IMAGE_COUNT per section; null under DURATION, where a section's count is what it sends in the time. */
  imageCount: number | null;
  /** DURATION per section; null for a count. */
  durationMs: number | null;
  window: number;
  warmup: WarmupPlan;
  repeat: number;
  /** RATE (open loop), images per second; null in a closed loop. */
  ratePerSecond: number | null;
  /** Under RATE: DEADLINE_MS and DEADLINE_MISS_PERCENT ÷ 100; null in a closed loop. */
  deadline: { deadlineMs: number; allowedLateShare: number } | null;
  /** COMMAND_RATE: commands per second on each section's link; null without the command lane. */
  commandRatePerSecond: number | null;
  clients: number;
  receivers: number;
  receiverIndex: number;
}

/** `section-start`: a section was announced (its warm-up, if any, starts now). */
export interface LiveSectionStartData {
  sectionId: number;
  transport: string;
  label: string;
  baseline: boolean;
  repeat: number;
  /** Recorded images planned; null under DURATION. */
  imageCount: number | null;
  durationMs: number | null;
  imageSizeBytes: number;
  window: number;
  ratePerSecond: number | null;
  /** Under RATE: DEADLINE_MS, the age from its due time past which a frame is late; null in a closed loop. */
  deadlineMs: number | null;
  /** Under RATE: one frame interval (1000 ÷ RATE), ms: a frame older than three is very late; null in a closed loop. */
  intervalMs: number | null;
  clients: number;
  /**
   * Where the two sides run on different kernels (send stamps moved onto the receiver's clock): the bound on each
   * one-way time's clock error at the start, in ms (half the best clock exchange's round trip). Null on one kernel.
   */
  clockOffsetBoundMs: number | null;
}

/**
 * Under RATE: an open-loop section's frames against their deadline and their schedule, so far (in a `second`) or in
 * all (in its `section-end`).
 */
export interface LiveDeadlineData {
  /** DEADLINE_MS. */
  deadlineMs: number;
  /** One frame interval, 1000 ÷ RATE. */
  intervalMs: number;
  /** Intact frames whose age is known (their round trip came). */
  agedFrames: number;
  /** Of them, older than the deadline at arrival. */
  lateCount: number;
  /** Of them, older than three intervals at arrival. */
  veryLateCount: number;
  /** Longest time between two consecutive arrivals; null with fewer than two. */
  longestGapMs: number | null;
  /**
   * Inter-arrival jitter, |gap − interval| over every two consecutive arrivals: mean, sample sd, p99 (null below 100
   * gaps) and max; each null with no gap.
   */
  jitterMeanMs: number | null;
  jitterSdMs: number | null;
  jitterP99Ms: number | null;
  jitterMaxMs: number | null;
}

/** The deadline figures of a section's end: the counts, and the shares of the frames sent. */
export interface LiveDeadlineEndData extends LiveDeadlineData {
  /** DEADLINE_MISS_PERCENT ÷ 100. */
  allowedLateShare: number;
  /** Frames sent: what the shares are of. */
  framesSent: number;
  /** Sent and never delivered intact: they missed the deadline too. */
  undeliveredCount: number;
  /** (late + undelivered) ÷ sent, late ÷ sent, very late ÷ sent; null with none sent. */
  missedShare: number | null;
  lateShare: number | null;
  veryLateShare: number | null;
  /** missedShare over allowedLateShare: the section missed its deadline (its verdict says so). */
  overDeadline: boolean;
}

/** One phase of a section's command lane at its end (commands alone, or beside the images). */
export interface LiveCommandPhaseData {
  sent: number;
  acked: number;
  received: number;
  corrupt: number;
  unacknowledged: number;
  /** Stamp to arrival on the receiver (the clock offset applied across hosts); null without any (p99 below 100). */
  oneWayP50Ms: number | null;
  oneWayP99Ms: number | null;
  oneWayMaxMs: number | null;
  /** Stamp to ack processed, on the transmitter; null without any (p99 below 100). */
  roundTripP50Ms: number | null;
  roundTripP99Ms: number | null;
  /** On one clock, commands stamped as arriving after their ack (any fails the section); null across two clocks. */
  arrivalsAfterAck: number | null;
}

/** A section's command lane (COMMAND_RATE) at its end. */
export interface LiveCommandLaneData {
  ratePerSecond: number;
  sizeBytes: number;
  /**
   * How commands went with the images: `behind` (a frame is written whole, so a command waits behind the image being
   * written), `beside` (its own stream, interleaved); null when the lane did not run.
   */
  lane: 'behind' | 'beside' | null;
  /** Why the lane did not run on this transport; null when it did. */
  notRun: string | null;
  alone: LiveCommandPhaseData;
  beside: LiveCommandPhaseData;
  /** beside's one-way p50 ÷ alone's: how much the image stream slows a typical command; null without both. */
  delayFactorP50: number | null;
}

/** Another process's CPU time per second of wall clock and its resident set, over the span of a `second`. */
export interface ProcessLoad {
  cpuMsPerSecond: number;
  rssBytes: number;
}

/**
 * `second`: one second (or, once aged, several merged: `seconds` > 1) of the open section's measured span, by arrival
 * on the receiver's clock. Rates are over the whole span covered, seconds without arrivals counted as 0; a merged
 * span's p50 and p99 are the largest of its seconds' (percentiles do not merge: an upper bound, never an estimate).
 */
export interface LiveSecondData {
  sectionId: number;
  transport: string;
  label: string;
  repeat: number;
  /** First second covered, since the section's measured span began (from 0). */
  second: number;
  /** Seconds covered: 1, the merged span, or under 1 for a partial second. */
  seconds: number;
  /**
   * The section's last second, cut short by its end (merged: the newest of those merged was): `seconds` is the part of
   * it covered, and its rates are over that part, so the end of a section is never shown as a fall in throughput.
   */
  partial: boolean;
  /** Images that arrived in it, intact or not. */
  images: number;
  /** Bytes of the intact ones. */
  intactBytes: number;
  /** Intact bytes per second covered, in MB/s (10^6 bytes). */
  throughputMBps: number;
  imagesPerSecond: number;
  /**
   * Under RATE, the headline: the age at arrival of each intact frame, counted from its due time, for the frames whose
   * age became known since the previous `second` (with their round trips, so trailing its arrivals by up to a second;
   * merged: summed). 0 and null in a closed loop; p99 null below 100 (merged: the larger).
   */
  frameAges: number;
  frameAgeP50Ms: number | null;
  frameAgeP99Ms: number | null;
  /**
   * One-way times of its intact images (from the stamp taken as each is handed to the link: under RATE, the time on
   * the link); null when it had none (p99 null below 100 times in a second).
   */
  oneWayP50Ms: number | null;
  oneWayP99Ms: number | null;
  /** Under RATE, the section's frames against their deadline so far (merged: the newer's); null in a closed loop. */
  deadline: LiveDeadlineData | null;
  /** Recorded images taken so far in the section, when this was sent (merged: the last one's). */
  recorded: number;
  /** The section's planned count; null under DURATION, where the count is what is sent in the time. */
  imageCount: number | null;
  /** Seconds until the section's last image at this second's rate (DURATION: until its time is up); null unknown. */
  etaSeconds: number | null;
  /** The receiver process's CPU time (user + system) per second of wall clock since the previous `second` event. */
  receiverCpuMsPerSecond: number;
  /** The receiver process's resident set size when this was sent (merged: the largest). */
  receiverRssBytes: number;
  /**
   * Round trips that reached the receiver since the previous `second` event: the transmitter ships them in batches at
   * least once a second, so they trail this second's one-way times by up to a second. 0 with none.
   */
  roundTrips: number;
  /** Their p50 and p99 (merged: the largest); null without any (p99 null below 100). */
  roundTripP50Ms: number | null;
  roundTripP99Ms: number | null;
  /** The transmitter's process, from what it sent with its last round trips; null before any came. */
  transmitter: ProcessLoad | null;
  /** The broker's process (where the transport has one and it can be read), read with this event; null otherwise. */
  broker: ProcessLoad | null;
}

/** `section-end`: the section's verdict as the report records it (this receiver's figures). */
export interface LiveSectionEndData {
  sectionId: number;
  transport: string;
  label: string;
  repeat: number;
  ok: boolean;
  okCount: number;
  lostCount: number;
  corruptCount: number;
  /** Why it failed, as the report says it; null when ok. */
  failure: string | null;
  throughputMBps: number | null;
  imagesPerSecond: number | null;
  totalMs: number | null;
  /** Under RATE, the headline: intact frames' age at arrival, from each one's due time; null in a closed loop. */
  frameAgeP50Ms: number | null;
  frameAgeP99Ms: number | null;
  /** Intact images' one-way time (under RATE, the time on the link); null without any. */
  oneWayP50Ms: number | null;
  oneWayP99Ms: number | null;
  /** The section's round trips (transmitter's clock: no offset in them); null without any. */
  roundTripP50Ms: number | null;
  roundTripP99Ms: number | null;
  /** The final bound on each one-way time's clock error (the offset's and its drift), in ms; null on one kernel. */
  clockOffsetBoundMs: number | null;
  /** Under RATE, its frames against their deadline; null in a closed loop. */
  deadline: LiveDeadlineEndData | null;
  /** Its command lane (COMMAND_RATE); null without one. */
  commands: LiveCommandLaneData | null;
}

/** `run-end`: the run is over; the stream ends after it and a browser should not reconnect. */
export interface LiveRunEndData {
  /** Why it ended early; null when the transmitter finished it. */
  stopReason: string | null;
  succeeded: boolean;
  sections: number;
}

/** Each event's data, by name. */
export interface LiveEventData {
  run: LiveRunData;
  'section-start': LiveSectionStartData;
  second: LiveSecondData;
  'section-end': LiveSectionEndData;
  'run-end': LiveRunEndData;
}

/** `run`'s data from the run's info; `labelOf` gives a transport's display name. */
export function runEventData(info: RunInfo, labelOf: (transport: string) => string): LiveRunData {
  return {
    startedAt: info.startedAt,
    transports: info.transports.map((name) => ({ name, label: labelOf(name) })),
    imageDescription: info.imageDescription,
    imageSizeBytes: info.imageSizeBytes,
    imageCount: info.config.durationMs == null ? info.imageCount : null,
    durationMs: info.config.durationMs ?? null,
    window: info.window,
    warmup: info.warmup,
    repeat: info.repeat,
    ratePerSecond: info.config.ratePerSecond ?? null,
    deadline: info.config.deadline ?? null,
    commandRatePerSecond: info.config.commandRatePerSecond ?? null,
    clients: info.config.clients ?? 1,
    receivers: info.receivers,
    receiverIndex: info.receiverIndex,
  };
}

/** `section-start`'s data from the section's plan. */
export function sectionStartData(plan: SectionPlan): LiveSectionStartData {
  return {
    sectionId: plan.sectionId,
    transport: plan.transport,
    label: plan.label,
    baseline: plan.baseline,
    repeat: plan.repeat,
    imageCount: plan.durationMs == null ? plan.imageCount : null,
    durationMs: plan.durationMs ?? null,
    imageSizeBytes: plan.imageSizeBytes,
    window: plan.window,
    ratePerSecond: plan.ratePerSecond,
    deadlineMs: plan.ratePerSecond === null ? null : deadlineMsOf(plan.ratePerSecond, plan.deadline),
    intervalMs: plan.ratePerSecond === null ? null : 1000 / plan.ratePerSecond,
    clients: plan.clients,
    clockOffsetBoundMs: plan.clock?.applied ? plan.clock.uncertaintyNs / 1e6 : null,
  };
}

/** What the receiver read for one closed second: the recorder's sample and its own state then. */
export interface SecondReading {
  sample: { second: number; images: number; intactBytes: number; times: SecondDistribution | null };
  /** Recorded images taken so far in the section. */
  recorded: number;
  receiverCpuMsPerSecond: number;
  receiverRssBytes: number;
  /** Round trips taken since the previous event (see {@link LiveSecondData.roundTrips}); null with none. */
  roundTrips?: { count: number; times: SecondDistribution } | null;
  /** Frame ages taken since the previous event (see {@link LiveSecondData.frameAges}); null with none. */
  frameAges?: { count: number; times: SecondDistribution } | null;
  /** Under RATE, the recorder's deadline counts so far; null in a closed loop. */
  deadline?: DeadlineCounts | null;
  /** For a section's last second, cut short by its end: the part of it covered ({@link partialSecondSpan}). */
  coveredSeconds?: number;
  transmitter?: ProcessLoad | null;
  broker?: ProcessLoad | null;
}

/** Seconds until a section's end: its remaining images at `imagesPerSecond`, or the rest of its DURATION. */
export function etaSeconds(
  plan: Pick<SectionPlan, 'imageCount' | 'durationMs'>,
  recorded: number,
  elapsedSeconds: number,
  imagesPerSecond: number,
): number | null {
  if (plan.durationMs != null) return Math.max(0, plan.durationMs / 1000 - elapsedSeconds);
  const remaining = Math.max(0, plan.imageCount - recorded);
  if (remaining === 0) return 0;
  return imagesPerSecond > 0 ? remaining / imagesPerSecond : null;
}

/** `second`'s data for one closed second of the section `plan`. */
export function secondEventData(plan: SectionPlan, reading: SecondReading): LiveSecondData {
  const { sample } = reading;
  const partial = reading.coveredSeconds !== undefined && reading.coveredSeconds < 1;
  const seconds = partial ? reading.coveredSeconds! : 1;
  return {
    sectionId: plan.sectionId,
    transport: plan.transport,
    label: plan.label,
    repeat: plan.repeat,
    second: sample.second,
    seconds,
    partial,
    images: sample.images,
    intactBytes: sample.intactBytes,
    throughputMBps: sample.intactBytes / 1e6 / seconds,
    imagesPerSecond: sample.images / seconds,
    frameAges: reading.frameAges?.count ?? 0,
    frameAgeP50Ms: reading.frameAges?.times.p50Ms ?? null,
    frameAgeP99Ms: reading.frameAges?.times.p99Ms ?? null,
    oneWayP50Ms: sample.times?.p50Ms ?? null,
    oneWayP99Ms: sample.times?.p99Ms ?? null,
    deadline:
      plan.ratePerSecond === null || reading.deadline == null
        ? null
        : deadlineData(plan.ratePerSecond, plan.deadline, reading.deadline),
    recorded: reading.recorded,
    imageCount: plan.durationMs == null ? plan.imageCount : null,
    // The second's end is how far into the span it is.
    etaSeconds: etaSeconds(plan, reading.recorded, sample.second + seconds, sample.images / seconds),
    receiverCpuMsPerSecond: reading.receiverCpuMsPerSecond,
    receiverRssBytes: reading.receiverRssBytes,
    roundTrips: reading.roundTrips?.count ?? 0,
    roundTripP50Ms: reading.roundTrips?.times.p50Ms ?? null,
    roundTripP99Ms: reading.roundTrips?.times.p99Ms ?? null,
    transmitter: reading.transmitter ?? null,
    broker: reading.broker ?? null,
  };
}

/**
 * The part of a section's last second its images covered, in seconds (at most 1): from the second's start to the last
 * arrival, and at least as long as its images took at the section's mean gap between arrivals (so a second holding one
 * image that came just after the second began is not read as a burst). `lastArrivalMs` is the last arrival since the
 * measured span began; `recordedImages` every image of the section. 1 when nothing says otherwise.
 */
export function partialSecondSpan(
  second: number,
  images: number,
  lastArrivalMs: number | null,
  recordedImages: number,
): number {
  if (lastArrivalMs === null || !(lastArrivalMs > 0) || recordedImages <= 0) return 1;
  const toLastArrival = lastArrivalMs / 1000 - second;
  const atMeanGap = (images * lastArrivalMs) / 1000 / recordedImages;
  const covered = Math.min(1, Math.max(toLastArrival, atMeanGap));
  return covered > 0 ? covered : 1;
}

/** DEADLINE_MS of an open-loop section: as planned, or one frame interval (files and plans from before deadlines). */
function deadlineMsOf(ratePerSecond: number, deadline: SectionPlan['deadline']): number {
  return deadline?.deadlineMs ?? 1000 / ratePerSecond;
}

/** An open-loop section's deadline figures, from its recorder's counts. */
export function deadlineData(
  ratePerSecond: number,
  deadline: SectionPlan['deadline'],
  counts: DeadlineCounts,
): LiveDeadlineData {
  return {
    deadlineMs: deadlineMsOf(ratePerSecond, deadline),
    intervalMs: 1000 / ratePerSecond,
    agedFrames: counts.agedFrames,
    lateCount: counts.lateCount,
    veryLateCount: counts.veryLateCount,
    longestGapMs: counts.longestGapMs,
    jitterMeanMs: counts.jitter?.meanMs ?? null,
    jitterSdMs: counts.jitter?.stdDevMs ?? null,
    jitterP99Ms: counts.jitter?.p99Ms ?? null,
    jitterMaxMs: counts.jitter?.maxMs ?? null,
  };
}

/** A section's deadline figures at its end, from its result's. */
export function deadlineEndData(figures: DeadlineFigures): LiveDeadlineEndData {
  return {
    deadlineMs: figures.deadlineMs,
    intervalMs: figures.intervalMs,
    agedFrames: figures.agedFrames,
    lateCount: figures.lateCount,
    veryLateCount: figures.veryLateCount,
    longestGapMs: figures.longestGapMs,
    jitterMeanMs: figures.jitter?.meanMs ?? null,
    jitterSdMs: figures.jitter?.stdDevMs ?? null,
    jitterP99Ms: figures.jitter?.p99Ms ?? null,
    jitterMaxMs: figures.jitter?.maxMs ?? null,
    allowedLateShare: figures.allowedLateShare,
    framesSent: figures.framesSent,
    undeliveredCount: figures.undeliveredCount,
    missedShare: figures.missedShare,
    lateShare: figures.lateShare,
    veryLateShare: figures.veryLateShare,
    overDeadline: figures.overDeadline,
  };
}

function commandPhaseData(phase: CommandPhaseResult): LiveCommandPhaseData {
  return {
    sent: phase.sent,
    acked: phase.acked,
    received: phase.received,
    corrupt: phase.corrupt,
    unacknowledged: phase.unacknowledged,
    oneWayP50Ms: phase.oneWay?.p50Ms ?? null,
    oneWayP99Ms: phase.oneWay?.p99Ms ?? null,
    oneWayMaxMs: phase.oneWay?.maxMs ?? null,
    roundTripP50Ms: phase.rtt?.p50Ms ?? null,
    roundTripP99Ms: phase.rtt?.p99Ms ?? null,
    arrivalsAfterAck: phase.arrivalsAfterAck ?? null,
  };
}

/** A section's command lane as `section-end` gives it. */
export function commandLaneData(lane: CommandLaneResult): LiveCommandLaneData {
  return {
    ratePerSecond: lane.ratePerSecond,
    sizeBytes: lane.sizeBytes,
    lane: lane.interleaves === null ? null : lane.interleaves ? 'beside' : 'behind',
    notRun: lane.notRun,
    alone: commandPhaseData(lane.alone),
    beside: commandPhaseData(lane.beside),
    delayFactorP50: lane.delayFactorP50,
  };
}

/** The larger of two figures that may be missing. */
function maxOf(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.max(a, b);
}

/** Two loads over spans of `olderSeconds` and `newerSeconds` as one: CPU weighted by span, RSS the larger. */
function mergeLoads(
  older: ProcessLoad | null,
  olderSeconds: number,
  newer: ProcessLoad | null,
  newerSeconds: number,
): ProcessLoad | null {
  if (older === null || newer === null) return newer ?? older;
  return {
    cpuMsPerSecond:
      (older.cpuMsPerSecond * olderSeconds + newer.cpuMsPerSecond * newerSeconds) / (olderSeconds + newerSeconds),
    rssBytes: Math.max(older.rssBytes, newer.rssBytes),
  };
}

/**
 * Two consecutive `second`s of one section (`older` first) as one over the span from the first's start to the second's
 * end: counts summed, rates over that span (seconds between them without arrivals count as 0), p50 and p99 the larger
 * (an upper bound), CPU per second averaged by the seconds each covered, RSS the larger, progress, deadline counts
 * and partiality the newer's.
 */
export function mergeSeconds(older: LiveSecondData, newer: LiveSecondData): LiveSecondData {
  const seconds = newer.second + newer.seconds - older.second;
  const images = older.images + newer.images;
  const intactBytes = older.intactBytes + newer.intactBytes;
  return {
    ...newer,
    second: older.second,
    seconds,
    images,
    intactBytes,
    throughputMBps: intactBytes / 1e6 / seconds,
    imagesPerSecond: images / seconds,
    frameAges: older.frameAges + newer.frameAges,
    frameAgeP50Ms: maxOf(older.frameAgeP50Ms, newer.frameAgeP50Ms),
    frameAgeP99Ms: maxOf(older.frameAgeP99Ms, newer.frameAgeP99Ms),
    oneWayP50Ms: maxOf(older.oneWayP50Ms, newer.oneWayP50Ms),
    oneWayP99Ms: maxOf(older.oneWayP99Ms, newer.oneWayP99Ms),
    receiverCpuMsPerSecond:
      (older.receiverCpuMsPerSecond * older.seconds + newer.receiverCpuMsPerSecond * newer.seconds) /
      (older.seconds + newer.seconds),
    receiverRssBytes: Math.max(older.receiverRssBytes, newer.receiverRssBytes),
    roundTrips: older.roundTrips + newer.roundTrips,
    roundTripP50Ms: maxOf(older.roundTripP50Ms, newer.roundTripP50Ms),
    roundTripP99Ms: maxOf(older.roundTripP99Ms, newer.roundTripP99Ms),
    transmitter: mergeLoads(older.transmitter, older.seconds, newer.transmitter, newer.seconds),
    broker: mergeLoads(older.broker, older.seconds, newer.broker, newer.seconds),
  };
}

/** `section-end`'s data from the section's result. */
export function sectionEndData(result: SectionResult): LiveSectionEndData {
  return {
    sectionId: result.sectionId,
    transport: result.transport,
    label: result.label,
    repeat: result.repeat,
    ok: result.ok,
    okCount: result.okCount,
    lostCount: result.lostCount,
    corruptCount: result.corruptCount,
    failure: result.failure,
    throughputMBps: result.throughputMBps,
    imagesPerSecond: result.imagesPerSecond,
    totalMs: result.totalMs,
    frameAgeP50Ms: result.frameAge?.p50Ms ?? null,
    frameAgeP99Ms: result.frameAge?.p99Ms ?? null,
    oneWayP50Ms: result.latency?.p50Ms ?? null,
    oneWayP99Ms: result.latency?.p99Ms ?? null,
    roundTripP50Ms: result.rtt?.p50Ms ?? null,
    roundTripP99Ms: result.rtt?.p99Ms ?? null,
    clockOffsetBoundMs: result.oneWayClockErrorMs ?? null,
    deadline: result.openLoop?.deadline == null ? null : deadlineEndData(result.openLoop.deadline),
    commands: result.commands === undefined ? null : commandLaneData(result.commands),
  };
}

/** `run-end`'s data from the run's report. */
export function runEndData(report: Pick<RunReport, 'sections' | 'stopReason'>): LiveRunEndData {
  return { stopReason: report.stopReason, succeeded: runSucceeded(report), sections: report.sections.length };
}
