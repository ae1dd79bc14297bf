import { commandOf, type CommandPhase, type FrameHeader } from '../wire/frame.js';
import type { SectionClock } from './clock.js';
import { LatencyRecorder, type LatencySummary, type TimesSoFar } from './stats.js';
export {
  aloneCommandCount,
  DEFAULT_COMMAND_BYTES,
  MAX_COMMAND_BYTES,
  MAX_COMMAND_RATE_PER_SECOND,
} from './command-rules.js';

// The command lane (COMMAND_RATE): small frames sent at a fixed rate on the same link as a section's images, each
// acknowledged like an image, timed like one and reported apart. They are sent twice over: first with no image in
// flight (alone), then while the section's recorded images flow (beside), so the report shows what an image stream
// does to a command on each transport. They never count as images: not in MB/s, images/s, lost or the image record.
// Pure: arrivals, verdicts and the transmitter's figures are given to it.

/** How a transport carries commands beside its images, as the reports say it. */
export type CommandLaneTrait =
  | {
      /**
       * True when a command can pass an image part-way through its write (its own HTTP/2 stream); false when each
       * frame is written whole, so a command waits behind the image being written and any queued before it.
       */
      interleaves: boolean;
      /** How the commands travel, in a few words ("between images on the one TCP stream"). */
      how: string;
    }
  | {
      /** Why this transport cannot carry the lane; its sections run without commands and say so. */
      unavailable: string;
    };

/** The transmitter's figures for one phase: what it sent and the round trips of what came back. */
export interface TransmitterCommandPhase {
  sent: number;
  acked: number;
  /** Stamp to the ack's processing, transmitter's clock. */
  rtt: LatencySummary | null;
  /** Send time − due time (the lane's own lateness: a timer, a busy event loop); none is in the times above. */
  sendLag: LatencySummary | null;
}

/** The transmitter's side of a section's command lane, sent with the section's end. */
export interface TransmitterCommands {
  ratePerSecond: number;
  sizeBytes: number;
  /** Set when the lane did not run on this transport, and why; the phases are then empty. */
  notRun: string | null;
  alone: TransmitterCommandPhase;
  beside: TransmitterCommandPhase;
}

/** One phase of a section's command lane, both sides joined. */
export interface CommandPhaseResult extends TransmitterCommandPhase {
  /** Commands the receiver took (intact or not). */
  received: number;
  /** Commands whose bytes failed their checksum. */
  corrupt: number;
  /** Sent and never acknowledged: lost, or later than the lane's wait. */
  unacknowledged: number;
  /** Stamp to the receiver's arrival stamp, on the receiver's clock (the section's clock offset applied). */
  oneWay: LatencySummary | null;
  /** Commands whose one-way time was paired with their round trip (both known); absent in older files. */
  paired?: number;
  /**
   * On one clock, paired commands whose one-way time exceeds their round trip: stamped as arriving after their ack
   * was processed, which only a late arrival stamp can produce; any fails the section. Null across two clocks;
   * absent in older files.
   */
  arrivalsAfterAck?: number | null;
}

/** A section's command lane in its result: how the transport carried it, and each phase. */
export interface CommandLaneResult {
  ratePerSecond: number;
  sizeBytes: number;
  /** How the transport carries commands; null when the lane did not run. */
  how: string | null;
  interleaves: boolean | null;
  notRun: string | null;
  alone: CommandPhaseResult;
  beside: CommandPhaseResult;
  /** beside's one-way p50 ÷ alone's: how much the image stream slows a typical command; null without both. */
  delayFactorP50: number | null;
}

/** A phase with nothing in it. */
export function emptyTransmitterPhase(): TransmitterCommandPhase {
  return { sent: 0, acked: 0, rtt: null, sendLag: null };
}

/** The receiver's record of one phase's commands. */
class PhaseArrivals {
  readonly oneWay = new LatencyRecorder();
  // The paired commands' round trips, as the transmitter's batches bring them (GET /metrics reads them as they come).
  readonly roundTrip = new LatencyRecorder();
  received = 0;
  corrupt = 0;
  paired = 0;
  arrivalsAfterAck = 0;
}

/**
 * The receiver's record of a section's commands: each arrival's one-way time by phase, and the checksums' verdicts.
 * Constant memory whatever the count (histograms, not lists).
 */
export class CommandArrivals {
  private readonly offsetNs: bigint;
  private readonly oneClock: boolean;
  /**
   * One-way times of commands whose round trip has not come yet, by seq: the transmitter ships round trips within a
   * second, so this holds a second's commands at most.
   */
  private readonly awaitingRoundTrip = new Map<number, number>();
  private readonly phases: Record<CommandPhase, PhaseArrivals> = {
    alone: new PhaseArrivals(),
    beside: new PhaseArrivals(),
  };

  constructor(plan: { clock: SectionClock | null }) {
    this.offsetNs = plan.clock?.applied ? BigInt(Math.round(plan.clock.offsetNs)) : 0n;
    this.oneClock = !plan.clock?.applied;
  }

  /** Takes a command's round trip (ns, the transmitter's clock) by its seq, and pairs it with its arrival. */
  roundTrip(seq: number, rttNs: number): void {
    const command = commandOf(seq);
    const oneWayNs = this.awaitingRoundTrip.get(seq);
    if (command === undefined || oneWayNs === undefined) return;
    this.awaitingRoundTrip.delete(seq);
    const phase = this.phases[command.phase];
    phase.paired++;
    phase.roundTrip.record(rttNs / 1e6);
    if (oneWayNs > rttNs) phase.arrivalsAfterAck++;
  }

  /** Takes a command frame's arrival; returns its phase, or undefined when the header is an image's. */
  record(header: FrameHeader, arrivalNs: bigint): CommandPhase | undefined {
    const command = commandOf(header.seq);
    if (command === undefined) return undefined;
    const phase = this.phases[command.phase];
    phase.received++;
    const oneWayNs = Number(arrivalNs - (header.sentAtNs + this.offsetNs));
    phase.oneWay.record(oneWayNs / 1e6);
    this.awaitingRoundTrip.set(header.seq, oneWayNs);
    return command.phase;
  }

  /** A command's checksum verdict. */
  verified(phase: CommandPhase, checksumOk: boolean): void {
    if (!checksumOk) this.phases[phase].corrupt++;
  }

  /** The lane's result: the transmitter's figures joined with these arrivals. */
  result(transmitter: TransmitterCommands, lane: CommandLaneTrait | undefined): CommandLaneResult {
    const phase = (name: CommandPhase): CommandPhaseResult => {
      const sent = transmitter[name];
      const arrivals = this.phases[name];
      return {
        ...sent,
        received: arrivals.received,
        corrupt: arrivals.corrupt,
        unacknowledged: Math.max(0, sent.sent - sent.acked),
        oneWay: arrivals.oneWay.summary() ?? null,
        paired: arrivals.paired,
        arrivalsAfterAck: this.oneClock ? arrivals.arrivalsAfterAck : null,
      };
    };
    const alone = phase('alone');
    const beside = phase('beside');
    const runs = transmitter.notRun === null && lane !== undefined && 'how' in lane;
    return {
      ratePerSecond: transmitter.ratePerSecond,
      sizeBytes: transmitter.sizeBytes,
      how: runs ? lane.how : null,
      interleaves: runs ? lane.interleaves : null,
      notRun: transmitter.notRun,
      alone,
      beside,
      delayFactorP50:
        alone.oneWay !== null && beside.oneWay !== null && alone.oneWay.p50Ms > 0
          ? beside.oneWay.p50Ms / alone.oneWay.p50Ms
          : null,
    };
  }

  /**
   * Each phase's arrivals so far (GET /metrics, at a scrape): counts, and the one-way times and paired round trips
   * counted at or below each of `boundsNs` (ascending, ns).
   */
  soFar(boundsNs: readonly number[]): Record<CommandPhase, CommandArrivalsSoFar> {
    const times = (recorder: LatencyRecorder): TimesSoFar => ({
      count: recorder.size,
      sumMs: recorder.sumMs,
      atOrBelow: recorder.countsAtOrBelowNs(boundsNs),
    });
    const phase = (p: PhaseArrivals): CommandArrivalsSoFar => ({
      received: p.received,
      corrupt: p.corrupt,
      oneWay: times(p.oneWay),
      roundTrip: times(p.roundTrip),
    });
    return { alone: phase(this.phases.alone), beside: phase(this.phases.beside) };
  }

  /** Frees the histograms. */
  destroy(): void {
    this.awaitingRoundTrip.clear();
    for (const phase of Object.values(this.phases)) {
      phase.oneWay.destroy();
      phase.roundTrip.destroy();
    }
  }
}

/** One phase's command arrivals so far, as {@link CommandArrivals.soFar} reads them. */
export interface CommandArrivalsSoFar {
  received: number;
  corrupt: number;
  oneWay: TimesSoFar;
  roundTrip: TimesSoFar;
}

/**
 * The timing check's failure for a section's commands, as an image's: commands stamped as arriving after their own
 * acks (one clock only); null when none was.
 */
export function commandTimingFailure(lane: CommandLaneResult): string | null {
  const late = (lane.alone.arrivalsAfterAck ?? 0) + (lane.beside.arrivalsAfterAck ?? 0);
  if (late === 0) return null;
  const paired = (lane.alone.paired ?? 0) + (lane.beside.paired ?? 0);
  return (
    `timing check: ${late} of ${paired} commands stamped as arriving after their ack was processed (one-way time ` +
    `over round trip on one clock): a command's arrival stamp came late`
  );
}

/** How commands travel on a transport that declares nothing: through its one send path, between images. */
export const DEFAULT_COMMAND_LANE = {
  interleaves: false,
  how:
    "between images on the link's connection: a frame is written whole, so a command waits behind the image " +
    'being written',
} as const satisfies CommandLaneTrait;

/** How `traits` carry the command lane: as declared, else {@link DEFAULT_COMMAND_LANE}. */
export function commandLaneOf(traits: { commandLane?: CommandLaneTrait }): CommandLaneTrait {
  return traits.commandLane ?? DEFAULT_COMMAND_LANE;
}
