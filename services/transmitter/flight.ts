import { ErrorCode, ItbError } from '../core/errors.js';
import { DropLedger } from '../core/drops.js';
import { encodeFrameHeader, type Ack } from '../core/frame.js';
import type { ClientFigures, SectionPlan } from '../core/section.js';
import { SteadinessCheck, warmupImageLimit } from '../core/warmup.js';
import type { ResourceReading } from '../core/cost.js';
import { readResources, type RssPeakTracker } from '../shared/resources.js';

// One section's bookkeeping on the transmitter: stamps and acks of every seq, and which client
// (connection) carried it. Each client has its own WINDOW; the section's images are dealt, one at
// a time and in turn, to whichever client has room.

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

/**
 * Least silence after which the outstanding images of a transport that drops images are settled
 * as lost: above any round trip on loopback, so only a dropped image waits this long. The
 * receiver's record stays the exact count: an image that arrives later is recorded as it arrives.
 */
const DROP_SETTLE_FLOOR_MS = 1000;
/** The settle wait is also at least this many times the slowest round trip seen in the section. */
const DROP_SETTLE_RTT_FACTOR = 4;

/**
 * Waits for acks: resolves when `ready()` holds; rejects on a link failure, or when no ack has
 * arrived for `timeoutMs` (the clock restarts at every ack, so slow but moving transfers go on).
 */
export class AckWaiter {
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

/** What every frame of the section carries besides its seq and stamp. */
export interface FrameFacts {
  sizeBytes: number;
  checksum: bigint;
}

/** A (seq, receiver) pair's state: no ack yet, acknowledged, or settled as lost. */
const PAIR_OPEN = 0;
const PAIR_ACKED = 1;
const PAIR_LOST = 2;

/**
 * One section's bookkeeping of stamps and acks, shared by its warm-up and recorded phases. Each
 * image is stamped once and goes to every receiver (RECEIVERS); it holds its client's window slot
 * until every receiver has acknowledged it or it is settled as lost for the ones that have not.
 */
export class Flight {
  /** Stamp of every seq, warm-up included (0 until stamped). */
  readonly stampsNs: BigInt64Array;
  /** When each (seq, receiver) ack was processed, at seq × receivers + receiver (0 until then). */
  private readonly pairAckedNs: BigInt64Array;
  private readonly pairStates: Uint8Array;
  /** Per seq: receivers that acknowledged it, and receivers done with it (acknowledged or settled as lost). */
  private readonly acksOf: Uint8Array;
  private readonly resolvedOf: Uint8Array;
  /** When the last receiver's ack of each seq was processed (0 until every receiver acknowledged it). */
  private readonly ackedAtNs: BigInt64Array;
  /** The client that carried each seq. */
  private readonly clientOfSeq: Uint16Array;
  private readonly stampedBy: Int32Array;
  private readonly completedBy: Int32Array;
  /** The client the next image is offered to first: clients take turns. */
  private nextClient = 0;
  private readonly receivers: number;
  stamped = 0;
  /** Images every receiver acknowledged. */
  acked = 0;
  /** Images every receiver is done with (acknowledged, or settled as lost): they no longer hold a window slot. */
  completed = 0;
  /** (seq, receiver) pairs settled as lost and never acknowledged since. */
  private lostPairs = 0;
  /** One past the highest seq stamped. */
  nextSeq = 0;
  /** Under RATE: each recorded image's stamp − due time in ns, by image; null until it is sent. */
  dueLagNs: (number | null)[] | null = null;
  achievedRatePerSecond: number | null = null;
  /**
   * For a transport that drops images by design: one ledger per client and receiver (a pipe),
   * which says what is settled as lost. A pipe's images arrive in order or not at all; another
   * pipe's ack says nothing about them.
   */
  private readonly ledgers: DropLedger[] | undefined;
  private slowestRttNs = 0;
  /** Seq of the first recorded image, once the warm-up is over. */
  recordedFrom: number | undefined;
  /** Round trips of the warm-up images, for a warm-up that lasts until they are steady. */
  readonly steadiness: SteadinessCheck | undefined;
  /** Readings when the last recorded ack was processed: the end of the transmitter's cost span. */
  end: { reading: ResourceReading; peakRssBytes: number } | undefined;

  constructor(
    readonly plan: SectionPlan,
    private readonly frame: FrameFacts,
    private readonly progress: SectionProgress,
    private readonly waiter: AckWaiter,
    readonly rss: RssPeakTracker,
    dropsImages: boolean,
  ) {
    const seqs = warmupImageLimit(plan.warmup) + plan.imageCount;
    this.receivers = plan.receivers;
    this.stampsNs = new BigInt64Array(seqs);
    this.ackedAtNs = new BigInt64Array(seqs);
    this.pairAckedNs = new BigInt64Array(seqs * plan.receivers);
    this.pairStates = new Uint8Array(seqs * plan.receivers);
    this.acksOf = new Uint8Array(seqs);
    this.resolvedOf = new Uint8Array(seqs);
    this.clientOfSeq = new Uint16Array(seqs);
    this.stampedBy = new Int32Array(plan.clients);
    this.completedBy = new Int32Array(plan.clients);
    if (plan.warmup.mode === 'steady') this.steadiness = new SteadinessCheck(plan.warmup.blockImages, plan.warmup.tolerance, plan.warmup.blocks);
    if (dropsImages) {
      const ledgers = Array.from({ length: plan.clients * plan.receivers }, (_, pipe) => new DropLedger(seqs, false, (seq) => this.settleLost(seq, pipe % plan.receivers)));
      this.ledgers = ledgers;
      waiter.silence = {
        afterMs: () => Math.max(DROP_SETTLE_FLOOR_MS, (DROP_SETTLE_RTT_FACTOR * this.slowestRttNs) / 1e6),
        settle: () => ledgers.reduce((settled, ledger) => settled + ledger.settleBelow(this.nextSeq), 0) > 0,
      };
    }
  }

  /** (seq, receiver) pairs settled as lost and never acknowledged since. */
  get lost(): number {
    return this.lostPairs;
  }

  /** Recorded (image, receiver) pairs settled as lost and never acknowledged since. */
  lostAmongRecorded(): number {
    const from = this.recordedFrom;
    if (from === undefined || this.ledgers === undefined) return 0;
    let lost = 0;
    const end = (from + this.plan.imageCount) * this.receivers;
    for (let pair = from * this.receivers; pair < end; pair++) if (this.pairStates[pair] === PAIR_LOST) lost++;
    return lost;
  }

  /** Images stamped that some receiver is not done with: what holds the windows. */
  get outstanding(): number {
    return this.stamped - this.completed;
  }

  private outstandingOf(client: number): number {
    return this.stampedBy[client]! - this.completedBy[client]!;
  }

  /** The client to carry the next image: the next in turn whose window has room; undefined when every window is full. */
  clientWithRoom(): number | undefined {
    const clients = this.plan.clients;
    for (let tried = 0; tried < clients; tried++) {
      const client = (this.nextClient + tried) % clients;
      if (this.outstandingOf(client) < this.plan.window) {
        this.nextClient = (client + 1) % clients;
        return client;
      }
    }
    return undefined;
  }

  /** True when some client's window has room (without taking a turn). */
  hasRoom(): boolean {
    for (let client = 0; client < this.plan.clients; client++) if (this.outstandingOf(client) < this.plan.window) return true;
    return false;
  }

  // One more receiver is done with `seq`: the image completes (frees its slot) with the last one.
  private resolve(seq: number): void {
    if (++this.resolvedOf[seq]! < this.receivers) return;
    this.completed++;
    this.completedBy[this.clientOfSeq[seq]!]!++;
  }

  // A pipe's ledger settled `seq` as lost for `receiver`.
  private settleLost(seq: number, receiver: number): void {
    const pair = seq * this.receivers + receiver;
    if (this.pairStates[pair] !== PAIR_OPEN) return;
    this.pairStates[pair] = PAIR_LOST;
    this.lostPairs++;
    this.resolve(seq);
  }

  /** Takes `receiver`'s ack (RECEIVERS > 1: the ack names it, or the link it came on does). */
  onAck(ack: Ack, receiver: number): void {
    const processedNs = process.hrtime.bigint();
    const { seq } = ack;
    if (ack.sectionId !== this.plan.sectionId || seq >= this.stampsNs.length || receiver >= this.receivers || this.stampsNs[seq] === 0n) return;
    const pair = seq * this.receivers + receiver;
    const state = this.pairStates[pair];
    if (state === PAIR_ACKED) return;
    const client = this.clientOfSeq[seq]!;
    const ledger = this.ledgers?.[client * this.receivers + receiver];
    if (ledger !== undefined) {
      // With several clients, a receiver's acks reach any client's link (ZeroMQ's PUSH deals them
      // out), so a later image's ack may overtake an earlier one's: then only silence settles.
      ledger.acknowledged(seq, this.plan.clients === 1);
      this.slowestRttNs = Math.max(this.slowestRttNs, Number(processedNs - this.stampsNs[seq]!));
    }
    this.pairStates[pair] = PAIR_ACKED;
    this.pairAckedNs[pair] = processedNs;
    // Settled as lost and acknowledged after all: taken back; it was already done with.
    if (state === PAIR_LOST) this.lostPairs--;
    else this.resolve(seq);
    if (++this.acksOf[seq]! === this.receivers) {
      this.ackedAtNs[seq] = processedNs;
      this.acked++;
      if (this.recordedFrom !== undefined && seq >= this.recordedFrom) {
        this.progress.acked++;
        if (this.progress.acked === this.plan.imageCount) this.end = { reading: readResources(), peakRssBytes: this.rss.stop() };
      } else {
        this.steadiness?.add(Number(processedNs - this.stampsNs[seq]!));
      }
    }
    this.waiter.notify();
  }

  /** Stamps `seq`, carried by `client`, now and returns its encoded header. */
  stamp(seq: number, client: number): { header: Buffer; stampNs: bigint } {
    const stampNs = process.hrtime.bigint();
    const header = encodeFrameHeader({ sectionId: this.plan.sectionId, seq, sizeBytes: this.frame.sizeBytes, checksum: this.frame.checksum, sentAtNs: stampNs });
    this.stampsNs[seq] = stampNs;
    this.clientOfSeq[seq] = client;
    if (this.ledgers !== undefined) for (let receiver = 0; receiver < this.receivers; receiver++) this.ledgers[client * this.receivers + receiver]!.open(seq);
    this.stamped++;
    this.stampedBy[client]!++;
    this.nextSeq = seq + 1;
    return { header, stampNs };
  }

  /** Seqs every receiver acknowledged, warm-up included: what the transmitter knows arrived when a receiver's record is gone. */
  acknowledgedSeqs(): Set<number> {
    const seqs = new Set<number>();
    for (let seq = 0; seq < this.ackedAtNs.length; seq++) if (this.ackedAtNs[seq] !== 0n) seqs.add(seq);
    return seqs;
  }

  /** Round trip of seq in nanoseconds, to its last receiver's ack; null until every receiver acknowledged it. */
  rttOf(seq: number): number | null {
    const acked = this.ackedAtNs[seq] ?? 0n;
    return acked === 0n ? null : Number(acked - this.stampsNs[seq]!);
  }

  /** Round trip of every recorded image to `receiver`'s ack in nanoseconds, by image; null where it sent none. */
  rttNs(receiver = 0): (number | null)[] {
    const from = this.recordedFrom;
    return Array.from({ length: this.plan.imageCount }, (_, image) => {
      if (from === undefined) return null;
      const seq = from + image;
      const acked = this.pairAckedNs[seq * this.receivers + receiver] ?? 0n;
      return acked === 0n ? null : Number(acked - this.stampsNs[seq]!);
    });
  }

  /**
   * Each client's recorded images every receiver acknowledged, and its rate over its own span (its
   * first recorded stamp to its last such ack); null with one client, where the section's figures
   * say it all.
   */
  clientFigures(): ClientFigures[] | null {
    const from = this.recordedFrom;
    if (this.plan.clients === 1 || from === undefined) return null;
    const figures = Array.from({ length: this.plan.clients }, () => ({ images: 0, firstStampNs: 0n, lastAckNs: 0n }));
    for (let seq = from; seq < from + this.plan.imageCount; seq++) {
      const ackedNs = this.ackedAtNs[seq]!;
      if (ackedNs === 0n) continue;
      const client = figures[this.clientOfSeq[seq]!]!;
      const stampNs = this.stampsNs[seq]!;
      client.images++;
      if (client.firstStampNs === 0n || stampNs < client.firstStampNs) client.firstStampNs = stampNs;
      if (ackedNs > client.lastAckNs) client.lastAckNs = ackedNs;
    }
    return figures.map(({ images, firstStampNs, lastAckNs }) => ({ images, imagesPerSecond: images === 0 || lastAckNs <= firstStampNs ? null : (images * 1e9) / Number(lastAckNs - firstStampNs) }));
  }
}
