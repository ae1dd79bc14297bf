// The control protocol between transmitter and receiver: JSON over HTTP on CONTROL_PORT. Both
// services use these types and schemas and meet only over the wire. Bodies are checked against
// the schemas (control-schemas.ts; fastify validates them, without type coercion), and kept small.

import type { SideCost } from '../model/cost.js';
import type { TransmitterCommands } from '../model/command-lane.js';
import type { HostFacts, RunInfo, RunReport } from '../report/report.js';
import type { ClockOffset } from '../model/clock.js';
import type { ClientFigures, TransmitterColdStart } from '../model/section.js';
import type { SecondDistribution } from '../model/series.js';
import type { LatencySummary } from '../model/stats.js';
import { MAX_SECTION_SECONDS } from './control-schemas.js';

// The bodies' schemas, beside the types they check, for the receiver's routes.
export {
  fanOutSchema,
  runInfoSchema,
  sectionEndSchema,
  sectionPlanSchema,
  warmupOutcomeSchema,
} from './control-schemas.js';

/** Largest control request body, in bytes: the protocol's messages are a few kilobytes. */
export const CONTROL_BODY_LIMIT_BYTES = 64 * 1024;

/** How many connections an HTTP server keeps at once, and how long one may take to say what it wants. */
export interface ConnectionLimits {
  /**
   * Connections kept at once that have not sent a whole request head (just opened, or idle
   * between requests): one more closes one of them (an idle one first, else the oldest), so a flood
   * of silent or slow-header connections cannot crowd out a real request, which sends its head at once.
   */
  waitingConnections: number;
  /**
   * Connections kept at once in all, but for the trusted ones below. One more closes another to make room: one idle
   * after its requests first, else the oldest with a request under way, else the oldest new one.
   */
  maxConnections: number;
  /**
   * Connections kept besides maxConnections for those that showed AUTH_TOKEN (on a server that can tell): such a
   * connection is never closed to make room, nor counted among the waiting ones. 0: none told apart.
   */
  trustedConnections: number;
  /** How long a connection may wait before its request head is whole; then it is closed. */
  headersTimeoutMs: number;
  /**
   * How long an idle keep-alive connection stays open (node's keepAliveTimeout, hinted to clients); under
   * headersTimeoutMs, so node closes it first.
   */
  keepAliveTimeoutMs: number;
  /** How long one request may take to arrive whole, body included (node's requestTimeout). */
  requestTimeoutMs: number;
}

/**
 * The control port's limits. 32 waiting connections: a transmitter holds two or three at once
 * (its requests, its clock's keep-alive connection, a soak's sampler) and a browser a few more;
 * each holds at most node's 16 KiB of request head, 512 KiB in all. 128 in all bounds the file
 * descriptors and bodies of connections with a request under way; 16 more for the transmitter (its
 * client keeps up to 4 alive, and a restarted one's come before the old ones time out). 5 s for a
 * request head, which an honest client sends in one write, even across hosts on a loaded machine. 10 min for a whole
 * request: only AUTH_TOKEN's holder gets its body read, and the largest (a week-long section's
 * end, SECTION_END_BODY_LIMIT_BYTES) arrives within it over 1.5 Mbit/s.
 */
export const CONTROL_CONNECTION_LIMITS: Readonly<ConnectionLimits> = Object.freeze({
  waitingConnections: 32,
  maxConnections: 128,
  trustedConnections: 16,
  headersTimeoutMs: 5000,
  keepAliveTimeoutMs: 4000,
  requestTimeoutMs: 600_000,
});

/**
 * Numbers in one round-trip record of POST /sections/:id/round-trips: image (from 1), round trip in ns, stamp − due in
 * ns (NaN: none), as float64 little-endian.
 */
export const ROUND_TRIP_RECORD_VALUES = 3;
/** Records in one full batch of round trips (1.5 MiB): a batch also goes when a second old. */
export const ROUND_TRIPS_PER_BATCH = 65_536;
/** Largest body of POST /sections/:id/round-trips. */
export const ROUND_TRIPS_BODY_LIMIT_BYTES = ROUND_TRIPS_PER_BATCH * ROUND_TRIP_RECORD_VALUES * 8;
/**
 * Largest body of POST /sections/:id/end, which carries the round trips' per-second series: a few dozen bytes a second.
 */
export const SECTION_END_BODY_LIMIT_BYTES = CONTROL_BODY_LIMIT_BYTES + MAX_SECTION_SECONDS * 160;

/** POST /runs: what the transmitter announces at the start of a run (the receiver adds its own host). */
export type RunAnnouncement = Omit<RunInfo, 'hosts'> & { hosts: Pick<RunInfo['hosts'], 'transmitter'> };

/** POST /sections/:id/end: how the section ended on the transmitter's side. */
export interface SectionEnd {
  failure: string | null;
  transmitterCost: SideCost | null;
  /**
   * Recorded images stamped and handed to the transport: the section's image count under DURATION, and fewer than
   * planned when it failed.
   */
  imagesSent: number;
  /**
   * Round-trip records posted to this receiver before this end (POST /sections/:id/round-trips): it checks that every
   * one came.
   */
  roundTripsShipped: number;
  /**
   * Under RATE: stamp − due of the recorded images sent, and their round trips counted from due; null in a closed loop.
   */
  sendLag: LatencySummary | null;
  rttFromDue: LatencySummary | null;
  /**
   * Mean recorded images in flight (Little's law: round trips summed ÷ first stamp to last ack, the transmitter's
   * clock); null without a span.
   */
  meanInFlight: number | null;
  /** Round trips (to every receiver's ack) by the second since the first recorded stamp their ack was processed in. */
  rttSeconds: { second: number; rtt: SecondDistribution | null }[];
  /** Under RATE: images per second actually sent; null in a closed loop or with fewer than two sends. */
  achievedRatePerSecond: number | null;
  /** CLIENTS > 1: each client's acknowledged recorded images and its rate, by client; null with one client. */
  clientFigures: ClientFigures[] | null;
  /** The connection's connect time and first round trip. */
  coldStart: TransmitterColdStart;
  /** The clock offset estimated again after the last ack (drift since the section's start); null when it was not. */
  clockAfter: ClockOffset | null;
  /** COMMAND_RATE's lane: what the transmitter sent and its round trips; null without a lane. */
  commands: TransmitterCommands | null;
}

/** The end of a section that failed before the transmitter had figures: only the reason. */
export function failedSectionEnd(failure: string): SectionEnd {
  return {
    failure,
    transmitterCost: null,
    imagesSent: 0,
    roundTripsShipped: 0,
    sendLag: null,
    rttFromDue: null,
    meanInFlight: null,
    rttSeconds: [],
    achievedRatePerSecond: null,
    clientFigures: null,
    coldStart: { connectMs: null, firstImageRttMs: null },
    clockAfter: null,
    commands: null,
  };
}

/**
 * POST /runs/finish's answer: the run's summary and where its files went, never the whole report (a long run's would be
 * large).
 */
export interface RunFinish {
  summary: string;
  succeeded: boolean;
  /** The run's folder on the receiver, relative to its OUTPUT_DIR (runs/<start time>-<id>). */
  runFolder: string;
  /**
   * Set when the receiver could not write the run's files: the file and the system's reason; OUTPUT_DIR's links stay on
   * the previous run.
   */
  filesNotWritten?: string;
}

/** What a transmitter's run ends with: the receiver's summary, and the report of the sections' results it got back. */
export interface RunOutcome {
  report: RunReport;
  summary: string;
  succeeded: boolean;
  /** The run's folder on the receiver, relative to its OUTPUT_DIR; absent when the receiver went away. */
  runFolder?: string;
  /**
   * Set when the receiver went away mid-run: the report is the transmitter's own. The receiver's folder for the run
   * keeps what it wrote (see receiverLostVerdict), and the next receiver on its OUTPUT_DIR ends it.
   */
  receiverLost?: string;
  /**
   * Set when the receiver could not write the run's output files: the file and the system's
   * reason ("could not write /x/output.log: ENOSPC: no space left on device"). The report is
   * whole but only here; OUTPUT_DIR's links stay on the previous run, and the run fails.
   */
  filesNotWritten?: string;
}

/** State of one transport's listener, as GET /health reports it. */
export interface ListenerStatus {
  ready: boolean;
  port: number;
  error: string | null;
  /**
   * A listener that is down and will be tried again (its broker may come up); false when ready, or when a setting is
   * missing and no retry can help.
   */
  retrying: boolean;
}

/**
 * GET /health's answer: HTTP 200 when the receiver is ready, 503 (with this body) while it starts, so that a probe that
 * reads only the status (compose's healthcheck, Kubernetes' readiness) means "ready".
 */
export interface HealthResponse {
  /**
   * `starting`: the control port is open but the receiver still waits for `waitingFor`; `ready`: every listener has
   * made its first attempt (some may be down and retrying) and no run its receiver died in is left unended.
   */
  status: 'starting' | 'ready';
  /** What a starting receiver waits for; both empty once it is ready. */
  waitingFor: {
    /** The transports whose listener is on its first attempt (reported not ready and retrying meanwhile). */
    listeners: string[];
    /** True while it ends the runs a receiver died in, found in OUTPUT_DIR at start. */
    abandonedRuns: boolean;
  };
  listeners: Record<string, ListenerStatus>;
  host: HostFacts;
  /**
   * Since the receiver started: input the transports dropped, well-formed frames it refused, data
   * connections refused (no or a wrong credential, over a cap, fell silent), and control requests
   * refused for want of AUTH_TOKEN.
   */
  counters: { rejectedInputs: number; rejectedFrames: number; refusedConnections: number; refusedRequests: number };
}

/**
 * GET /progress's answer: where the run stands, counted over the whole run (every transport and repeat); no secret in
 * it.
 */
export interface ProgressResponse {
  inProgress: boolean;
  /** The open section's transport; null between sections and runs. */
  transport: string | null;
  /**
   * Recorded images that arrived so far in the run (warm-up left out); between runs, the last run's total (0 before
   * any).
   */
  recorded: number;
  /**
   * Recorded images the run plans: IMAGE_COUNT × REPEAT × transports (under DURATION, with no count to plan, what the
   * ended sections sent plus the open one's recorded so far); between runs, the last run's (0 before any).
   */
  imageCount: number;
}

/** Header of GET /clock's answer: the receiver's monotonic clock, in decimal nanoseconds. */
export const CLOCK_HEADER = 'x-receiver-clock-ns';

/**
 * Header of every control POST: the same value on each try of one request, another for each request, so that the
 * receiver acts on a request once however often it is sent (its answer to a try it already took is that try's).
 */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
