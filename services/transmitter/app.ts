import { randomInt } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import { imageChecksum } from '../core/checksum.js';
import type { Config } from '../core/config.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { encodeFrameHeader, stampSentAt, type Ack } from '../core/frame.js';
import type { RunInfo, RunReport } from '../core/report.js';
import { SectionRecorder, type SectionPlan, type SectionResult } from '../core/section.js';
import type { TransmitterLink, Transport } from '../transports/contract.js';
import { transportByName } from '../transports/index.js';
import { withTimeout } from '../shared/waits.js';
import { ControlClient } from './control-client.js';

/** The image a run sends, loaded before the run (never inside the timed path). */
export interface RunImage {
  bytes: Buffer;
  description: string;
}

/** What a finished run hands back to the entry: the report, its summary table, and the verdict. */
export interface RunOutcome {
  report: RunReport;
  summary: string;
  succeeded: boolean;
}

/** A transmitter: runs every configured transport's section in turn against one receiver. */
export interface TransmitterApp {
  run(): Promise<RunOutcome>;
}

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
export function buildTransmitter(config: Readonly<Config>, image: RunImage, log: Logger): TransmitterApp {
  const control = new ControlClient(config.receiverHost, config.controlPort, config.imageTimeoutMs);
  const checksum = imageChecksum(image.bytes);

  // Sends seqs [from, to) keeping at most `window` unacknowledged, then waits for every ack.
  async function sendPhase(link: TransmitterLink, plan: SectionPlan, from: number, to: number, acked: Set<number>, waiter: AckWaiter): Promise<void> {
    const ackedBefore = acked.size;
    waiter.notify();
    for (let seq = from; seq < to; seq++) {
      const header = encodeFrameHeader({ sectionId: plan.sectionId, seq, sizeBytes: image.bytes.length, checksum, sentAtNs: 0n });
      const sentSoFar = seq - from;
      await waiter.until(() => sentSoFar - (acked.size - ackedBefore) < plan.window, config.imageTimeoutMs, () => `a free slot in the window before image seq ${seq}`);
      stampSentAt(header, process.hrtime.bigint());
      await withTimeout(link.send(header, image.bytes), config.imageTimeoutMs, `handing image seq ${seq} to ${plan.transport}`);
    }
    await waiter.until(() => acked.size - ackedBefore >= to - from, config.imageTimeoutMs, () => `${to - from - (acked.size - ackedBefore)} outstanding acknowledgements`);
  }

  async function transfer(transport: Transport, plan: SectionPlan): Promise<string | null> {
    const acked = new Set<number>();
    const waiter = new AckWaiter();
    const onAck = (ack: Ack): void => {
      if (ack.sectionId !== plan.sectionId || acked.has(ack.seq)) return;
      acked.add(ack.seq);
      waiter.notify();
    };
    let link: TransmitterLink | undefined;
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
      await sendPhase(link, plan, plan.warmup, plan.warmup + plan.imageCount, acked, waiter);
      return null;
    } catch (err) {
      return errorMessage(err);
    } finally {
      await link?.close().catch((err: unknown) => log.warn({ transport: transport.name, err: errorMessage(err) }, 'close failed'));
    }
  }

  async function runSection(transport: Transport): Promise<SectionResult> {
    const plan: SectionPlan = {
      sectionId: randomInt(1, 2 ** 32 - 1),
      transport: transport.name,
      label: transport.label,
      baseline: transport.baseline,
      imageCount: config.imageCount,
      warmup: config.warmup,
      imageSizeBytes: image.bytes.length,
      window: config.window,
    };
    log.info({ transport: transport.name, imageCount: plan.imageCount, imageSizeBytes: plan.imageSizeBytes, window: plan.window }, 'section start');
    let result: SectionResult;
    try {
      await control.openSection(plan);
      const failure = await transfer(transport, plan);
      result = await control.endSection(plan.sectionId, failure);
    } catch (err) {
      // The receiver could not take part (listener down, receiver gone): everything is lost.
      result = new SectionRecorder(plan).result(errorMessage(err));
    }
    log.info({ transport: transport.name, ok: result.ok, okCount: result.okCount, lostCount: result.lostCount, corruptCount: result.corruptCount, totalMs: result.totalMs, failure: result.failure }, 'section end');
    return result;
  }

  return {
    async run() {
      await control.waitUntilReady(config.connectTimeoutMs);
      const info: Omit<RunInfo, 'receiverHost'> = {
        startedAt: new Date().toISOString(),
        transmitterHost: os.hostname(),
        nodeVersion: process.version,
        imageDescription: image.description,
        imageSizeBytes: image.bytes.length,
        imageCount: config.imageCount,
        window: config.window,
        warmup: config.warmup,
        transports: config.transports,
      };
      await control.startRun(info);
      for (const name of config.transports) await runSection(transportByName(name));
      return control.finishRun();
    },
  };
}
