import type { CommandLaneResult, CommandPhaseResult } from '../model/command-lane.js';
import type { DeadlineCounts, DeadlineFigures, SectionPlan, SectionResult } from '../model/section.js';
import type { SecondDistribution } from '../model/series.js';
import type { RunInfo, RunReport } from '../report/report.js';
import { runSucceeded } from '../report/report.js';
import type {
  LiveCommandLaneData,
  LiveCommandPhaseData,
  LiveDeadlineData,
  LiveDeadlineEndData,
  LiveRunData,
  LiveRunEndData,
  LiveSecondData,
  LiveSectionEndData,
  LiveSectionStartData,
  ProcessLoad,
} from './live-event-types.js';

// What GET /events says about a run, as plain data: the run's settings, each section's start, one
// aggregate per second of its measured span, its verdict, the run's end. Built from what the
// receiver already has at its transitions and from the recorder's closed seconds (read once a
// second, never per image). Pure: the receiver gives it the readings it makes. The events' types are in
// live-event-types.ts, importable from here too.

export * from './live-event-types.js';

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
