import type { SectionEnd } from '../core/control/control-protocol.js';
import {
  brokerCost,
  busyShare,
  sideCost,
  type BrokerReading,
  type ResourceReading,
  type SideCost,
} from '../core/model/cost.js';
import { COMMAND_SEQ_BASE } from '../core/wire/frame.js';
import { CommandArrivals, commandLaneOf, commandTimingFailure } from '../core/model/command-lane.js';
import type { SectionPlan, SectionResult } from '../core/model/section.js';
import { SectionRecorder } from '../core/model/recorder.js';
import { nsBetween, nsToMs } from '../core/model/stats.js';
import type { WarmupOutcome } from '../core/model/warmup.js';
import { sectionHostLoad, type HostLoadReading } from '../core/model/host-load.js';
import { readResources, RssPeakTracker } from '../shared/resources.js';
import { readHostLoad, readHostLoadAfterThisTurn } from '../shared/host-load-reading.js';
import { transportByName } from '../transports/index.js';
import type { OpenSectionFiles } from './run-output/run-folder.js';
import { sampleWallClock } from './wall-clock.js';

// A section between POST /sections and its end, apart from the run around it (./session.ts): the record, and the
// receiver's (and broker's) readings over the same span as the transmitter's: from POST /sections/:id/measure (sent
// once warm-up is over, just before the first recorded stamp) to the ack of the last recorded image. Its end turns
// those readings and the transmitter's side into the section's result.

/** Reads the broker a transport goes through (never rejecting: undefined when it cannot be read), or undefined. */
export type SpanBrokerReader = (transport: string) => Promise<BrokerReading | undefined> | undefined;

/** What the measured span cost, read at the section's end: each side's share, the host's load at the span's end. */
export interface SpanCosts {
  receiver: SideCost | null;
  broker: SideCost | null;
  hostEnd: HostLoadReading;
  /** The receiver's resources at the span's end (or at the section's, when the span never closed). */
  end: ResourceReading;
}

/** One open section of the receiver's run: see the module comment. */
export class OpenSection {
  readonly recorder: SectionRecorder;
  /** The command lane's arrivals (COMMAND_RATE), kept apart from the images'. */
  readonly commands: CommandArrivals;
  /** Its per-image CSV, relative to the run's folder; null when none is written. */
  readonly imagesFile: string | null;
  /** Time spent hashing this section's recorded images (warm-up left out, as from every figure). */
  verifyNs = 0n;
  /** Why the section's listener stopped receiving while it was open (a broker dropped it), if it did. */
  listenerFailure: string | undefined;
  private readonly rss = new RssPeakTracker();
  private measureStart: ResourceReading | undefined;
  private measureEnd: { reading: ResourceReading; peakRssBytes: number } | undefined;
  private brokerStart: Promise<BrokerReading | undefined> | undefined;
  private brokerEnd: Promise<BrokerReading | undefined> | undefined;
  /** The host's load at both ends of the span (model/host-load.ts). */
  private hostStart: HostLoadReading | undefined;
  private hostEnd: Promise<HostLoadReading> | undefined;
  /**
   * Hashing done inside the measured span, and its longest single run: what it took from the thread that stamps
   * arrivals. The sum is a number (exact below 2^53 ns): it grows with every image, and a bigint sum is garbage each
   * time.
   */
  private spanHashNs = 0;
  private longestHashRunNs = 0n;

  constructor(
    plan: SectionPlan,
    files: OpenSectionFiles | undefined,
    private readonly readBroker: SpanBrokerReader,
  ) {
    // The wall clock is paired with hrtime as the section opens, before any frame: the spin (≤ 1 ms) delays none.
    this.recorder = new SectionRecorder(
      plan,
      files?.sink,
      () => sampleWallClock(),
      transportByName(plan.transport).traits.supersedesImages !== undefined,
    );
    this.imagesFile = files?.imagesFile ?? null;
    this.commands = new CommandArrivals(plan);
  }

  /** Warm-up is over: the recorded images, and the receiver's (and the broker's) readings, start now. */
  beginSpan(warmedUp: WarmupOutcome): void {
    this.recorder.beginRecording(warmedUp, process.hrtime.bigint());
    this.rss.start();
    this.measureStart = readResources();
    this.hostStart = readHostLoad();
    this.brokerStart = this.readBroker(this.recorder.plan.transport);
  }

  /** An image was recorded: when it is the last one, in hand with its ack going out now, this side's span ends. */
  endSpanAtLastImage(): void {
    const { recorder } = this;
    if (
      recorder.recordedCount === recorder.plan.imageCount &&
      this.measureStart !== undefined &&
      this.measureEnd === undefined
    ) {
      this.measureEnd = { reading: readResources(), peakRssBytes: this.rss.stop() };
      this.brokerEnd = this.readBroker(recorder.plan.transport);
      this.hostEnd = readHostLoadAfterThisTurn();
    }
  }

  /**
   * Counts hashing that just ended inside the measured span (from the first recorded image to the last one's ack): it
   * held back whatever arrived meanwhile. `runNs` in all, `longestNs` of it in one go (an image summed part by part as
   * it was read held the thread for one part at a time). A run after the span delays no recorded stamp.
   */
  hashRun(runNs: bigint, longestNs = runNs): void {
    if (this.measureStart === undefined || this.measureEnd !== undefined) return;
    this.spanHashNs += nsBetween(0n, runNs);
    if (longestNs > this.longestHashRunNs) this.longestHashRunNs = longestNs;
  }

  /**
   * The span's costs, per image sent (a section that failed, or ran for DURATION, sent what it sent): the readings at
   * its end, or taken now when it never ended (the last image never came).
   */
  async readSpanCosts(imagesSent: number): Promise<SpanCosts> {
    const measureEnd = this.measureEnd ?? { reading: readResources(), peakRssBytes: this.rss.stop() };
    const hostEnd = this.hostEnd ?? Promise.resolve(readHostLoad());
    const receiver =
      this.measureStart === undefined
        ? null
        : sideCost(this.measureStart, measureEnd.reading, measureEnd.peakRssBytes, imagesSent);
    const [brokerStart, brokerEnd] = await Promise.all([
      this.brokerStart,
      this.brokerEnd ?? (this.brokerStart && this.readBroker(this.recorder.plan.transport)),
    ]);
    const broker = brokerStart && brokerEnd ? brokerCost(brokerStart, brokerEnd, imagesSent) : null;
    return { receiver, broker, hostEnd: await hostEnd, end: measureEnd.reading };
  }

  /**
   * The section's result from its record, the transmitter's side (`end`) and the span's `costs`; `verify` false when
   * no image was hashed (the verifier's figures are then null). Frees the command lane's arrivals.
   */
  result(end: SectionEnd, costs: SpanCosts, verify: boolean): SectionResult {
    const { plan } = this.recorder;
    const result = this.recorder.result(this.failure(end), {
      cost: { transmitter: end.transmitterCost, receiver: costs.receiver, broker: costs.broker },
      imagesSent: end.imagesSent,
      roundTripsShipped: end.roundTripsShipped,
      sendLag: end.sendLag,
      rttFromDue: end.rttFromDue,
      meanInFlight: end.meanInFlight,
      rttSeconds: end.rttSeconds,
      achievedRatePerSecond: end.achievedRatePerSecond,
      clientFigures: end.clientFigures,
      coldStart: end.coldStart,
      clockAfter: end.clockAfter,
      verifyMs: verify ? nsToMs(this.verifyNs) : null,
      verifyLongestRunMs: verify ? nsToMs(this.longestHashRunNs) : null,
      verifyBusyShare:
        verify && this.measureStart !== undefined
          ? busyShare(this.spanHashNs / 1e6, this.measureStart, costs.end)
          : null,
    });
    const commands =
      end.commands === null
        ? undefined
        : this.commands.result(end.commands, commandLaneOf(transportByName(plan.transport).traits));
    const commandFailure = commands === undefined ? null : commandTimingFailure(commands);
    const recorded: SectionResult = {
      ...result,
      imagesFile: this.imagesFile,
      hostLoad: sectionHostLoad(
        this.hostStart,
        costs.hostEnd,
        result,
        transportByName(plan.transport).deployment.setting.kind === 'url',
      ),
      ...(commands === undefined ? {} : { commands }),
      ...(commandFailure === null
        ? {}
        : {
            ok: false,
            failure: result.failure === null ? commandFailure : `${result.failure}; ${commandFailure}`,
          }),
    };
    this.commands.destroy();
    return recorded;
  }

  /** Stops the span's readings and frees the command lane's arrivals: the section is dropped unended. */
  close(): void {
    this.rss.stop();
    this.commands.destroy();
  }

  // The listener's failure first, whatever the transmitter saw of it (its link may only see silence).
  private failure(end: SectionEnd): string | null {
    if (this.listenerFailure === undefined) return end.failure;
    return end.failure === null ? this.listenerFailure : `${this.listenerFailure}; transmitter: ${end.failure}`;
  }
}

/**
 * The image records of a round-trip batch, the commands' (a seq from COMMAND_SEQ_BASE on) taken out and handed to
 * `commands`; the batch itself when it holds none (the usual case: no copy).
 */
export function withoutCommands(
  records: Float64Array<ArrayBuffer>,
  commands: CommandArrivals,
): Float64Array<ArrayBuffer> {
  let images = 0;
  for (let at = 0; at + 2 < records.length; at += 3) if (!(records[at]! >= COMMAND_SEQ_BASE)) images++;
  if (images * 3 === records.length) return records;
  const kept = new Float64Array(images * 3);
  let to = 0;
  for (let at = 0; at + 2 < records.length; at += 3) {
    const seq = records[at]!;
    if (seq >= COMMAND_SEQ_BASE) commands.roundTrip(seq, records[at + 1]!);
    else kept.set(records.subarray(at, at + 3), to++ * 3);
  }
  return kept;
}
