import {
  emptyTransmitterPhase,
  type TransmitterCommandPhase,
  type TransmitterCommands,
} from '../core/model/command-lane.js';
import { OpenLoopSchedule } from '../core/model/schedule.js';
import { LatencyRecorder } from '../core/model/stats.js';
import { commandOf, commandSeq, encodeFrameHeader, type Ack, type CommandPhase } from '../core/wire/frame.js';
import type { TransmitterLink } from '../transports/contract.js';

// The transmitter's side of the command lane (core/model/command-lane.ts says what it measures). Commands go on an
// open-loop schedule at COMMAND_RATE, each stamped as it is handed to the link, so a late timer or a busy event loop
// shows in the lane's send lag and never in a command's time. A command takes no image's window slot: the lane is
// beside the images, not among them.

/** What the lane sends: one command's bytes, the same every time, and their checksum. */
export interface CommandSettings {
  ratePerSecond: number;
  payload: Buffer;
  checksum: bigint;
}

/** One phase's running figures. */
class PhaseTally {
  sent = 0;
  acked = 0;
  readonly rtt = new LatencyRecorder();
  readonly sendLag = new LatencyRecorder();

  figures(): TransmitterCommandPhase {
    return {
      sent: this.sent,
      acked: this.acked,
      rtt: this.rtt.summary() ?? null,
      sendLag: this.sendLag.summary() ?? null,
    };
  }

  destroy(): void {
    this.rtt.destroy();
    this.sendLag.destroy();
  }
}

/** Sends a section's commands on one link and times their acks; see the module comment. */
export class CommandSender {
  private readonly tallies: Record<CommandPhase, PhaseTally> = { alone: new PhaseTally(), beside: new PhaseTally() };
  /** Stamps of the commands sent and not yet acknowledged, by seq: at most a wait's worth at COMMAND_RATE. */
  private readonly outstanding = new Map<number, bigint>();
  private settled: (() => void) | undefined;
  private stopBeside: (() => void) | undefined;
  private besideRun: Promise<void> | undefined;

  /**
   * `roundTrip` takes each acknowledged command's round trip, by seq, for the receiver's record: there it is paired
   * with the command's one-way time, as an image's is (a command stamped as arriving after its ack fails the section).
   */
  constructor(
    private readonly link: TransmitterLink,
    private readonly sectionId: number,
    private readonly settings: CommandSettings,
    private readonly roundTrip: (seq: number, rttNs: number) => void = () => undefined,
  ) {}

  /** Takes an ack whose seq is a command's (commandOf); an unknown or repeated one is ignored. */
  onAck(ack: Ack): void {
    const processedNs = process.hrtime.bigint();
    const command = commandOf(ack.seq);
    const stampNs = this.outstanding.get(ack.seq);
    if (command === undefined || stampNs === undefined || ack.sectionId !== this.sectionId) return;
    this.outstanding.delete(ack.seq);
    const tally = this.tallies[command.phase];
    tally.acked++;
    const rttNs = Number(processedNs - stampNs);
    tally.rtt.record(rttNs / 1e6);
    this.roundTrip(ack.seq, rttNs);
    if (this.outstanding.size === 0) this.settled?.();
  }

  /** Sends `count` commands with nothing else on the link, and waits for their acks (at most `timeoutMs`). */
  async alone(count: number, timeoutMs: number): Promise<void> {
    await this.pace(
      'alone',
      (index) => index < count,
      () => undefined,
    );
    await this.acks(timeoutMs);
  }

  /** Starts sending commands beside the images, until {@link endBeside}. */
  startBeside(): void {
    let stop = false;
    let wake = (): void => undefined;
    this.stopBeside = () => {
      stop = true;
      wake();
    };
    this.besideRun = this.pace(
      'beside',
      () => !stop,
      (waker) => {
        wake = waker;
      },
    );
  }

  /** Stops the commands beside the images and waits for the last ones' acks (at most `timeoutMs`). */
  async endBeside(timeoutMs: number): Promise<void> {
    this.stopBeside?.();
    await this.besideRun;
    await this.acks(timeoutMs);
  }

  /** The figures so far; `notRun` is null: the lane ran. */
  figures(): TransmitterCommands {
    return {
      ratePerSecond: this.settings.ratePerSecond,
      sizeBytes: this.settings.payload.length,
      notRun: null,
      alone: this.tallies.alone.figures(),
      beside: this.tallies.beside.figures(),
    };
  }

  /** Stops sending and frees the histograms; safe to call twice. */
  destroy(): void {
    this.stopBeside?.();
    this.settled?.();
    for (const tally of Object.values(this.tallies)) tally.destroy();
  }

  /**
   * Sends `phase`'s commands on schedule while `more(index)` holds; `onWaker` gets a function that ends the current
   * wait at once (a stop need not wait for the next due time).
   */
  private async pace(phase: CommandPhase, more: (index: number) => boolean, onWaker: (wake: () => void) => void) {
    const schedule = new OpenLoopSchedule(this.settings.ratePerSecond, process.hrtime.bigint());
    const tally = this.tallies[phase];
    let wake: () => void = () => undefined;
    onWaker(() => wake());
    let index = 0;
    while (more(index)) {
      const due = schedule.dueCount(process.hrtime.bigint());
      for (; index < due && more(index); index++) this.send(phase, index, schedule.dueNs(index), tally);
      if (!more(index)) break;
      const waitMs = Number(schedule.dueNs(index) - process.hrtime.bigint()) / 1e6;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, Math.floor(waitMs)));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  private send(phase: CommandPhase, index: number, dueNs: bigint, tally: PhaseTally): void {
    const seq = commandSeq(phase, index);
    const sentAtNs = process.hrtime.bigint();
    const header = encodeFrameHeader({
      sectionId: this.sectionId,
      seq,
      sizeBytes: this.settings.payload.length,
      checksum: this.settings.checksum,
      sentAtNs,
    });
    this.outstanding.set(seq, sentAtNs);
    tally.sent++;
    tally.sendLag.record(Number(sentAtNs - dueNs) / 1e6);
    if (this.link.sendCommand !== undefined) this.link.sendCommand(header, this.settings.payload);
    else this.link.send(header, this.settings.payload);
  }

  /** Waits until every command sent is acknowledged, or `timeoutMs`; the rest stay unacknowledged in the figures. */
  private async acks(timeoutMs: number): Promise<void> {
    if (this.outstanding.size === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.settled = done;
    });
    this.settled = undefined;
    // What never came is not waited for again: a later phase's settling counts only its own.
    this.outstanding.clear();
  }
}

/** The transmitter's figures of a section whose transport cannot carry the lane (`why`). */
export function commandsNotRun(settings: CommandSettings, why: string): TransmitterCommands {
  return {
    ratePerSecond: settings.ratePerSecond,
    sizeBytes: settings.payload.length,
    notRun: why,
    alone: emptyTransmitterPhase(),
    beside: emptyTransmitterPhase(),
  };
}
