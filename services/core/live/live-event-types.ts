import type { WarmupPlan } from '../model/warmup.js';

// The data of each event GET /events sends, as plain types: what a browser reads of a run. live-events.ts builds them
// from the receiver's readings and re-exports them.

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
