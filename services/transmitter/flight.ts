import { DropLedger } from '../core/model/drops.js';
import { encodeFrameHeader, type Ack } from '../core/wire/frame.js';
import type { ClientFigures, SectionPlan } from '../core/model/section.js';
import { SteadinessCheck } from '../core/model/warmup.js';
import { SecondSeries } from '../core/model/second-series.js';
import type { OpenLoopSchedule } from '../core/model/schedule.js';
import { LatencyRecorder, nsBetween } from '../core/model/stats.js';
import type { ResourceReading } from '../core/model/cost.js';
import { readResources, type RssPeakTracker } from '../shared/resources.js';
import type { AckWaiter } from './ack-waiter.js';
import { InFlightTable, NOT_HELD } from './in-flight.js';

export { AckWaiter } from './ack-waiter.js';

// One section's bookkeeping on the transmitter: stamps and acks of the seqs in flight, and which
// client (connection) carried each. Each client has its own WINDOW; the section's images are dealt, one at
// a time and in turn, to whichever client has room. Stamping and acknowledging are on every image's path, so
// they make no object and no bigint beyond the stamp itself and the header the wire needs: the images in
// flight are columns of typed arrays (in-flight.ts), times are numbers taken from the stamps (nsBetween).

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

/** What every frame of the section carries besides its seq and stamp. */
export interface FrameFacts {
  sizeBytes: number;
  checksum: bigint;
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
  // The images some receiver is not done with (or done with a receiver's loss that a late ack may take back).
  private readonly inFlight: InFlightTable;
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
  /** The stamp {@link stamp} took last (0 before any). */
  lastStampNs = 0n;

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
    this.inFlight = new InFlightTable(2 ** Math.ceil(Math.log2(Math.max(1024, 4 * plan.clients * plan.window))));
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
    return this.inFlight.held;
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

  // Every receiver is done with the image of `entry`: it frees its client's slot, and is forgotten unless a
  // receiver's loss may still be taken back by a late ack.
  private maybeComplete(entry: number): void {
    const held = this.inFlight;
    const settledMask = held.ackedMask[entry]! | held.lostMask[entry]! | held.supersededMask[entry]!;
    if (held.done[entry] === 1 || settledMask >>> 0 !== this.allReceiversMask >>> 0) return;
    held.done[entry] = 1;
    this.completed++;
    this.completedBy[held.clients[entry]!]!++;
    if (held.lostMask[entry] === 0) held.forget(entry);
  }

  // A pipe's ledger settled `seq` as lost for `receiver`.
  private settleLost(seq: number, receiver: number): void {
    const held = this.inFlight;
    const entry = held.entryOf(seq);
    const bit = 1 << receiver;
    if (
      entry === NOT_HELD ||
      held.done[entry] === 1 ||
      (held.ackedMask[entry]! & bit) !== 0 ||
      (held.lostMask[entry]! & bit) !== 0
    )
      return;
    held.lostMask[entry]! |= bit;
    this.lostPairs++;
    if (this.isRecorded(seq)) this.recordedLostPairs++;
    this.maybeComplete(entry);
  }

  // `receiver` read `ackedSeq`: every earlier seq it has not acknowledged was written over before it could be read.
  private settleSuperseded(ackedSeq: number, receiver: number, from: Int32Array, processedNs: bigint): void {
    const held = this.inFlight;
    const bit = 1 << receiver;
    for (let seq = from[receiver]!; seq < ackedSeq; seq++) {
      const entry = held.entryOf(seq);
      if (entry === NOT_HELD || held.done[entry] === 1 || (held.ackedMask[entry]! & bit) !== 0) continue;
      held.supersededMask[entry]! |= bit;
      if (this.isRecorded(seq)) {
        this.recordedSupersededPairs++;
        if (this.receivers === 1) this.tally.rttSumNs += nsBetween(held.stampNs[entry]!, processedNs);
      }
      this.maybeComplete(entry);
    }
    if (ackedSeq + 1 > from[receiver]!) from[receiver] = ackedSeq + 1;
  }

  /** Takes `receiver`'s ack (RECEIVERS > 1: the ack names it, or the link it came on does). */
  onAck(ack: Ack, receiver: number): void {
    const processedNs = process.hrtime.bigint();
    const { seq } = ack;
    if (ack.sectionId !== this.plan.sectionId || receiver >= this.receivers) return;
    const held = this.inFlight;
    const entry = held.entryOf(seq);
    const bit = 1 << receiver;
    if (entry === NOT_HELD || (held.ackedMask[entry]! & bit) !== 0) return;
    if (this.supersededFrom !== undefined) this.settleSuperseded(seq, receiver, this.supersededFrom, processedNs);
    // Read before the entry may be forgotten below.
    const client = held.clients[entry]!;
    const stampNs = held.stampNs[entry]!;
    const dueLagNs = held.dueLagNs[entry]!;
    const ledger = this.ledgers?.[client * this.receivers + receiver];
    const rttNs = nsBetween(stampNs, processedNs);
    if (ledger !== undefined) {
      // With several clients, a receiver's acks reach any client's link (ZeroMQ's PUSH deals them
      // out), so a later image's ack may overtake an earlier one's: then only silence settles.
      ledger.acknowledged(seq, this.plan.clients === 1);
      this.slowestRttNs = Math.max(this.slowestRttNs, rttNs);
    }
    held.ackedMask[entry]! |= bit;
    const ackedMask = held.ackedMask[entry]!;
    const recorded = this.isRecorded(seq);
    // Settled as lost and acknowledged after all: taken back; it was already done with.
    if ((held.lostMask[entry]! & bit) !== 0) {
      held.lostMask[entry]! &= ~bit;
      this.lostPairs--;
      if (recorded) this.recordedLostPairs--;
      if (held.lostMask[entry] === 0 && held.done[entry] === 1) held.forget(entry);
    } else this.maybeComplete(entry);
    if (recorded) this.roundTrips?.(receiver, seq - this.recordedFrom! + 1, rttNs, dueLagNs);
    if (ackedMask >>> 0 === this.allReceiversMask >>> 0) {
      this.acked++;
      if (seq === 0) this.firstImageRttNs = rttNs;
      if (recorded) {
        const hasDueLag = !Number.isNaN(dueLagNs);
        this.tallyAcked(client, stampNs, processedNs, rttNs, hasDueLag ? dueLagNs : 0, hasDueLag);
      } else this.steadiness?.add(rttNs);
    }
    this.waiter.notify();
  }

  // A recorded image every receiver acknowledged: the transmitter's own figures of it. Times come in whole ns, and no
  // NaN for a due lag in a closed loop (`hasDueLag` false): neither is boxed on the heap when passed.
  private tallyAcked(
    client: number,
    stampNs: bigint,
    processedNs: bigint,
    rttNs: number,
    dueLagNs: number,
    hasDueLag: boolean,
  ): void {
    const tally = this.tally;
    tally.rtt.recordNs(rttNs);
    if (hasDueLag) tally.rttFromDue.recordNs(rttNs + dueLagNs);
    tally.rttSumNs += rttNs;
    if (tally.firstStampNs === undefined || stampNs < tally.firstStampNs) tally.firstStampNs = stampNs;
    if (tally.lastAckNs === undefined || processedNs > tally.lastAckNs) tally.lastAckNs = processedNs;
    tally.rttSeconds?.addNs(processedNs, 0, rttNs, true);
    const span = this.clientSpans[client]!;
    span.images++;
    if (span.firstStampNs === 0n || stampNs < span.firstStampNs) span.firstStampNs = stampNs;
    if (processedNs > span.lastAckNs) span.lastAckNs = processedNs;
    this.progress.acked++;
    // The last image of a latest-frame key is always read, after every superseded one was settled.
    const superseded = this.receivers === 1 ? this.recordedSupersededPairs : 0;
    if (this.progress.acked + superseded === this.plan.imageCount)
      this.end = { reading: readResources(), peakRssBytes: this.rss.stop() };
  }

  /**
   * Stamps `seq`, carried by `client`, now and returns its encoded header (the stamp is then {@link lastStampNs});
   * under RATE, `schedule` and `dueIndex` say when it was due. The header is a buffer of its own per image: a link
   * may send it uncopied (TransmitterLink.send).
   */
  stamp(seq: number, client: number, schedule?: OpenLoopSchedule, dueIndex = 0): Buffer {
    const stampNs = process.hrtime.bigint();
    const header = encodeFrameHeader({
      sectionId: this.plan.sectionId,
      seq,
      sizeBytes: this.frame.sizeBytes,
      checksum: this.frame.checksum,
      sentAtNs: stampNs,
    });
    const dueLagNs = schedule === undefined ? Number.NaN : schedule.lagNs(dueIndex, stampNs);
    this.inFlight.add(seq, stampNs, client, dueLagNs);
    if (this.ledgers !== undefined)
      for (let receiver = 0; receiver < this.receivers; receiver++)
        this.ledgers[client * this.receivers + receiver]!.open(seq);
    if (this.isRecorded(seq)) {
      this.recordedStamped++;
      if (!Number.isNaN(dueLagNs)) this.tally.sendLag.recordNs(dueLagNs);
    }
    this.stamped++;
    this.stampedBy[client]!++;
    this.nextSeq = seq + 1;
    this.lastStampNs = stampNs;
    return header;
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
