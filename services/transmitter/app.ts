import { randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { sectionCredential, type SectionCredential } from '../core/auth.js';
import { imageChecksum } from '../core/checksum.js';
import { estimateClockOffset, type ClockSample } from '../core/clock.js';
import { publicConfig, type Config } from '../core/config.js';
import type { RunAnnouncement, RunOutcome } from '../core/control-protocol.js';
import { sideCost, type ResourceReading, type SideCost } from '../core/cost.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { encodeFrameHeader, type Ack } from '../core/frame.js';
import { buildRunReport, renderSummary, type HostFacts } from '../core/report.js';
import { acknowledgedOnlyResult, SectionRecorder, type SectionClock, type SectionPlan, type SectionResult, type TransmitterColdStart } from '../core/section.js';
import { DropLedger } from '../core/drops.js';
import { achievedRate, OpenLoopSchedule } from '../core/schedule.js';
import { exerciseSharedPaths } from '../core/prewarm.js';
import { nsToMs } from '../core/stats.js';
import { SteadinessCheck, warmupDecision, warmupImageLimit, warmupPlan, type SteadinessReading, type WarmupDecision, type WarmupOutcome } from '../core/warmup.js';
import { transmitterAuthToken } from '../shared/auth-token.js';
import { hostFacts } from '../shared/host.js';
import { readResources, RssPeakTracker } from '../shared/resources.js';
import type { TransmitterLink, Transport } from '../transports/contract.js';
import { transportByName } from '../transports/index.js';
import { ControlClient } from './control-client.js';

/** The image a run sends, loaded before the run (never inside the timed path). */
export interface RunImage {
  bytes: Buffer;
  description: string;
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

const nullableMs = (ns: number | null): number | null => (ns === null ? null : ns / 1e6);

/**
 * Least silence after which the outstanding images of a transport that drops images are settled
 * as lost: above any round trip on loopback, so only a dropped image waits this long. The
 * receiver's record stays the exact count: an image that arrives later is recorded as it arrives.
 */
const DROP_SETTLE_FLOOR_MS = 1000;
/** The settle wait is also at least this many times the slowest round trip seen in the section. */
const DROP_SETTLE_RTT_FACTOR = 4;

/**
 * Resolves at `dueNs` on the monotonic clock: a timer for the whole milliseconds, then the event
 * loop's next turns (setImmediate) for the rest, so a due time is met to well under a millisecond
 * without holding the core.
 */
async function sleepUntil(dueNs: bigint): Promise<void> {
  const waitMs = Number(dueNs - process.hrtime.bigint()) / 1e6;
  if (waitMs >= 2) await new Promise<void>((resolve) => setTimeout(resolve, Math.floor(waitMs) - 1));
  while (process.hrtime.bigint() < dueNs) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Round trips per clock-offset estimate (after one that opens the socket): the lowest is kept. */
const CLOCK_SAMPLES = 8;

// Waits for acks: resolves when `ready()` holds; rejects on a link failure, or when no ack has
// arrived for `timeoutMs` (the clock restarts at every ack, so slow but moving transfers go on).
class AckWaiter {
  private wake: (() => void) | undefined;
  failure: Error | undefined;
  lastProgressMs = Date.now();
  /**
   * For a transport that drops images by design: after `afterMs()` of silence, `settle()` settles
   * what is outstanding as lost (true when it settled any), which counts as progress.
   */
  silence: { afterMs: () => number; settle: () => boolean } | undefined;

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
      const silentMs = Date.now() - this.lastProgressMs;
      if (this.silence !== undefined && silentMs >= Math.min(timeoutMs, this.silence.afterMs()) && this.silence.settle()) {
        this.lastProgressMs = Date.now();
        continue;
      }
      const remainingMs = this.lastProgressMs + timeoutMs - Date.now();
      if (remainingMs <= 0) throw new ItbError(ErrorCode.timeout, `no acknowledgement for ${timeoutMs} ms (IMAGE_TIMEOUT_MS) while waiting for ${waitingFor()}`);
      const untilSilenceMs = this.silence === undefined ? remainingMs : Math.max(1, this.lastProgressMs + this.silence.afterMs() - Date.now());
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(remainingMs, untilSilenceMs));
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

/** What one section's sends and acks produced on the transmitter's side. */
interface TransferOutcome {
  failure: string | null;
  cost: SideCost | null;
  /** Round trip of every recorded image in nanoseconds, by image; null where no ack came. */
  rttNs: (number | null)[];
  coldStart: TransmitterColdStart;
}

/**
 * The transports of repeat `repeat` (from 1) in run order: TRANSPORTS rotated by one place per
 * repeat (A B C, B C A, C A B, …), so no transport always follows the same neighbour.
 */
function rotatedOrder(names: readonly string[], repeat: number): string[] {
  const shift = (repeat - 1) % Math.max(1, names.length);
  return [...names.slice(shift), ...names.slice(0, shift)];
}

/** Builds a transmitter that sends `image` per the config; nothing happens until run(). */
export function buildTransmitter(config: Readonly<Config>, image: RunImage, log: Logger, observer?: RunObserver): TransmitterApp {
  const control = new ControlClient(config.receiverHost, config.controlPort, config.imageTimeoutMs);
  const checksum = imageChecksum(image.bytes);
  const transmitterHost = hostFacts(config.transports.map(transportByName));
  let receiverLost: string | undefined;

  /** One section's bookkeeping of stamps and acks, shared by its warm-up and recorded phases. */
  class Flight {
    /** Stamp of every seq, warm-up included (0 until stamped). */
    readonly stampsNs: BigInt64Array;
    readonly ackedAtNs: BigInt64Array;
    stamped = 0;
    acked = 0;
    /** One past the highest seq stamped (equals `stamped` unless RATE dropped some at the sender). */
    nextSeq = 0;
    /** Recorded images dropped at the sender under RATE (due while the window was full). */
    unsent = 0;
    /** Under RATE: each recorded image's stamp − due time in ns, by image; null when dropped at the sender. */
    dueLagNs: (number | null)[] | null = null;
    achievedRatePerSecond: number | null = null;
    /** For a transport that drops images by design: which are settled as lost (they free their window slot). */
    private readonly drops: DropLedger | undefined;
    private slowestRttNs = 0;
    /** Seq of the first recorded image, once the warm-up is over. */
    recordedFrom: number | undefined;
    /** Round trips of the warm-up images, for a warm-up that lasts until they are steady. */
    readonly steadiness: SteadinessCheck | undefined;
    /** Readings when the last recorded ack was processed: the end of the transmitter's cost span. */
    end: { reading: ResourceReading; peakRssBytes: number } | undefined;

    constructor(
      readonly plan: SectionPlan,
      private readonly progress: SectionProgress,
      private readonly waiter: AckWaiter,
      readonly rss: RssPeakTracker,
      dropsImages: boolean,
    ) {
      const seqs = warmupImageLimit(plan.warmup) + plan.imageCount;
      this.stampsNs = new BigInt64Array(seqs);
      this.ackedAtNs = new BigInt64Array(seqs);
      if (plan.warmup.mode === 'steady') this.steadiness = new SteadinessCheck(plan.warmup.blockImages, plan.warmup.tolerance);
      if (dropsImages) {
        const drops = new DropLedger(seqs);
        this.drops = drops;
        waiter.silence = {
          afterMs: () => Math.max(DROP_SETTLE_FLOOR_MS, (DROP_SETTLE_RTT_FACTOR * this.slowestRttNs) / 1e6),
          settle: () => drops.settleBelow(this.nextSeq) > 0,
        };
      }
    }

    /** Images settled as lost and never acknowledged since. */
    get lost(): number {
      return this.drops?.lost ?? 0;
    }

    /** Recorded images settled as lost and never acknowledged since. */
    lostAmongRecorded(): number {
      return this.recordedFrom === undefined ? 0 : (this.drops?.lostIn(this.recordedFrom, this.plan.imageCount) ?? 0);
    }

    /** Images stamped and neither acknowledged nor settled as lost: what holds the window. */
    get outstanding(): number {
      return this.stamped - this.acked - this.lost;
    }

    onAck(ack: Ack): void {
      const processedNs = process.hrtime.bigint();
      const { seq } = ack;
      if (ack.sectionId !== this.plan.sectionId || seq >= this.stampsNs.length || this.ackedAtNs[seq] !== 0n || this.stampsNs[seq] === 0n) return;
      if (this.drops !== undefined) {
        this.drops.acknowledged(seq);
        this.slowestRttNs = Math.max(this.slowestRttNs, Number(processedNs - this.stampsNs[seq]!));
      }
      this.ackedAtNs[seq] = processedNs;
      this.acked++;
      if (this.recordedFrom !== undefined && seq >= this.recordedFrom) {
        this.progress.acked++;
        if (this.progress.acked + this.unsent === this.plan.imageCount) this.end = { reading: readResources(), peakRssBytes: this.rss.stop() };
      } else {
        this.steadiness?.add(Number(processedNs - this.stampsNs[seq]!));
      }
      this.waiter.notify();
    }

    /** Stamps `seq` now and returns its encoded header. */
    stamp(seq: number): { header: Buffer; stampNs: bigint } {
      const stampNs = process.hrtime.bigint();
      const header = encodeFrameHeader({ sectionId: this.plan.sectionId, seq, sizeBytes: image.bytes.length, checksum, sentAtNs: stampNs });
      this.stampsNs[seq] = stampNs;
      this.stamped++;
      this.nextSeq = seq + 1;
      return { header, stampNs };
    }

    /** Under RATE: `seq` fell due while the window was full and is never sent. */
    dropAtSender(seq: number): void {
      this.unsent++;
      this.drops?.notSent(seq);
      this.nextSeq = seq + 1;
    }

    /** Round trip of seq in nanoseconds; null until it is acknowledged. */
    rttOf(seq: number): number | null {
      const acked = this.ackedAtNs[seq] ?? 0n;
      return acked === 0n ? null : Number(acked - this.stampsNs[seq]!);
    }

    rttNs(): (number | null)[] {
      const from = this.recordedFrom;
      return Array.from({ length: this.plan.imageCount }, (_, image) => (from === undefined ? null : this.rttOf(from + image)));
    }
  }

  // Sends seqs from `from` on while `more(seq)` holds, and returns the seq after the last one sent.
  // Every image the window admits (fewer than WINDOW stamped and not yet acknowledged) is stamped
  // at once, and only then are they handed to the link, in order: a library's synchronous work on
  // one image (a masked copy, an encode) is inside that image's time and the ones after it, never
  // between a free slot and its stamp. Then waits for every ack.
  async function sendPhase(link: TransmitterLink, flight: Flight, from: number, more: (seq: number) => boolean, waiter: AckWaiter, progress?: SectionProgress): Promise<number> {
    const { plan } = flight;
    const admitted: Buffer[] = [];
    let seq = from;
    while (more(seq)) {
      await waiter.until(() => flight.outstanding < plan.window, config.imageTimeoutMs, () => `a free slot in the window before image seq ${seq}`);
      for (; flight.outstanding < plan.window && more(seq); seq++) admitted.push(flight.stamp(seq).header);
      for (const header of admitted) link.send(header, image.bytes);
      if (progress) progress.sent += admitted.length;
      admitted.length = 0;
    }
    const sent = seq;
    await waiter.until(() => flight.acked + flight.lost >= sent, config.imageTimeoutMs, () => `${sent - flight.acked - flight.lost} outstanding acknowledgements`);
    return sent;
  }

  // Open loop (RATE): recorded image i is due at schedule.dueNs(i) whatever the acks do. Every
  // image due is stamped and handed over at once if fewer than WINDOW are unacknowledged, else it
  // is dropped at the sender and counted (the bound that keeps an overloaded transport from
  // queueing without end). Stamp − due is kept per image: latency from the due time corrects
  // coordinated omission. Then waits for every ack.
  async function openLoopPhase(link: TransmitterLink, flight: Flight, from: number, ratePerSecond: number, waiter: AckWaiter, progress: SectionProgress): Promise<void> {
    const { plan } = flight;
    const lags: (number | null)[] = (flight.dueLagNs = new Array<number | null>(plan.imageCount).fill(null));
    const schedule = new OpenLoopSchedule(ratePerSecond, process.hrtime.bigint());
    const admitted: Buffer[] = [];
    const sendTimesNs: bigint[] = [];
    let index = 0;
    while (index < plan.imageCount) {
      if (waiter.failure) throw waiter.failure;
      const due = Math.min(plan.imageCount, schedule.dueCount(process.hrtime.bigint()));
      for (; index < due; index++) {
        const seq = from + index;
        if (flight.outstanding >= plan.window) {
          flight.dropAtSender(seq);
          continue;
        }
        const { header, stampNs } = flight.stamp(seq);
        lags[index] = Number(stampNs - schedule.dueNs(index));
        sendTimesNs.push(stampNs);
        admitted.push(header);
      }
      for (const header of admitted) link.send(header, image.bytes);
      progress.sent += admitted.length;
      admitted.length = 0;
      if (index < plan.imageCount) await sleepUntil(schedule.dueNs(index));
    }
    flight.achievedRatePerSecond = achievedRate(sendTimesNs);
    await waiter.until(() => flight.acked + flight.lost >= flight.stamped, config.imageTimeoutMs, () => `${flight.stamped - flight.acked - flight.lost} outstanding acknowledgements`);
  }

  // The warm-up images: a fixed number, or until their round trips are steady (or a cap).
  async function warmUp(link: TransmitterLink, flight: Flight, waiter: AckWaiter): Promise<WarmupOutcome> {
    const startNs = process.hrtime.bigint();
    let decision = 'more' as WarmupDecision;
    // The medians as judged when the warm-up stopped, before the window's last acks came in.
    let reading: SteadinessReading | undefined;
    const more = (seq: number): boolean => {
      decision = warmupDecision(flight.plan.warmup, { elapsedMs: nsToMs(process.hrtime.bigint() - startNs), stampedImages: seq, ackedImages: flight.acked }, flight.steadiness);
      if (decision !== 'more') reading = flight.steadiness?.reading();
      return decision === 'more';
    };
    const images = await sendPhase(link, flight, 0, more, waiter);
    return {
      images,
      ms: images === 0 ? 0 : nsToMs(process.hrtime.bigint() - startNs),
      steady: decision === 'steady' ? true : decision === 'not steady' ? false : null,
      mediansMs: reading === undefined ? null : [reading.previousMedianNs / 1e6, reading.lastMedianNs / 1e6],
    };
  }

  // Warm-up, then the recorded images with the transmitter's resources measured from the first
  // recorded stamp to the last recorded ack.
  async function transfer(transport: Transport, plan: SectionPlan, credential: SectionCredential, progress: SectionProgress): Promise<TransferOutcome & { flight: Flight; warmedUp: WarmupOutcome | undefined }> {
    const waiter = new AckWaiter();
    const flight = new Flight(plan, progress, waiter, new RssPeakTracker(), transport.dropsImages !== undefined);
    let link: TransmitterLink | undefined;
    let cost: SideCost | null = null;
    let connectMs: number | null = null;
    let warmedUp: WarmupOutcome | undefined;
    const coldStart = (): TransmitterColdStart => ({ connectMs, firstImageRttMs: flight.stamped > 0 ? nullableMs(flight.rttOf(0)) : null });
    try {
      const connectStartNs = process.hrtime.bigint();
      link = await transport.connect({
        host: config.receiverHost,
        bindHost: config.bindHost,
        port: config.ports[transport.name] ?? 0,
        url: config.urls[transport.name],
        maxImageBytes: config.maxImageBytes,
        connectTimeoutMs: config.connectTimeoutMs,
        credential,
        imageBytes: image.bytes.length,
        window: plan.window,
        log: log.child({ transport: transport.name }),
        onAck: (ack) => flight.onAck(ack),
        onFailure: (err) => waiter.fail(err),
      });
      connectMs = nsToMs(process.hrtime.bigint() - connectStartNs);
      waiter.notify();
      warmedUp = await warmUp(link, flight, waiter);
      if (warmedUp.steady === false) log.warn({ transport: transport.name, warmupMs: Math.round(warmedUp.ms), warmupImages: warmedUp.images, mediansMs: warmedUp.mediansMs }, 'round trips not steady when the warm-up reached its cap (WARMUP_MAX_MS): the section is marked not steady');
      await control.startMeasuring(plan.sectionId, warmedUp);
      const from = warmedUp.images;
      flight.recordedFrom = from;
      waiter.notify();
      flight.rss.start();
      const start = readResources();
      progress.startedAtMs = Date.now();
      if (plan.ratePerSecond === null) await sendPhase(link, flight, from, (seq) => seq < from + plan.imageCount, waiter, progress);
      else await openLoopPhase(link, flight, from, plan.ratePerSecond, waiter, progress);
      const end = flight.end ?? { reading: readResources(), peakRssBytes: flight.rss.stop() };
      cost = sideCost(start, end.reading, end.peakRssBytes, plan.imageCount - flight.unsent);
      // Never silent: the receiver's record has the exact count of images that did not arrive.
      const lost = flight.lostAmongRecorded();
      const failure = lost > 0 ? `${transport.label} dropped images, as it may by design (${transport.dropsImages}): ${lost} never acknowledged` : null;
      if (lost > 0) log.warn({ transport: transport.name, unacknowledged: lost }, 'images dropped by the transport');
      return { failure, cost, rttNs: flight.rttNs(), coldStart: coldStart(), flight, warmedUp };
    } catch (err) {
      return { failure: errorMessage(err), cost, rttNs: flight.rttNs(), coldStart: coldStart(), flight, warmedUp };
    } finally {
      flight.rss.stop();
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

  async function runSection(transport: Transport, repeat: number, receiverHost: HostFacts, authToken: string): Promise<SectionResult> {
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
      warmup: warmupPlan(config),
      imageSizeBytes: image.bytes.length,
      window: config.window,
      ratePerSecond: config.ratePerSecond ?? null,
      clock: null,
    };
    log.info({ transport: transport.name, repeat, imageCount: plan.imageCount, imageSizeBytes: plan.imageSizeBytes, window: plan.window }, 'section start');
    observer?.sectionStarted(progress);
    let result: SectionResult;
    let outcome: Awaited<ReturnType<typeof transfer>> | undefined;
    try {
      plan = { ...plan, clock: await estimateClock(receiverHost) };
      await control.openSection(plan);
      outcome = await transfer(transport, plan, sectionCredential(authToken, plan.sectionId), progress);
      const { flight } = outcome;
      result = await control.endSection(plan.sectionId, {
        failure: outcome.failure,
        transmitterCost: outcome.cost,
        rttNs: outcome.rttNs,
        dueLagNs: flight.dueLagNs,
        achievedRatePerSecond: flight.achievedRatePerSecond,
        coldStart: outcome.coldStart,
      });
    } catch (err) {
      // The receiver could not take part (listener down) or is gone: then only the acks tell
      // what arrived, and the run stops after this section.
      if (err instanceof ItbError && err.code === ErrorCode.receiverUnreachable) receiverLost ??= err.message;
      const flight = outcome?.flight;
      const ackedSeqs = new Set<number>();
      if (flight) for (let seq = 0; seq < flight.ackedAtNs.length; seq++) if (flight.ackedAtNs[seq] !== 0n) ackedSeqs.add(seq);
      result =
        ackedSeqs.size > 0
          ? acknowledgedOnlyResult(plan, ackedSeqs, errorMessage(err), outcome?.warmedUp, { rttNs: outcome?.rttNs, coldStart: outcome?.coldStart, dueLagNs: flight?.dueLagNs, achievedRatePerSecond: flight?.achievedRatePerSecond })
          : new SectionRecorder(plan).result(errorMessage(err), { coldStart: outcome?.coldStart });
    }
    log.info({ transport: transport.name, repeat, ok: result.ok, okCount: result.okCount, lostCount: result.lostCount, corruptCount: result.corruptCount, totalMs: result.totalMs, failure: result.failure }, 'section end');
    observer?.sectionEnded(progress, result);
    return result;
  }

  return {
    async run() {
      const health = await control.waitUntilReady(config.connectTimeoutMs);
      // Read once the receiver answers: without AUTH_TOKEN it is the file the receiver creates at start.
      const authToken = transmitterAuthToken(config);
      control.authorize(authToken);
      const announcement: RunAnnouncement = {
        startedAt: new Date().toISOString(),
        imageDescription: image.description,
        imageSizeBytes: image.bytes.length,
        imageCount: config.imageCount,
        window: config.window,
        warmup: warmupPlan(config),
        repeat: config.repeat,
        transports: config.transports,
        arrivalNotes: config.transports.flatMap((name) => transportByName(name).batchedArrivals ?? []),
        config: publicConfig(config),
        hosts: { transmitter: transmitterHost },
      };
      await control.startRun(announcement);
      // WARMUP=0 is a cold run on purpose: nothing is warmed, not even the shared paths.
      if (config.warmup !== 0) exerciseSharedPaths(image.bytes);
      // Interleaved, one section of every transport per repeat, in an order rotated each repeat,
      // so drift on a shared machine and a neighbour's leftover garbage hit every transport alike.
      try {
        const sections: SectionResult[] = [];
        for (let repeat = 1; repeat <= config.repeat && receiverLost === undefined; repeat++) {
          for (const name of rotatedOrder(config.transports, repeat)) {
            sections.push(await runSection(transportByName(name), repeat, health.host, authToken));
            if (receiverLost !== undefined) break;
          }
        }
        if (receiverLost === undefined) return await control.finishRun();
        // The receiver is gone with its record: report what the transmitter knows, and stop.
        const report = buildRunReport({ ...announcement, hosts: { transmitter: transmitterHost, receiver: health.host } }, sections, `receiver went away: ${receiverLost}`);
        return { report, summary: renderSummary(report), succeeded: false, receiverLost };
      } finally {
        control.close();
      }
    },
  };
}
