import type { BrokerStamp } from './broker-split.js';

// The receiver's record holds each accepted frame from its arrival to its checksum verdict (the verifier's queue: one
// turn of the event loop at most) here, in columns by seq (seq & mask), so holding one makes no object on the path
// every image takes (recorder.ts). The stamps are the frame's own bigints, held by reference (nothing new is made);
// the columns double (and are laid out again) only when a seq finds its place still taken, never per image.

/** Places the columns start with: more than one turn's images at any window (they double if ever too few). */
const INITIAL_SLOTS = 256;

/** Accepted frames waiting for their verdicts, by seq: see the module comment. */
export class AwaitingVerdicts {
  // seq + 1 of the frame in each place; 0: free.
  private seqsPlusOne = new Float64Array(INITIAL_SLOTS);
  // In what order the frames came (a count), so the ones never verified are ended in that order.
  private arrivalOrder = new Float64Array(INITIAL_SLOTS);
  private sentAtNs: bigint[] = new Array<bigint>(INITIAL_SLOTS).fill(0n);
  private arrivalNs: bigint[] = new Array<bigint>(INITIAL_SLOTS).fill(0n);
  private sizeOk = new Uint8Array(INITIAL_SLOTS);
  private brokerStamps: (BrokerStamp | undefined)[] = new Array<BrokerStamp | undefined>(INITIAL_SLOTS).fill(undefined);
  private mask = INITIAL_SLOTS - 1;
  private held = 0;
  private arrivals = 0;
  /** The frame {@link take} took last: its send stamp (the transmitter's clock), arrival, size check, broker stamp. */
  takenSentAtNs = 0n;
  takenArrivalNs = 0n;
  takenSizeOk = false;
  takenBrokerStamp: BrokerStamp | undefined;

  /** Frames held. */
  get size(): number {
    return this.held;
  }

  /** Holds the frame of `seq` (an image's: below 2^31) until its verdict. */
  set(seq: number, sentAtNs: bigint, arrivalNs: bigint, sizeOk: boolean, brokerStamp: BrokerStamp | undefined): void {
    let slot = seq & this.mask;
    const taken = this.seqsPlusOne[slot]!;
    if (taken !== 0 && taken !== seq + 1) {
      this.grow(seq);
      slot = seq & this.mask;
    }
    if (this.seqsPlusOne[slot] === 0) this.held++;
    this.seqsPlusOne[slot] = seq + 1;
    this.arrivalOrder[slot] = this.arrivals++;
    this.sentAtNs[slot] = sentAtNs;
    this.arrivalNs[slot] = arrivalNs;
    this.sizeOk[slot] = sizeOk ? 1 : 0;
    this.brokerStamps[slot] = brokerStamp;
  }

  /** Takes the frame of `seq` out into the `taken…` fields; false when it is not held. */
  take(seq: number): boolean {
    const slot = seq & this.mask;
    if (this.seqsPlusOne[slot] !== seq + 1) return false;
    this.takenSentAtNs = this.sentAtNs[slot]!;
    this.takenArrivalNs = this.arrivalNs[slot]!;
    this.takenSizeOk = this.sizeOk[slot] === 1;
    this.takenBrokerStamp = this.brokerStamps[slot];
    this.seqsPlusOne[slot] = 0;
    // The stamps go with the frame: nothing here keeps them alive.
    this.sentAtNs[slot] = 0n;
    this.arrivalNs[slot] = 0n;
    this.brokerStamps[slot] = undefined;
    this.held--;
    return true;
  }

  /** The seqs held, in the order their frames came (read once, at the section's end). */
  seqsInArrivalOrder(): number[] {
    const slots: number[] = [];
    for (let slot = 0; slot <= this.mask && slots.length < this.held; slot++)
      if (this.seqsPlusOne[slot] !== 0) slots.push(slot);
    slots.sort((a, b) => this.arrivalOrder[a]! - this.arrivalOrder[b]!);
    return slots.map((slot) => this.seqsPlusOne[slot]! - 1);
  }

  // Twice the places (again while two frames held, or `seq`, would share one), every frame moved to its new place.
  private grow(seq: number): void {
    let slots = (this.mask + 1) * 2;
    while (!this.fits(slots, seq)) slots *= 2;
    const old = {
      seqsPlusOne: this.seqsPlusOne,
      arrivalOrder: this.arrivalOrder,
      sentAtNs: this.sentAtNs,
      arrivalNs: this.arrivalNs,
      sizeOk: this.sizeOk,
      brokerStamps: this.brokerStamps,
    };
    this.seqsPlusOne = new Float64Array(slots);
    this.arrivalOrder = new Float64Array(slots);
    this.sentAtNs = new Array<bigint>(slots).fill(0n);
    this.arrivalNs = new Array<bigint>(slots).fill(0n);
    this.sizeOk = new Uint8Array(slots);
    this.brokerStamps = new Array<BrokerStamp | undefined>(slots).fill(undefined);
    this.mask = slots - 1;
    for (let from = 0; from < old.seqsPlusOne.length; from++) {
      const seqPlusOne = old.seqsPlusOne[from]!;
      if (seqPlusOne === 0) continue;
      const to = (seqPlusOne - 1) & this.mask;
      this.seqsPlusOne[to] = seqPlusOne;
      this.arrivalOrder[to] = old.arrivalOrder[from]!;
      this.sentAtNs[to] = old.sentAtNs[from]!;
      this.arrivalNs[to] = old.arrivalNs[from]!;
      this.sizeOk[to] = old.sizeOk[from]!;
      this.brokerStamps[to] = old.brokerStamps[from];
    }
  }

  // True when every frame held, and `seq`, would have a place of its own among `slots` places.
  private fits(slots: number, seq: number): boolean {
    const used = new Set<number>([seq & (slots - 1)]);
    for (let slot = 0; slot <= this.mask; slot++) {
      const seqPlusOne = this.seqsPlusOne[slot]!;
      if (seqPlusOne === 0) continue;
      const place = (seqPlusOne - 1) & (slots - 1);
      if (used.has(place)) return false;
      used.add(place);
    }
    return true;
  }
}
