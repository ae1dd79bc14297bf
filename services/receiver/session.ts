import type { Logger } from 'pino';
import { imageChecksum } from '../core/checksum.js';
import { sideCost, type ResourceReading, type SideCost } from '../core/cost.js';
import type { Ack } from '../core/frame.js';
import { RESULTS_SCHEMA_VERSION, summarizeTransports, type HostFacts, type RunInfo, type RunReport } from '../core/report.js';
import { SectionRecorder, type SectionPlan, type SectionResult } from '../core/section.js';
import { readResources, RssPeakTracker } from '../shared/resources.js';
import type { ReceivedFrame } from '../transports/contract.js';

// The receiver's state for one run: the sections done, the one open, and what arrives for it.
// Kept apart from HTTP and files so the app can end a run three ways with the same code: the
// transmitter finishes it, the transmitter goes away, or the receiver is shut down.

/** What the transmitter sends at the start of a run (the receiver adds its own host). */
export type RunAnnouncement = Omit<RunInfo, 'hosts'> & { hosts: Pick<RunInfo['hosts'], 'transmitter'> };

/** Where a run stands, for the live page: finished sections and the one in progress. */
export interface RunProgress {
  info: RunInfo;
  sections: SectionResult[];
  open: { transport: string; label: string; repeat: number; imageCount: number; warmup: number; received: number } | undefined;
}

// A section between POST /sections and its end: the record, and the receiver's resource
// readings from POST /sections/:id/measure (sent once warm-up is over) to the end.
interface OpenSection {
  recorder: SectionRecorder;
  measureStart: ResourceReading | undefined;
  rss: RssPeakTracker;
}

/** One run at a time on the receiver: sections in, frames recorded, a report out. */
export class RunSession {
  private info: RunInfo | undefined;
  private sections: SectionResult[] = [];
  private open: OpenSection | undefined;
  /** Frames and inputs the run did not expect, for the log at its end. */
  strayFrames = 0;
  /** Date.now() of the last control request or frame: the watchdog's measure of a live transmitter. */
  lastActivityMs = Date.now();

  constructor(
    private readonly log: Logger,
    private readonly receiverHost: () => HostFacts,
    /** False only to measure what verification costs: every image then counts as intact. */
    private readonly verify = true,
  ) {}

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
    this.info = { ...announcement, hosts: { transmitter: announcement.hosts.transmitter, receiver: this.receiverHost() } };
    this.sections = [];
    this.strayFrames = 0;
    this.touch();
  }

  /** Opens a section; a refusal (listener down, image too large) is recorded as a failed section. */
  openSection(plan: SectionPlan, refusal: string | undefined): void {
    this.closeOpen();
    if (refusal !== undefined) {
      this.sections.push(new SectionRecorder(plan).result(refusal));
      return;
    }
    this.open = { recorder: new SectionRecorder(plan), measureStart: undefined, rss: new RssPeakTracker() };
  }

  /** True when `sectionId` (as given in a URL) is the open section. */
  isOpen(sectionIdText: string): boolean {
    return this.open !== undefined && String(this.open.recorder.plan.sectionId) === sectionIdText;
  }

  /** Warm-up is over: the receiver's cost is measured from here. */
  startMeasuring(): void {
    if (this.open === undefined) return;
    this.open.rss.start();
    this.open.measureStart = readResources();
  }

  /** Ends the open section with the transmitter's word on it; returns its result. */
  endSection(failure: string | null, transmitterCost: SideCost | null, measureEnd: ResourceReading = readResources()): SectionResult | undefined {
    const open = this.open;
    if (open === undefined) return undefined;
    const peakRssBytes = open.rss.stop();
    const receiverCost = open.measureStart === undefined ? null : sideCost(open.measureStart, measureEnd, peakRssBytes, open.recorder.plan.imageCount);
    const result = open.recorder.result(failure, { transmitter: transmitterCost, receiver: receiverCost });
    this.open = undefined;
    this.sections.push(result);
    return result;
  }

  /**
   * Records one frame from any transport: the arrival time is already taken, so the checksum is
   * verified here, outside the timed span. A frame for no open section is rejected and counted.
   */
  deliver(frame: ReceivedFrame): Ack {
    const { header } = frame;
    this.lastActivityMs = Date.now();
    const recorder = this.open?.recorder;
    if (recorder === undefined || recorder.plan.sectionId !== header.sectionId) {
      this.strayFrames++;
      this.log.warn({ sectionId: header.sectionId, seq: header.seq }, 'frame for no open section dropped');
      return { sectionId: header.sectionId, seq: header.seq, status: 'rejected' };
    }
    const checksumOk = !this.verify || imageChecksum(frame.payload) === header.checksum;
    const status = recorder.record(header, frame.arrivalNs, checksumOk);
    if (this.log.isLevelEnabled('debug')) {
      this.log.debug({ transport: recorder.plan.transport, seq: header.seq, status, timeNs: String(frame.arrivalNs - header.sentAtNs) }, 'image received');
    }
    return { sectionId: header.sectionId, seq: header.seq, status };
  }

  /**
   * Ends the run and returns its report; `stopReason` says why it ended early (the open section,
   * if any, fails with it and keeps the count of images it got), null when the transmitter
   * finished it. Undefined when no run is in progress.
   */
  finish(stopReason: string | null): RunReport | undefined {
    const info = this.info;
    if (info === undefined) return undefined;
    if (this.open !== undefined && stopReason !== null) {
      const { imageCount, warmup } = this.open.recorder.plan;
      const got = Math.max(0, this.open.recorder.receivedCount - warmup);
      this.endSection(`${stopReason}; got ${got} of ${imageCount} images`, null);
    }
    this.closeOpen();
    this.info = undefined;
    return {
      schemaVersion: RESULTS_SCHEMA_VERSION,
      run: info,
      finishedAt: new Date().toISOString(),
      stopReason,
      sections: this.sections,
      transports: summarizeTransports(this.sections, info.transports),
    };
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
        warmup: open.plan.warmup,
        received: open.receivedCount,
      },
    };
  }

  private closeOpen(): void {
    this.open?.rss.stop();
    this.open = undefined;
  }
}
