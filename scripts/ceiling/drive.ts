import { ceilingHeader, type CeilingSender } from '../../services/transports/ceiling-contract.js';

// The ceiling's closed loop, as the suite's WINDOW means it: an image is stamped when it is sent,
// and the next one goes as soon as fewer than `window` are unacknowledged. The only bookkeeping is
// a timestamp per image (its round trip). Warm-up images first, on the same link, untimed and all
// acknowledged before the first timed one goes, as the suite drains its warm-up. The span is the
// suite's too (services/core/model/section.ts, totalMs): from the first timed image's send stamp to the
// last timed image's arrival stamp at the receiver (both processes read one monotonic clock,
// process.hrtime.bigint(), on one host), not to its ack.

/** What one ceiling run is asked to do. */
export interface DriveOptions {
  image: Buffer;
  /** Images timed. */
  count: number;
  window: number;
  /** Images sent and acknowledged first, untimed. */
  warmup: number;
  /** A run fails when no ack arrives for this long. */
  ackTimeoutMs: number;
  /**
   * A latest-frame key (the pair's `supersedes`): an ack for an image settles every earlier unacknowledged one as
   * superseded, which frees its place in the window and counts in no figure.
   */
  supersedes?: boolean;
}

/** What one ceiling run measured. */
export interface CeilingFigures {
  /** 10^6 image bytes per second over spanMs. */
  MBps: number;
  imagesPerSecond: number;
  /** First timed send stamp to last timed arrival stamp (the receiver's), as the suite's totalMs. */
  spanMs: number;
  /** Round trips (send → ack) of the timed images. */
  rttP50Ms: number;
  rttP99Ms: number;
  /** CPU (user + system) of the sending process over the timed images. */
  senderCpuMs: number;
  /**
   * CPU (user + system) of the receiving process from the first timed arrival to the last ack (when the sender asks
   * for the last arrival); null when the two sides share one process (runInProcess), which cannot split them.
   */
  receiverCpuMs: number | null;
  /** Timed images delivered: all of them, less those superseded (written over before they were read). */
  count: number;
  /** Timed images superseded; 0 or absent but for a latest-frame key at a window over 1. */
  superseded?: number;
  imageBytes: number;
  window: number;
}

/** The sending half the driver works: the sender, and a hook for its acks. */
export interface DrivenLink {
  sender: CeilingSender;
  /** Set by the driver: the link calls it for every ack. */
  acked: (seq: number) => void;
  /** Set by the driver: the link calls it when it fails. */
  failed: (reason: string) => void;
  /** The receiver's report, asked once every image is acknowledged. */
  receiverReport(): Promise<ReceiverReport>;
}

/** What the receiver side tells the driver at the end of a run. */
export interface ReceiverReport {
  /** Its stamp of the last timed image's arrival; undefined when it has none. */
  lastArrivalNs: bigint | undefined;
  /** Its process's CPU since the first timed arrival (see CeilingFigures.receiverCpuMs). */
  receiverCpuMs: number | null;
}

/**
 * Runs warm-up then timed images over `link` and returns the timed figures; rejects on a failure or a silence of
 * ackTimeoutMs.
 */
export async function drive(link: DrivenLink, options: DriveOptions): Promise<CeilingFigures> {
  const { image, window } = options;
  const { startNs, rttsNs, cpu, superseded } = await sendAll(link, options);
  const count = options.count - superseded;
  const { lastArrivalNs, receiverCpuMs } = await link.receiverReport();
  if (lastArrivalNs === undefined || lastArrivalNs < startNs)
    throw new Error(
      `the receiver reported no arrival of a timed image after the first timed send (${lastArrivalNs ?? 'none'})`,
    );
  const spanNs = Number(lastArrivalNs - startNs);
  const sorted = rttsNs.sort((a, b) => a - b);
  const quantile = (q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! / 1e6;
  return {
    MBps: (count * image.length) / (spanNs / 1e9) / 1e6,
    imagesPerSecond: count / (spanNs / 1e9),
    spanMs: spanNs / 1e6,
    rttP50Ms: quantile(0.5),
    rttP99Ms: quantile(0.99),
    senderCpuMs: (cpu.user + cpu.system) / 1000,
    receiverCpuMs,
    count,
    superseded,
    imageBytes: image.length,
    window,
  };
}

/** What the sending loop hands back: the first timed send stamp, the timed round trips, the sender's CPU over them. */
interface Sent {
  startNs: bigint;
  rttsNs: number[];
  cpu: NodeJS.CpuUsage;
  /** Timed images superseded. */
  superseded: number;
}

/** Sends every image, warm-up drained before the first timed one; resolves at the last ack. */
function sendAll(link: DrivenLink, options: DriveOptions): Promise<Sent> {
  const { image, count, window, warmup } = options;
  const total = warmup + count;
  const sentAt = new Array<bigint>(total);
  const rttsNs: number[] = [];
  return new Promise<Sent>((resolve, reject) => {
    let next = 0;
    // Images acknowledged or superseded: done with.
    let acked = 0;
    // Superseded settling: the lowest seq not yet done with (a key's reads come in order).
    let lowestOpen = 0;
    let superseded = 0;
    let startNs = 0n;
    let cpuStart = process.cpuUsage();
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (error: Error | undefined, sent?: Sent): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(sent!);
    };
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(
        () => finish(new Error(`no ack for ${options.ackTimeoutMs} ms after ${acked} of ${total} images`)),
        options.ackTimeoutMs,
      );
    };
    const pump = (): void => {
      while (!done && next < total && next - acked < window) {
        // The warm-up drains first: no timed image is sent while a warm-up one is in flight.
        if (next === warmup && acked < warmup) return;
        const seq = next++;
        if (seq === warmup) cpuStart = process.cpuUsage();
        const stampNs = process.hrtime.bigint();
        sentAt[seq] = stampNs;
        if (seq === warmup) startNs = stampNs;
        link.sender.send(seq, ceilingHeader(seq, image.length), image);
      }
    };
    link.acked = (seq) => {
      if (done) return;
      const at = process.hrtime.bigint();
      const sent = sentAt[seq];
      if (sent === undefined) return finish(new Error(`an ack for image ${seq}, which was never sent`));
      if (options.supersedes) {
        // Below the ack: written over before they were read, unless acknowledged already.
        if (seq < lowestOpen) return;
        for (; lowestOpen < seq; lowestOpen++) {
          acked++;
          if (lowestOpen >= warmup) superseded++;
        }
        lowestOpen = seq + 1;
      }
      if (seq >= warmup) rttsNs.push(Number(at - sent));
      acked++;
      if (acked === total) return finish(undefined, { startNs, rttsNs, cpu: process.cpuUsage(cpuStart), superseded });
      arm();
      pump();
    };
    link.failed = (reason) => finish(new Error(reason));
    if (count < 1) return finish(new Error('a ceiling run needs at least one timed image'));
    arm();
    pump();
  });
}
