import { ErrorCode, ItbError } from '../core/errors.js';
import { DropLedger } from '../core/model/drops.js';
import { encodeFrameHeader, type Ack } from '../core/wire/frame.js';
import type { ClientFigures, SectionPlan } from '../core/model/section.js';
import { SteadinessCheck } from '../core/model/warmup.js';
import { SecondSeries } from '../core/model/second-series.js';
import { LatencyRecorder } from '../core/model/stats.js';
import type { ResourceReading } from '../core/model/cost.js';
import { readResources, type RssPeakTracker } from '../shared/resources.js';

// One section's bookkeeping on the transmitter: stamps and acks of the seqs in flight, and which
// client (connection) carried each. Each client has its own WINDOW; the section's images are dealt, one at
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
  /** DURATION: the section sends for this long instead of imageCount; null for a count. */
  durationMs?: number | null;
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
      if (
        this.silence !== undefined &&
        silentMs >= Math.min(timeoutMs, this.silence.afterMs()) &&
        this.silence.settle()
      ) {
        this.lastProgressMs = Date.now();
        continue;
      }
      const remainingMs = this.lastProgressMs + timeoutMs - Date.now();
      if (remainingMs <= 0)
        throw new ItbError(
          ErrorCode.timeout,
          `no acknowledgement for ${timeoutMs} ms (IMAGE_TIMEOUT_MS) while waiting for ${waitingFor()}`,
        );
      const untilSilenceMs =
        this.silence === undefined
          ? remainingMs
          : Math.max(1, this.lastProgressMs + this.silence.afterMs() - Date.now());
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

/** One stamped image some receiver is not done with: what its acks need, and nothing once it is done. */
interface InFlight {
  seq: number;
  /** Every receiver is done with it (its slot is free); kept only while a receiver's loss may be taken back. */
  done: boolean;
  stampNs: bigint;
  client: number;
  /** Under RATE: stamp − due time in ns; NaN in a closed loop or for a warm-up image. */
  dueLagNs: number;
  /** Receivers that acknowledged it, and those settled as lost, one bit each (RECEIVERS ≤ 32). */
  ackedMask: number;
  lostMask: number;
  /** Receivers for which a later image was read first (a latest-frame key): it will never be acknowledged. */
  supersededMask: number;
}

/** Where each recorded (image, receiver) round trip goes as its ack is processed: to that receiver, in batches. */
export type RoundTripSink = (receiver: number, image: number, rttNs: number, dueLagNs: number) => void;

/** The transmitter's own figures of the recorded images, kept as they come (nothing per image). */
export interface TransmitterTally {
  /** Round trips to the last receiver's ack, of every image every receiver acknowledged. */
  rtt: LatencyRecorder;
  /** Under RATE: stamp − due of every recorded image sent, and round trips counted from due. */
  sendLag: LatencyRecorder;
  rttFromDue: LatencyRecorder;
  /** Round trips by the second (since the first recorded stamp) their ack was processed in. */
  rttSeconds: SecondSeries | undefined;
  /**
   * Little's law over the recorded images: round trips summed (with, for a superseded image, its stamp to the ack that
   * settled it: the time it held its place in the window), first stamp, last ack.
   */
  rttSumNs: number;
  firstStampNs: bigint | undefined;
  lastAckNs: bigint | undefined;
}

/**
 * One section's bookkeeping of stamps and acks, shared by its warm-up and recorded phases. Each
 * image is stamped once and goes to every receiver (RECEIVERS); it holds its client's window slot
 * until every receiver has acknowledged it or it is settled as lost for the ones that have not.
 * Only images in flight are held (a window's worth), so memory does not grow with the section:
 * each recorded round trip leaves at its ack for the receiver's record.
 */
export class Flight {
  // Images held by seq in a ring (seq & mask: no hashing on the ack path), one displaced to a map
  // only when a newer seq needs its place while it is still held (an image stuck in flight, or
  // done with a receiver's loss that a late ack may take back).
  private readonly ring: (InFlight | undefined)[];
  private readonly ringMask: number;
  private readonly displaced = new Map<number, InFlight>();
  private held = 0;
  private readonly stampedBy: Int32Array;
  private readonly completedBy: Int32Array;
  /** The client the next image is offered to first: clients take turns. */
  private nextClient = 0;
  private readonly receivers: number;
  private readonly allReceiversMask: number;
  stamped = 0;
  /** Images every receiver acknowledged. */
  acked = 0;
  /** Images every receiver is done with (acknowledged, or settled as lost): they no longer hold a window slot. */
  completed = 0;
  /** (seq, receiver) pairs settled as lost and never acknowledged since; those among the recorded images. */
  private lostPairs = 0;
  private recordedLostPairs = 0;
  /**
   * For a transport that supersedes images: per receiver, the lowest seq not yet acknowledged or settled as
   * superseded; and the (seq, receiver) pairs settled so, among the recorded images.
   */
  private readonly supersededFrom: Int32Array | undefined;
  private recordedSupersededPairs = 0;
  /** One past the highest seq stamped. */
  nextSeq = 0;
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
  /** Round trip of seq 0 (the connection's first image) to its last receiver's ack, in ns. */
  firstImageRttNs: number | null = null;
  /** Recorded images stamped: the section's image count under DURATION. */
  recordedStamped = 0;
  readonly tally: TransmitterTally = {
    rtt: new LatencyRecorder(),
    sendLag: new LatencyRecorder(),
    rttFromDue: new LatencyRecorder(),
    rttSeconds: undefined,
    rttSumNs: 0,
    firstStampNs: undefined,
    lastAckNs: undefined,
  };
  /** Per client: recorded images every receiver acknowledged, its first recorded stamp and its last such ack. */
  private readonly clientSpans: { images: number; firstStampNs: bigint; lastAckNs: bigint }[];
  /** Set once recording starts: where recorded round trips go. */
  roundTrips: RoundTripSink | undefined;

  constructor(
    readonly plan: SectionPlan,
    private readonly frame: FrameFacts,
    private readonly progress: SectionProgress,
    private readonly waiter: AckWaiter,
    readonly rss: RssPeakTracker,
    dropsImages: boolean,
    supersedesImages = false,
  ) {
    this.receivers = plan.receivers;
    // Room for every image the windows admit at once, several times over, so a slot is free again long before its seq
    // comes round.
    const ringSize = 2 ** Math.ceil(Math.log2(Math.max(1024, 4 * plan.clients * plan.window)));
    this.ring = new Array<InFlight | undefined>(ringSize).fill(undefined);
    this.ringMask = ringSize - 1;
    this.allReceiversMask = plan.receivers >= 32 ? 0xffffffff : (1 << plan.receivers) - 1;
    this.stampedBy = new Int32Array(plan.clients);
    this.completedBy = new Int32Array(plan.clients);
    this.clientSpans = Array.from({ length: plan.clients }, () => ({ images: 0, firstStampNs: 0n, lastAckNs: 0n }));
    if (plan.warmup.mode === 'steady')
      this.steadiness = new SteadinessCheck(plan.warmup.blockImages, plan.warmup.tolerance, plan.warmup.blocks);
    if (supersedesImages) this.supersededFrom = new Int32Array(plan.receivers);
    if (dropsImages) {
      const ledgers = Array.from(
        { length: plan.clients * plan.receivers },
        (_, pipe) => new DropLedger((seq) => this.settleLost(seq, pipe % plan.receivers)),
      );
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

  /** Recorded (image, receiver) pairs settled as superseded: written over before that receiver read them. */
  supersededAmongRecorded(): number {
    return this.recordedSupersededPairs;
  }

  /** Recorded (image, receiver) pairs settled as lost and never acknowledged since. */
  lostAmongRecorded(): number {
    return this.recordedLostPairs;
  }

  /** Images stamped that some receiver is not done with: what holds the windows. */
  get outstanding(): number {
    return this.stamped - this.completed;
  }

  /**
   * Images held for their acks now (in flight, or done with a receiver's loss that a late ack may take back): bounded
   * by the windows and the losses.
   */
  get heldImages(): number {
    return this.held;
  }

  private outstandingOf(client: number): number {
    return this.stampedBy[client]! - this.completedBy[client]!;
  }

  /**
   * The client to carry the next image: the next in turn whose window has room; undefined when every window is full.
   */
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
    for (let client = 0; client < this.plan.clients; client++)
      if (this.outstandingOf(client) < this.plan.window) return true;
    return false;
  }

  private isRecorded(seq: number): boolean {
    return this.recordedFrom !== undefined && seq >= this.recordedFrom;
  }

  // Every receiver is done with the image: it frees its client's slot, and is forgotten unless a
  // receiver's loss may still be taken back by a late ack.
  private maybeComplete(seq: number, entry: InFlight): void {
    if (entry.done || (entry.ackedMask | entry.lostMask | entry.supersededMask) >>> 0 !== this.allReceiversMask >>> 0)
      return;
    entry.done = true;
    if (entry.lostMask === 0) this.forget(seq, entry);
    this.completed++;
    this.completedBy[entry.client]!++;
  }

  // The held image `seq`, wherever it is.
  private entryOf(seq: number): InFlight | undefined {
    const entry = this.ring[seq & this.ringMask];
    if (entry !== undefined && entry.seq === seq) return entry;
    return this.displaced.size === 0 ? undefined : this.displaced.get(seq);
  }

  // Nothing more can come for `seq`: its place goes.
  private forget(seq: number, entry: InFlight): void {
    const slot = seq & this.ringMask;
    if (this.ring[slot] === entry) this.ring[slot] = undefined;
    else this.displaced.delete(seq);
    this.held--;
  }

  // A pipe's ledger settled `seq` as lost for `receiver`.
  private settleLost(seq: number, receiver: number): void {
    const entry = this.entryOf(seq);
    const bit = 1 << receiver;
    if (entry === undefined || entry.done || (entry.ackedMask & bit) !== 0 || (entry.lostMask & bit) !== 0) return;
    entry.lostMask |= bit;
    this.lostPairs++;
    if (this.isRecorded(seq)) this.recordedLostPairs++;
    this.maybeComplete(seq, entry);
  }

  // `receiver` read `ackedSeq`: every earlier seq it has not acknowledged was written over before it could be read.
  private settleSuperseded(ackedSeq: number, receiver: number, from: Int32Array, processedNs: bigint): void {
    const bit = 1 << receiver;
    for (let seq = from[receiver]!; seq < ackedSeq; seq++) {
      const entry = this.entryOf(seq);
      if (entry === undefined || entry.done || (entry.ackedMask & bit) !== 0) continue;
      entry.supersededMask |= bit;
      if (this.isRecorded(seq)) {
        this.recordedSupersededPairs++;
        if (this.receivers === 1) this.tally.rttSumNs += Number(processedNs - entry.stampNs);
      }
      this.maybeComplete(seq, entry);
    }
    if (ackedSeq + 1 > from[receiver]!) from[receiver] = ackedSeq + 1;
  }

  /** Takes `receiver`'s ack (RECEIVERS > 1: the ack names it, or the link it came on does). */
  onAck(ack: Ack, receiver: number): void {
    const processedNs = process.hrtime.bigint();
    const { seq } = ack;
    if (ack.sectionId !== this.plan.sectionId || receiver >= this.receivers) return;
    const entry = this.entryOf(seq);
    const bit = 1 << receiver;
    if (entry === undefined || (entry.ackedMask & bit) !== 0) return;
    if (this.supersededFrom !== undefined) this.settleSuperseded(seq, receiver, this.supersededFrom, processedNs);
    const ledger = this.ledgers?.[entry.client * this.receivers + receiver];
    const rttNs = Number(processedNs - entry.stampNs);
    if (ledger !== undefined) {
      // With several clients, a receiver's acks reach any client's link (ZeroMQ's PUSH deals them
      // out), so a later image's ack may overtake an earlier one's: then only silence settles.
      ledger.acknowledged(seq, this.plan.clients === 1);
      this.slowestRttNs = Math.max(this.slowestRttNs, rttNs);
    }
    entry.ackedMask |= bit;
    const recorded = this.isRecorded(seq);
    // Settled as lost and acknowledged after all: taken back; it was already done with.
    if ((entry.lostMask & bit) !== 0) {
      entry.lostMask &= ~bit;
      this.lostPairs--;
      if (recorded) this.recordedLostPairs--;
      if (entry.lostMask === 0 && entry.done) this.forget(seq, entry);
    } else this.maybeComplete(seq, entry);
    if (recorded) this.roundTrips?.(receiver, seq - this.recordedFrom! + 1, rttNs, entry.dueLagNs);
    if (entry.ackedMask >>> 0 === this.allReceiversMask >>> 0) {
      this.acked++;
      if (seq === 0) this.firstImageRttNs = rttNs;
      if (recorded) this.tallyAcked(entry, processedNs, rttNs);
      else this.steadiness?.add(rttNs);
    }
    this.waiter.notify();
  }

  // A recorded image every receiver acknowledged: the transmitter's own figures of it.
  private tallyAcked(entry: InFlight, processedNs: bigint, rttNs: number): void {
    const tally = this.tally;
    tally.rtt.record(rttNs / 1e6);
    if (!Number.isNaN(entry.dueLagNs)) tally.rttFromDue.record((rttNs + entry.dueLagNs) / 1e6);
    tally.rttSumNs += rttNs;
    if (tally.firstStampNs === undefined || entry.stampNs < tally.firstStampNs) tally.firstStampNs = entry.stampNs;
    if (tally.lastAckNs === undefined || processedNs > tally.lastAckNs) tally.lastAckNs = processedNs;
    tally.rttSeconds?.add(processedNs, 0, rttNs / 1e6);
    const span = this.clientSpans[entry.client]!;
    span.images++;
    if (span.firstStampNs === 0n || entry.stampNs < span.firstStampNs) span.firstStampNs = entry.stampNs;
    if (processedNs > span.lastAckNs) span.lastAckNs = processedNs;
    this.progress.acked++;
    // The last image of a latest-frame key is always read, after every superseded one was settled.
    const superseded = this.receivers === 1 ? this.recordedSupersededPairs : 0;
    if (this.progress.acked + superseded === this.plan.imageCount)
      this.end = { reading: readResources(), peakRssBytes: this.rss.stop() };
  }

  /** Stamps `seq`, carried by `client`, now and returns its encoded header; `dueNs` is its due time under RATE. */
  stamp(seq: number, client: number, dueNs?: bigint): { header: Buffer; stampNs: bigint } {
    const stampNs = process.hrtime.bigint();
    const header = encodeFrameHeader({
      sectionId: this.plan.sectionId,
      seq,
      sizeBytes: this.frame.sizeBytes,
      checksum: this.frame.checksum,
      sentAtNs: stampNs,
    });
    const dueLagNs = dueNs === undefined ? Number.NaN : Number(stampNs - dueNs);
    const slot = seq & this.ringMask;
    const previous = this.ring[slot];
    if (previous !== undefined) this.displaced.set(previous.seq, previous);
    this.ring[slot] = { seq, done: false, stampNs, client, dueLagNs, ackedMask: 0, lostMask: 0, supersededMask: 0 };
    this.held++;
    if (this.ledgers !== undefined)
      for (let receiver = 0; receiver < this.receivers; receiver++)
        this.ledgers[client * this.receivers + receiver]!.open(seq);
    if (this.isRecorded(seq)) {
      this.recordedStamped++;
      if (!Number.isNaN(dueLagNs)) this.tally.sendLag.record(dueLagNs / 1e6);
    }
    this.stamped++;
    this.stampedBy[client]!++;
    this.nextSeq = seq + 1;
    return { header, stampNs };
  }

  /** The warm-up is over: seqs from `from` on are recorded, and their round trips go to `roundTrips`. */
  startRecording(from: number, roundTrips: RoundTripSink | undefined): void {
    this.recordedFrom = from;
    this.roundTrips = roundTrips;
    this.tally.rttSeconds = new SecondSeries(process.hrtime.bigint());
  }

  /**
   * Recorded images every receiver acknowledged: what the transmitter knows arrived when a receiver's record is gone.
   */
  get recordedAcked(): number {
    return this.progress.acked;
  }

  /**
   * Mean images in flight over the recorded span (Little's law: round trips summed ÷ first stamp to last ack); null
   * without a span.
   */
  meanInFlight(): number | null {
    const { firstStampNs, lastAckNs, rttSumNs } = this.tally;
    if (firstStampNs === undefined || lastAckNs === undefined || lastAckNs <= firstStampNs) return null;
    return rttSumNs / Number(lastAckNs - firstStampNs);
  }

  /**
   * Each client's recorded images every receiver acknowledged, and its rate over its own span (its
   * first recorded stamp to its last such ack); null with one client, where the section's figures
   * say it all.
   */
  clientFigures(): ClientFigures[] | null {
    if (this.plan.clients === 1 || this.recordedFrom === undefined) return null;
    return this.clientSpans.map(({ images, firstStampNs, lastAckNs }) => ({
      images,
      imagesPerSecond:
        images === 0 || lastAckNs <= firstStampNs ? null : (images * 1e9) / Number(lastAckNs - firstStampNs),
    }));
  }

  /** Frees the histograms. */
  destroy(): void {
    this.tally.rtt.destroy();
    this.tally.sendLag.destroy();
    this.tally.rttFromDue.destroy();
    this.tally.rttSeconds?.destroy();
  }
}
