import type { CommandPhase } from '../wire/frame.js';
import type { CommandArrivals } from './command-lane.js';
import type { SectionRecorder, TimesSoFar } from './recorder.js';
import type { SectionResult } from './section.js';
import { countsAtOrBelowNs, type LatencySummary } from './stats.js';

// The receiver's figures for GET /metrics: every section's recorded images (and, under RATE, its
// frames against their deadline; with COMMAND_RATE, its commands) since the process started, by
// transport, read when scraped. Nothing here runs per image: a finished section adds its result
// once (with the histograms read as its record became final), and the open section is read from
// its recorder at each scrape. Pure.

/**
 * Upper bounds of the time histograms' buckets in seconds: 1, 2.5 and 5 per decade from 10 µs to 10 s (loopback
 * images take tens of µs; prom-client's default buckets start at 5 ms).
 */
export const TIME_BUCKET_BOUNDS_SECONDS: readonly number[] = [
  0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
  5, 10,
];

const TIME_BUCKET_BOUNDS_NS = TIME_BUCKET_BOUNDS_SECONDS.map((seconds) => Math.round(seconds * 1e9));

/** What became of a recorded image: arrived intact, arrived corrupt (or unverified), or never arrived. */
export const VERDICTS = ['intact', 'corrupt', 'lost'] as const;
/** One of {@link VERDICTS}. */
export type Verdict = (typeof VERDICTS)[number];

/** The command lane's phases: with no image in flight, then beside the images. */
export const COMMAND_PHASES = ['alone', 'beside'] as const satisfies readonly CommandPhase[];

/** What a command that arrived was: intact, or corrupt (its checksum failed). */
export const COMMAND_VERDICTS = ['intact', 'corrupt'] as const;

/** A distribution of times as a Prometheus histogram holds it. */
export interface TimeBuckets {
  count: number;
  sumSeconds: number;
  /** Times at or below each of {@link TIME_BUCKET_BOUNDS_SECONDS}, in its order. */
  atOrBelow: number[];
}

/** One transport's recorded images (one section's, or all since the process started) for the metrics. */
export interface TransportFigures {
  transport: string;
  images: Record<Verdict, number>;
  /** Images × the section's image size: a corrupt image counts at the size it should have had. */
  bytes: Record<Verdict, number>;
  /** One-way times of the intact images. */
  oneWay: TimeBuckets;
  /** Round trips of the images whose arrival and round trip both reached the record. */
  roundTrip: TimeBuckets;
  /** Some section of this transport ran under RATE: the open-loop figures below are shown only then. */
  openLoop: boolean;
  /** Under RATE: intact frames' age at arrival, from each one's due time. */
  frameAge: TimeBuckets;
  /** Under RATE: |gap − interval| between consecutive arrivals. */
  jitter: TimeBuckets;
  /** Under RATE: intact frames older than DEADLINE_MS at arrival, and older than three frame intervals. */
  lateCount: number;
  veryLateCount: number;
  /** The longest gap between two arrivals of this transport's latest open-loop section (the open one's so far), s. */
  longestGapSeconds: number | null;
  /** Some section of this transport carried a command lane (COMMAND_RATE): the figures below are shown only then. */
  commandLane: boolean;
  commands: Record<CommandPhase, CommandFigures>;
}

/** One phase of a transport's command lane. */
export interface CommandFigures {
  /** The transmitter's counts, known when the section ends. */
  sent: number;
  acked: number;
  /** Arrived here, by checksum verdict, as they came. */
  received: Record<(typeof COMMAND_VERDICTS)[number], number>;
  /** Stamp to arrival here. */
  oneWay: TimeBuckets;
  /** Stamp to ack processed on the transmitter, as its batches brought them. */
  roundTrip: TimeBuckets;
}

/** A section's figures, and what tells its reading apart from another section's (its recorder). */
export interface KeyedFigures {
  key: object;
  figures: TransportFigures;
}

function noTimes(): TimeBuckets {
  return { count: 0, sumSeconds: 0, atOrBelow: TIME_BUCKET_BOUNDS_NS.map(() => 0) };
}

function byVerdict(count: (verdict: Verdict) => number): Record<Verdict, number> {
  return { intact: count('intact'), corrupt: count('corrupt'), lost: count('lost') };
}

function noCommands(): CommandFigures {
  return { sent: 0, acked: 0, received: { intact: 0, corrupt: 0 }, oneWay: noTimes(), roundTrip: noTimes() };
}

/** A transport's figures before any image: every count 0. */
export function noFigures(transport: string): TransportFigures {
  return {
    transport,
    images: byVerdict(() => 0),
    bytes: byVerdict(() => 0),
    oneWay: noTimes(),
    roundTrip: noTimes(),
    openLoop: false,
    frameAge: noTimes(),
    jitter: noTimes(),
    lateCount: 0,
    veryLateCount: 0,
    longestGapSeconds: null,
    commandLane: false,
    commands: { alone: noCommands(), beside: noCommands() },
  };
}

// Times read so far (a recorder's), as a histogram holds them.
function timesSoFar(t: TimesSoFar): TimeBuckets {
  return { count: t.count, sumSeconds: t.sumMs / 1e3, atOrBelow: t.atOrBelow };
}

// A finished section's times from its summary (count and exact mean) and its histogram.
function timesOf(summary: LatencySummary | null, encodedNs: string | null): TimeBuckets {
  if (summary === null || summary.count === 0) return noTimes();
  return {
    count: summary.count,
    sumSeconds: (summary.count * summary.meanMs) / 1e3,
    atOrBelow: countsAtOrBelowNs(encodedNs, TIME_BUCKET_BOUNDS_NS),
  };
}

/**
 * A finished section's figures, from its result as this receiver recorded it; `final` is its figures read as its
 * record became final ({@link recordingFigures}), for the histograms a result keeps as summaries only (frame age,
 * jitter, commands): without it they count nothing.
 */
export function resultFigures(result: SectionResult, final?: TransportFigures): TransportFigures {
  const images = { intact: result.okCount, corrupt: result.corruptCount, lost: result.lostCount };
  const deadline = result.openLoop?.deadline ?? null;
  const lane = result.commands;
  const commands = (phase: CommandPhase): CommandFigures => {
    const figures = lane?.[phase];
    if (figures === undefined) return noCommands();
    return {
      sent: figures.sent,
      acked: figures.acked,
      received: { intact: figures.received - figures.corrupt, corrupt: figures.corrupt },
      oneWay: final?.commands[phase].oneWay ?? noTimes(),
      roundTrip: final?.commands[phase].roundTrip ?? noTimes(),
    };
  };
  return {
    transport: result.transport,
    images,
    bytes: byVerdict((verdict) => images[verdict] * result.imageSizeBytes),
    oneWay: timesOf(result.latency, result.histograms.oneWayNs),
    roundTrip: timesOf(result.rtt, result.histograms.rttNs),
    openLoop: result.ratePerSecond !== null,
    frameAge: final?.frameAge ?? noTimes(),
    jitter: final?.jitter ?? noTimes(),
    lateCount: deadline?.lateCount ?? 0,
    veryLateCount: deadline?.veryLateCount ?? 0,
    longestGapSeconds: deadline?.longestGapMs == null ? null : deadline.longestGapMs / 1e3,
    commandLane: lane !== undefined,
    commands: { alone: commands('alone'), beside: commands('beside') },
  };
}

/**
 * An open section's figures so far, read from its recorder and its command arrivals: the same figures its result will
 * hold, bar the images still awaiting a verdict and the lost ones, and the commands sent and acknowledged (the
 * transmitter's), known only at its end.
 */
export function recordingFigures(recorder: SectionRecorder, commandArrivals?: CommandArrivals): TransportFigures {
  const soFar = recorder.recordSoFar(TIME_BUCKET_BOUNDS_NS);
  const images = { intact: soFar.okCount, corrupt: soFar.corruptCount, lost: 0 };
  const arrived = commandArrivals?.soFar(TIME_BUCKET_BOUNDS_NS);
  const commands = (phase: CommandPhase): CommandFigures => {
    const figures = arrived?.[phase];
    if (figures === undefined) return noCommands();
    return {
      sent: 0,
      acked: 0,
      received: { intact: figures.received - figures.corrupt, corrupt: figures.corrupt },
      oneWay: timesSoFar(figures.oneWay),
      roundTrip: timesSoFar(figures.roundTrip),
    };
  };
  return {
    transport: recorder.plan.transport,
    images,
    bytes: byVerdict((verdict) => images[verdict] * recorder.plan.imageSizeBytes),
    oneWay: timesSoFar(soFar.oneWay),
    roundTrip: timesSoFar(soFar.roundTrip),
    openLoop: recorder.plan.ratePerSecond !== null,
    frameAge: timesSoFar(soFar.frameAge),
    jitter: timesSoFar(soFar.jitter),
    lateCount: soFar.deadline?.lateCount ?? 0,
    veryLateCount: soFar.deadline?.veryLateCount ?? 0,
    longestGapSeconds: soFar.deadline?.longestGapMs == null ? null : soFar.deadline.longestGapMs / 1e3,
    // Known from the arrivals only: whether the transmitter runs a lane is said with the section's end.
    commandLane: arrived !== undefined && arrived.alone.received + arrived.beside.received > 0,
    commands: { alone: commands('alone'), beside: commands('beside') },
  };
}

function addTimes(into: TimeBuckets, from: TimeBuckets): void {
  into.count += from.count;
  into.sumSeconds += from.sumSeconds;
  for (const [index, count] of from.atOrBelow.entries()) into.atOrBelow[index]! += count;
}

function addCommands(into: CommandFigures, from: CommandFigures): void {
  into.sent += from.sent;
  into.acked += from.acked;
  for (const verdict of COMMAND_VERDICTS) into.received[verdict] += from.received[verdict];
  addTimes(into.oneWay, from.oneWay);
  addTimes(into.roundTrip, from.roundTrip);
}

// Counts and histograms add up; the longest gap is the latest section's that has one.
function addFigures(into: TransportFigures, from: TransportFigures): void {
  for (const verdict of VERDICTS) {
    into.images[verdict] += from.images[verdict];
    into.bytes[verdict] += from.bytes[verdict];
  }
  addTimes(into.oneWay, from.oneWay);
  addTimes(into.roundTrip, from.roundTrip);
  into.openLoop ||= from.openLoop;
  addTimes(into.frameAge, from.frameAge);
  addTimes(into.jitter, from.jitter);
  into.lateCount += from.lateCount;
  into.veryLateCount += from.veryLateCount;
  into.longestGapSeconds = from.longestGapSeconds ?? into.longestGapSeconds;
  into.commandLane ||= from.commandLane;
  for (const phase of COMMAND_PHASES) addCommands(into.commands[phase], from.commands[phase]);
}

function copyOf(figures: TransportFigures): TransportFigures {
  const copy = noFigures(figures.transport);
  addFigures(copy, figures);
  return copy;
}

/**
 * Every recorded image since the process started, by transport, so the counters never go back: a
 * finished section's result is added once at its end, and the open section's figures so far are
 * added at each reading. A section that closed without a result (a run ended over it) keeps the
 * figures it had at the last reading.
 */
export class MetricTotals {
  private readonly finished = new Map<string, TransportFigures>();
  private lastOpen: KeyedFigures | undefined;

  /** `transports` are listed from the start, at 0, in this order; others join as their sections come. */
  constructor(transports: readonly string[]) {
    for (const transport of transports) this.finished.set(transport, noFigures(transport));
  }

  /** The section of `key` ended with these figures (its result's): they join the totals for good. */
  sectionEnded(key: object, figures: TransportFigures): void {
    this.totalOf(figures.transport, (total) => addFigures(total, figures));
    if (this.lastOpen?.key === key) this.lastOpen = undefined;
  }

  /** The totals by transport, `open` (the section recording now, if any) included. */
  read(open: KeyedFigures | undefined): TransportFigures[] {
    // A section read before that is neither open now nor ended: what it had then stays counted.
    if (this.lastOpen !== undefined && this.lastOpen.key !== open?.key)
      this.sectionEnded(this.lastOpen.key, this.lastOpen.figures);
    this.lastOpen = open;
    if (open !== undefined) this.totalOf(open.figures.transport, () => {});
    return [...this.finished.values()].map((total) => {
      const copy = copyOf(total);
      if (open?.figures.transport === total.transport) addFigures(copy, open.figures);
      return copy;
    });
  }

  private totalOf(transport: string, change: (total: TransportFigures) => void): void {
    let total = this.finished.get(transport);
    if (total === undefined) {
      total = noFigures(transport);
      this.finished.set(transport, total);
    }
    change(total);
  }
}
