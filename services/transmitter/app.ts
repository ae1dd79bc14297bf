import { randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { imageChecksum } from '../core/checksum.js';
import { estimateClockOffset, type ClockSample } from '../core/clock.js';
import type { Config } from '../core/config.js';
import { sideCost, type SideCost } from '../core/cost.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { encodeFrameHeader, stampSentAt, type Ack } from '../core/frame.js';
import { RESULTS_SCHEMA_VERSION, renderSummary, summarizeTransports, type HostFacts, type RunInfo, type RunReport } from '../core/report.js';
import { acknowledgedOnlyResult, SectionRecorder, type SectionClock, type SectionPlan, type SectionResult } from '../core/section.js';
import { hostFacts } from '../shared/host.js';
import { readResources, RssPeakTracker } from '../shared/resources.js';
import { withTimeout } from '../shared/waits.js';
import type { TransmitterLink, Transport } from '../transports/contract.js';
import { transportByName } from '../transports/index.js';
import { ControlClient } from './control-client.js';

/** The image a run sends, loaded before the run (never inside the timed path). */
export interface RunImage {
  bytes: Buffer;
  description: string;
}

/** What a finished run hands back to the entry: the report, its summary tables, and the verdict. */
export interface RunOutcome {
  report: RunReport;
  summary: string;
  succeeded: boolean;
  /** Set when the receiver went away mid-run: the report is the transmitter's own, and no output.log was written. */
  receiverLost?: string;
}

/**
 * Live counters of one section, for progress displays. The transmitter only increments them; a
 * display reads them on its own timer, so nothing is drawn from inside the timed path.
 */
export interface SectionProgress {
  transport: string;
  label: string;
  repeat: number;
  repeats: number;
  imageCount: number;
  imageSizeBytes: number;
  /** Recorded images handed to the transport, and acknowledged (warm-up not counted). */
  sent: number;
  acked: number;
  /** Date.now() when the first recorded image was sent; undefined during warm-up. */
  startedAtMs: number | undefined;
}

/** Told when each section starts and ends; see {@link SectionProgress} for what happens between. */
export interface RunObserver {
  sectionStarted(progress: SectionProgress): void;
  sectionEnded(progress: SectionProgress, result: SectionResult): void;
}

/** A transmitter: runs every configured transport's section in turn against one receiver. */
export interface TransmitterApp {
  run(): Promise<RunOutcome>;
}

/** Round trips per clock-offset estimate (after one that opens the socket): the lowest is kept. */
const CLOCK_SAMPLES = 8;

// Waits for acks: resolves when `ready()` holds; rejects on a link failure, or when no ack has
// arrived for `timeoutMs` (the clock restarts at every ack, so slow but moving transfers go on).
class AckWaiter {
  private wake: (() => void) | undefined;
  failure: Error | undefined;
  lastProgressMs = Date.now();

  notify(): void {
    this.lastProgressMs = Date.now();
    this.wake?.();
  }

  fail(err: Error): void {
    this.failure ??= err;
    this.wake?.();
  }

  async until(ready: () => boolean, timeoutMs: number, waitingFor: () => string): Promise<void> {
    while (!ready()) {
      if (this.failure) throw this.failure;
      const remainingMs = this.lastProgressMs + timeoutMs - Date.now();
      if (remainingMs <= 0) throw new ItbError(ErrorCode.timeout, `no acknowledgement for ${timeoutMs} ms (IMAGE_TIMEOUT_MS) while waiting for ${waitingFor()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remainingMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    if (this.failure) throw this.failure;
  }
}

/** Builds a transmitter that sends `image` per the config; nothing happens until run(). */
export function buildTransmitter(config: Readonly<Config>, image: RunImage, log: Logger, observer?: RunObserver): TransmitterApp {
  const control = new ControlClient(config.receiverHost, config.controlPort, config.imageTimeoutMs);
  const checksum = imageChecksum(image.bytes);
  const transmitterHost = hostFacts();
  let receiverLost: string | undefined;

  // Sends seqs [from, to) keeping at most `window` unacknowledged, then waits for every ack.
  async function sendPhase(link: TransmitterLink, plan: SectionPlan, from: number, to: number, acked: Set<number>, waiter: AckWaiter, progress?: SectionProgress): Promise<void> {
    const ackedBefore = acked.size;
    waiter.notify();
    for (let seq = from; seq < to; seq++) {
      const header = encodeFrameHeader({ sectionId: plan.sectionId, seq, sizeBytes: image.bytes.length, checksum, sentAtNs: 0n });
      const sentSoFar = seq - from;
      await waiter.until(() => sentSoFar - (acked.size - ackedBefore) < plan.window, config.imageTimeoutMs, () => `a free slot in the window before image seq ${seq}`);
      stampSentAt(header, process.hrtime.bigint());
      await withTimeout(link.send(header, image.bytes), config.imageTimeoutMs, `handing image seq ${seq} to ${plan.transport}`);
      if (progress) progress.sent++;
    }
    await waiter.until(() => acked.size - ackedBefore >= to - from, config.imageTimeoutMs, () => `${to - from - (acked.size - ackedBefore)} outstanding acknowledgements`);
  }

  // Warm-up, then the recorded images with both sides' resources measured around them.
  async function transfer(transport: Transport, plan: SectionPlan, progress: SectionProgress, acked: Set<number>): Promise<{ failure: string | null; cost: SideCost | null }> {
    const waiter = new AckWaiter();
    const onAck = (ack: Ack): void => {
      if (ack.sectionId !== plan.sectionId || acked.has(ack.seq)) return;
      acked.add(ack.seq);
      if (ack.seq >= plan.warmup) progress.acked++;
      waiter.notify();
    };
    const rss = new RssPeakTracker();
    let link: TransmitterLink | undefined;
    let cost: SideCost | null = null;
    try {
      link = await transport.connect({
        host: config.receiverHost,
        bindHost: config.bindHost,
        port: config.ports[transport.name] ?? 0,
        redisUrl: config.redisUrl,
        maxImageBytes: config.maxImageBytes,
        connectTimeoutMs: config.connectTimeoutMs,
        log: log.child({ transport: transport.name }),
        onAck,
        onFailure: (err) => waiter.fail(err),
      });
      await sendPhase(link, plan, 0, plan.warmup, acked, waiter);
      await control.startMeasuring(plan.sectionId);
      rss.start();
      const start = readResources();
      progress.startedAtMs = Date.now();
      await sendPhase(link, plan, plan.warmup, plan.warmup + plan.imageCount, acked, waiter, progress);
      cost = sideCost(start, readResources(), rss.stop(), plan.imageCount);
      return { failure: null, cost };
    } catch (err) {
      return { failure: errorMessage(err), cost };
    } finally {
      rss.stop();
      await link?.close().catch((err: unknown) => log.warn({ transport: transport.name, err: errorMessage(err) }, 'close failed'));
    }
  }

  // Ping-pong over the control endpoint; the offset is applied only across kernels (clocks).
  async function estimateClock(receiverHost: HostFacts): Promise<SectionClock | null> {
    await control.clockSample();
    const samples: ClockSample[] = [];
    for (let i = 0; i < CLOCK_SAMPLES; i++) samples.push(await control.clockSample());
    const estimate = estimateClockOffset(samples);
    if (estimate === undefined) return null;
    const sameKernel = transmitterHost.bootId !== null && transmitterHost.bootId === receiverHost.bootId;
    return { ...estimate, applied: !sameKernel };
  }

  async function runSection(transport: Transport, repeat: number, receiverHost: HostFacts): Promise<SectionResult> {
    const progress: SectionProgress = {
      transport: transport.name,
      label: transport.label,
      repeat,
      repeats: config.repeat,
      imageCount: config.imageCount,
      imageSizeBytes: image.bytes.length,
      sent: 0,
      acked: 0,
      startedAtMs: undefined,
    };
    let plan: SectionPlan = {
      sectionId: randomInt(1, 2 ** 32 - 1),
      transport: transport.name,
      label: transport.label,
      baseline: transport.baseline,
      repeat,
      imageCount: config.imageCount,
      warmup: config.warmup,
      imageSizeBytes: image.bytes.length,
      window: config.window,
      clock: null,
    };
    log.info({ transport: transport.name, repeat, imageCount: plan.imageCount, imageSizeBytes: plan.imageSizeBytes, window: plan.window }, 'section start');
    observer?.sectionStarted(progress);
    let result: SectionResult;
    const acked = new Set<number>();
    try {
      plan = { ...plan, clock: await estimateClock(receiverHost) };
      await control.openSection(plan);
      const { failure, cost } = await transfer(transport, plan, progress, acked);
      result = await control.endSection(plan.sectionId, failure, cost);
    } catch (err) {
      // The receiver could not take part (listener down) or is gone: then only the acks tell
      // what arrived, and the run stops after this section.
      if (err instanceof ItbError && err.code === ErrorCode.receiverUnreachable) receiverLost ??= err.message;
      result = acked.size > 0 ? acknowledgedOnlyResult(plan, acked, errorMessage(err)) : new SectionRecorder(plan).result(errorMessage(err));
    }
    log.info({ transport: transport.name, repeat, ok: result.ok, okCount: result.okCount, lostCount: result.lostCount, corruptCount: result.corruptCount, totalMs: result.totalMs, failure: result.failure }, 'section end');
    observer?.sectionEnded(progress, result);
    return result;
  }

  return {
    async run() {
      const health = await control.waitUntilReady(config.connectTimeoutMs);
      const info: Omit<RunInfo, 'hosts'> & { hosts: Pick<RunInfo['hosts'], 'transmitter'> } = {
        startedAt: new Date().toISOString(),
        imageDescription: image.description,
        imageSizeBytes: image.bytes.length,
        imageCount: config.imageCount,
        window: config.window,
        warmup: config.warmup,
        repeat: config.repeat,
        transports: config.transports,
        config,
        hosts: { transmitter: transmitterHost },
      };
      await control.startRun(info);
      // Interleaved (A B C, A B C, ...) so drift on a shared machine hits every transport alike.
      try {
        const sections: SectionResult[] = [];
        for (let repeat = 1; repeat <= config.repeat && receiverLost === undefined; repeat++) {
          for (const name of config.transports) {
            sections.push(await runSection(transportByName(name), repeat, health.host));
            if (receiverLost !== undefined) break;
          }
        }
        if (receiverLost === undefined) return await control.finishRun();
        // The receiver is gone with its record: report what the transmitter knows, and stop.
        const report: RunReport = {
          schemaVersion: RESULTS_SCHEMA_VERSION,
          run: { ...info, hosts: { transmitter: transmitterHost, receiver: health.host } },
          finishedAt: new Date().toISOString(),
          stopReason: `receiver went away: ${receiverLost}`,
          sections,
          transports: summarizeTransports(sections, config.transports),
        };
        return { report, summary: renderSummary(report), succeeded: false, receiverLost };
      } finally {
        control.close();
      }
    },
  };
}
