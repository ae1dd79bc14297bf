import path from 'node:path';
import type { Logger } from 'pino';
import { publicConfig, type Config } from '../core/config/config.js';
import { failedSectionEnd, type RunAnnouncement, type SectionEnd } from '../core/control/control-protocol.js';
import type { BrokerReading } from '../core/model/cost.js';
import { errorMessage } from '../core/errors.js';
import type { ProcessSnapshot } from '../core/live/process-load.js';
import { COMMAND_SEQ_BASE, type Ack } from '../core/wire/frame.js';
import type { CommandArrivals } from '../core/model/command-lane.js';
import { buildRunReport, type HostFacts, type RunInfo, type RunReport } from '../core/report/report.js';
import { plannedImageCount } from '../core/report/images-sent.js';
import { withFanOut, type FanOut, type SectionPlan, type SectionResult } from '../core/model/section.js';
import { SectionRecorder } from '../core/model/recorder.js';
import { exerciseSharedPaths } from '../core/model/prewarm.js';
import { warmupImagesAllowed, type WarmupOutcome } from '../core/model/warmup.js';
import type { OpenSectionFiles } from './run-output/run-folder.js';
import type { ReceivedFrame } from '../transports/contract.js';
import type { FrameSink } from './listeners.js';
import { Verifier } from './verifier.js';
import { OpenSection, withoutCommands } from './open-section.js';

// The receiver's state for one run: the sections done, the one open, and what arrives for it.
// Kept apart from HTTP and files so the app can end a run three ways with the same code: the
// transmitter finishes it, the transmitter goes away, or the receiver is shut down.

/** Where a run stands, for the live page: finished sections and the one in progress. */
export interface RunProgress {
  info: RunInfo;
  sections: SectionResult[];
  open:
    | {
        transport: string;
        label: string;
        repeat: number;
        imageCount: number;
        warmingUp: boolean;
        warmupImages: number;
        recorded: number;
      }
    | undefined;
}

/**
 * Hears a run's transitions (GET /events' feed, GET /metrics' totals): never called per image; must not throw. A
 * `recorder` is read by the observer, never written; undefined for a section refused at its opening.
 */
export interface SessionObserver {
  runStarted?(info: RunInfo): void;
  /** `commands` are the section's command arrivals (read, never written; freed once the section has ended). */
  sectionOpened?(plan: SectionPlan, recorder: SectionRecorder | undefined, commands?: CommandArrivals): void;
  /**
   * The section's record is final (nothing more arrives for it) and its result is about to be made: the last moment
   * its running figures (histograms, figures taken since a last reading) can be read.
   */
  sectionEnding?(recorder: SectionRecorder, commands: CommandArrivals): void;
  sectionEnded?(result: SectionResult, recorder: SectionRecorder | undefined): void;
  runEnded?(report: RunReport): void;
  /** The transmitter's process as it sent a batch of round trips for the open section. */
  transmitterProcess?(snapshot: ProcessSnapshot): void;
}

/** Round-trip values taken in one turn of the event loop (2,048 records, well under a millisecond). */
const ROUND_TRIP_SLICE_VALUES = 2048 * 3;

/**
 * Largest stand-in image the receiver warms its shared paths with: hashing speed does not depend on size beyond this.
 */
const SHARED_PATH_IMAGE_BYTES_LIMIT = 16 * 1024 * 1024;

/** Reads the broker a transport goes through, or undefined for a transport without one. */
export type BrokerReader = (transport: string) => Promise<BrokerReading> | undefined;

/** One run at a time on the receiver: sections in, frames recorded, a report out; the listeners deliver here. */
export class RunSession implements FrameSink {
  private info: RunInfo | undefined;
  private sections: SectionResult[] = [];
  /** This run's (or the last run's) place among its receivers: its files stay where GET / finds them after the run. */
  private lastReceiverIndex = 0;
  private open: OpenSection | undefined;
  /** The section whose end is being made: still read by GET /metrics until its result exists. */
  private ending: SectionRecorder | undefined;
  private readonly observers: SessionObserver[] = [];
  private readonly verifier: Verifier;
  /** When the run in progress, or the last one, started (its announcement's ISO time); undefined before any. */
  lastRunStartedAt: string | undefined;
  /** Frames and inputs the run did not expect, for the log at its end. */
  strayFrames = 0;
  /** Frames rejected since the receiver started (for no open section, or refused by its record), for GET /health. */
  rejectedFrames = 0;
  /** Inputs the listeners rejected since the receiver started (not a frame: malformed, too large), for GET /health. */
  rejectedInputs = 0;
  /** Date.now() of the last control request or frame: the watchdog's measure of a live transmitter. */
  lastActivityMs = Date.now();

  constructor(
    private readonly log: Logger,
    private readonly receiverHost: () => HostFacts,
    /** False only to measure what verification costs: every image then counts as intact. */
    private readonly verify = true,
    private readonly readBroker: BrokerReader = () => undefined,
    /**
     * Builds the verifier from the run callback it must call; injected only by tests that need a hash of known
     * duration.
     */
    makeVerifier: (onRun: (runNs: bigint) => void) => Verifier = (onRun) => new Verifier(onRun),
  ) {
    this.verifier = makeVerifier((runNs) => this.hashRun(runNs));
  }

  /** The run in progress; undefined between runs. */
  get runInfo(): RunInfo | undefined {
    return this.info;
  }

  /** The open section's recorder (or the ending one's, until its result is made), for GET /metrics; or undefined. */
  get recordingSection(): SectionRecorder | undefined {
    return this.open?.recorder ?? this.ending;
  }

  /** Tells `observer` of every transition from now on. */
  observe(observer: SessionObserver): void {
    this.observers.push(observer);
  }

  /** True between a run's start and its end. */
  get inProgress(): boolean {
    return this.info !== undefined;
  }

  /** Notes that the transmitter is alive (a control request arrived). */
  touch(): void {
    this.lastActivityMs = Date.now();
  }

  /** Starts a run; the caller ends any run still in progress first. */
  start(announcement: RunAnnouncement): void {
    this.closeOpen();
    // A secret in the transmitter's config never reaches a report, whatever the transmitter sent.
    this.lastReceiverIndex = announcement.receiverIndex;
    const config = publicConfig(announcement.config as Config);
    this.info = {
      ...announcement,
      imageCount: plannedImageCount(announcement.imageCount, config.durationMs),
      config,
      hosts: { transmitter: announcement.hosts.transmitter, receiver: this.receiverHost() },
    };
    this.lastRunStartedAt = this.info.startedAt;
    this.sections = [];
    this.strayFrames = 0;
    // Before the first section, as the transmitter does; WARMUP=0 is a cold run on purpose.
    const { warmup, imageSizeBytes } = announcement;
    if (warmup.mode === 'steady' || warmup.images > 0)
      exerciseSharedPaths(Buffer.alloc(Math.min(imageSizeBytes, SHARED_PATH_IMAGE_BYTES_LIMIT), 1));
    this.touch();
    for (const o of this.observers) o.runStarted?.(this.info);
  }

  /** Where this run's files go: OUTPUT_DIR for the first receiver, OUTPUT_DIR/receiver-<k> for the k-th of several. */
  outputDir(base: string): string {
    const index = this.lastReceiverIndex;
    return index === 0 ? base : path.join(base, `receiver-${index + 1}`);
  }

  /**
   * Opens a section whose records go to `files` as they are made; a refusal (listener down, image
   * too large) is recorded as a failed section at once and returned.
   */
  openSection(plan: SectionPlan, refusal: string | undefined, files?: OpenSectionFiles): SectionResult | undefined {
    this.closeOpen();
    if (refusal !== undefined) {
      const result = new SectionRecorder(plan).result(refusal);
      this.sections.push(result);
      for (const o of this.observers) {
        o.sectionOpened?.(plan, undefined);
        o.sectionEnded?.(result, undefined);
      }
      return result;
    }
    this.open = new OpenSection(plan, files, (transport) => this.brokerReading(transport));
    for (const o of this.observers) o.sectionOpened?.(plan, this.open.recorder, this.open.commands);
  }

  /** True when `sectionId` (as given in a URL) is the open section. */
  isOpen(sectionIdText: string): boolean {
    return this.open !== undefined && String(this.open.recorder.plan.sectionId) === sectionIdText;
  }

  /**
   * Warm-up is over (`warmedUp` says how it went): the recorded images, and the receiver's (and
   * the broker's) cost, start here. Returns why it is refused: a warm-up count the plan does not
   * allow (it would stretch the record), or a second call.
   */
  startMeasuring(warmedUp: WarmupOutcome): string | undefined {
    const open = this.open;
    if (open === undefined) return 'no section is open';
    if (open.recorder.firstRecordedSeq !== undefined) return 'this section is already measuring';
    if (!warmupImagesAllowed(open.recorder.plan.warmup, warmedUp.images))
      return `a warm-up of ${warmedUp.images} images is not what the section's plan allows`;
    open.beginSpan(warmedUp);
    return undefined;
  }

  /**
   * The listener of `transport` can no longer receive: when the open section is that transport's,
   * it fails with `reason` first, whatever the transmitter saw of it (its link may only see silence).
   */
  onFailure(transport: string, reason: string): void {
    if (this.open?.recorder.plan.transport === transport)
      this.open.listenerFailure ??= `receiver's ${transport} listener failed: ${reason}`;
  }

  /** A listener of `transport` rejected an input that was not a frame: counted and logged, nothing recorded. */
  onReject(transport: string, reason: string): void {
    this.rejectedInputs++;
    this.log.warn({ transport, reason, rejectedInputs: this.rejectedInputs }, 'input rejected');
  }

  /** Ends the open section with the transmitter's side of it; returns its result. */
  async endSection(end: SectionEnd): Promise<SectionResult | undefined> {
    const open = this.open;
    if (open === undefined) return undefined;
    this.open = undefined;
    this.ending = open.recorder;
    // The last images' verdicts may still be queued: they belong to this section's result.
    this.verifier.flush();
    const costs = await open.readSpanCosts(end.imagesSent);
    // From here to the listeners nothing waits: a scrape sees the figures so far or the result, never neither.
    this.ending = undefined;
    for (const o of this.observers) o.sectionEnding?.(open.recorder, open.commands);
    const recorded = open.result(end, costs, this.verify);
    this.sections.push(recorded);
    for (const o of this.observers) o.sectionEnded?.(recorded, open.recorder);
    return recorded;
  }

  /**
   * Takes a batch of the transmitter's round trips for the open section (`sectionIdText` as in the
   * URL), a slice at a time between turns of the event loop, so frames arriving meanwhile are
   * stamped without waiting for the whole batch; `sender` is the transmitter's process then, if it said. False when
   * that section is not open.
   */
  async roundTrips(sectionIdText: string, body: Buffer, sender?: ProcessSnapshot): Promise<boolean> {
    if (!this.isOpen(sectionIdText)) return false;
    if (sender !== undefined) for (const o of this.observers) o.transmitterProcess?.(sender);
    const { recorder, commands } = this.open!;
    // Copied to an aligned buffer: the body's bytes may start anywhere in a pooled one.
    let records = new Float64Array(body.byteLength >> 3);
    new Uint8Array(records.buffer).set(body.subarray(0, records.length * 8));
    records = withoutCommands(records, commands);
    for (let at = 0; at < records.length; at += ROUND_TRIP_SLICE_VALUES) {
      recorder.roundTrips(records.subarray(at, Math.min(records.length, at + ROUND_TRIP_SLICE_VALUES)));
      if (at + ROUND_TRIP_SLICE_VALUES < records.length) await new Promise((resolve) => setImmediate(resolve));
    }
    this.touch();
    return true;
  }

  /**
   * Ends the open section as failed with `reason` (the run is ending without the transmitter's word); its result, or
   * undefined when none is open.
   */
  async endOpenSection(reason: string): Promise<SectionResult | undefined> {
    if (this.open === undefined) return undefined;
    const { recorder } = this.open;
    const planned = recorder.plan.durationMs == null ? ` of ${recorder.plan.imageCount}` : '';
    // Without the transmitter's word, the images sent are at least up to the highest that came.
    return this.endSection({
      ...failedSectionEnd(`${reason}; got ${recorder.recordedCount}${planned} images`),
      imagesSent: recorder.highestRecordedImage,
    });
  }

  /** Replaces a section's result (every receiver's figures added); false when no such section. */
  replaceSection(result: SectionResult): boolean {
    const index = this.sections.findIndex((s) => s.sectionId === result.sectionId);
    if (index < 0) return false;
    this.sections[index] = result;
    return true;
  }

  /**
   * Records one frame from any transport and returns its ack at once. Its verdict is recorded at once when the
   * transport summed its parts as it read them (a byte stream's large image); otherwise its checksum is verified after
   * the ack, on this same thread (verifier.ts says when, and what that costs the stamps). A frame for no open section,
   * or one its record refuses, is rejected and counted.
   */
  deliver(frame: ReceivedFrame): Ack {
    const { header } = frame;
    this.lastActivityMs = Date.now();
    const open = this.open;
    if (open === undefined || open.recorder.plan.sectionId !== header.sectionId) {
      this.strayFrames++;
      this.rejectedFrames++;
      this.log.warn({ sectionId: header.sectionId, seq: header.seq }, 'frame for no open section dropped');
      return { sectionId: header.sectionId, seq: header.seq, status: 'rejected' };
    }
    // A command (COMMAND_RATE) is timed apart and acknowledged at once; it never enters the images' record.
    if (header.seq >= COMMAND_SEQ_BASE) return this.deliverCommand(open, frame);
    const { recorder } = open;
    const status = recorder.record(header, frame.arrivalNs, frame.brokerStamp);
    if (status === 'accepted') {
      // Before the span can end at this image: a sum made as it was read counts inside the span.
      this.verifyImage(open, frame);
      open.endSpanAtLastImage();
    } else this.rejectedFrames++;
    if (this.log.isLevelEnabled('debug')) {
      this.log.debug(
        {
          transport: recorder.plan.transport,
          seq: header.seq,
          status,
          timeNs: String(frame.arrivalNs - header.sentAtNs),
        },
        'image received',
      );
    }
    return { sectionId: header.sectionId, seq: header.seq, status, receiver: recorder.plan.receiverIndex };
  }

  // An accepted image's verdict: at once from the sum its transport made as it read the parts, else after its ack.
  private verifyImage(open: OpenSection, frame: ReceivedFrame): void {
    const { header, partsChecksum } = frame;
    const { recorder } = open;
    if (!this.verify) {
      recorder.verified(header.seq, true);
      return;
    }
    const first = recorder.firstRecordedSeq;
    const recorded = first !== undefined && header.seq >= first;
    if (partsChecksum !== undefined) {
      if (recorded) open.verifyNs += partsChecksum.hashNs;
      open.hashRun(partsChecksum.hashNs, partsChecksum.longestPartNs);
      recorder.verified(header.seq, partsChecksum.value === header.checksum);
      return;
    }
    this.verifier.enqueue(frame.payload, header.checksum, (checksumOk, hashNs) => {
      recorder.verified(header.seq, checksumOk);
      if (recorded) open.verifyNs += hashNs;
    });
  }

  /** Records a command of the open section and verifies it as an image is: from its parts' sum, or after its ack. */
  private deliverCommand(open: OpenSection, frame: ReceivedFrame): Ack {
    const { header, partsChecksum } = frame;
    const phase = open.commands.record(header, frame.arrivalNs);
    if (phase !== undefined && this.verify) {
      if (partsChecksum === undefined)
        this.verifier.enqueue(frame.payload, header.checksum, (checksumOk) =>
          open.commands.verified(phase, checksumOk),
        );
      else {
        open.hashRun(partsChecksum.hashNs, partsChecksum.longestPartNs);
        open.commands.verified(phase, partsChecksum.value === header.checksum);
      }
    }
    const receiver = open.recorder.plan.receiverIndex;
    return { sectionId: header.sectionId, seq: header.seq, status: 'accepted', receiver };
  }

  /**
   * Adds every receiver's figures to this receiver's (the first one's) record of section
   * `sectionId`, once the transmitter has every receiver's result; undefined when no such section.
   */
  attachFanOut(sectionId: number, fanOut: FanOut): SectionResult | undefined {
    let index = this.sections.length - 1;
    while (index >= 0 && this.sections[index]!.sectionId !== sectionId) index--;
    if (index < 0) return undefined;
    const result = withFanOut(this.sections[index]!, fanOut);
    this.sections[index] = result;
    return result;
  }

  /**
   * Ends the run and returns its report; `stopReason` says why it ended early (the open section,
   * if any, fails with it and keeps the count of images it got), null when the transmitter
   * finished it. Undefined when no run is in progress.
   */
  async finish(stopReason: string | null): Promise<RunReport | undefined> {
    const info = this.info;
    if (info === undefined) return undefined;
    if (stopReason !== null) await this.endOpenSection(stopReason);
    this.closeOpen();
    this.info = undefined;
    const report = buildRunReport(info, this.sections, stopReason);
    for (const o of this.observers) o.runEnded?.(report);
    return report;
  }

  /** Where the run stands; undefined when none is in progress. */
  progress(): RunProgress | undefined {
    if (this.info === undefined) return undefined;
    const open = this.open?.recorder;
    return {
      info: this.info,
      sections: [...this.sections],
      open: open && {
        transport: open.plan.transport,
        label: open.plan.label,
        repeat: open.plan.repeat,
        imageCount: open.plan.imageCount,
        warmingUp: open.firstRecordedSeq === undefined,
        warmupImages: open.firstRecordedSeq ?? open.receivedCount,
        recorded: open.recordedCount,
      },
    };
  }

  // One run of hashes just ended: the open section counts it when it fell in its measured span. A run after the section
  // closed (endSection's flush) delays no recorded stamp.
  private hashRun(runNs: bigint): void {
    this.open?.hashRun(runNs);
  }

  // A broker reading that never rejects: a broker that cannot be read leaves its side unmeasured.
  private brokerReading(transport: string): Promise<BrokerReading | undefined> | undefined {
    return this.readBroker(transport)?.catch((err: unknown) => {
      this.log.warn({ transport, err: errorMessage(err) }, 'broker not read: its cost is not reported');
      return undefined;
    });
  }

  private closeOpen(): void {
    this.open?.close();
    this.open = undefined;
    this.ending = undefined;
  }
}
