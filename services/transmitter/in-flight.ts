// The images of one section that some receiver is not done with (flight.ts): each one's stamp, client, due lag and
// which receivers acknowledged it, lost it or had it superseded, held in columns of typed arrays so that stamping and
// acknowledging an image makes no object. An image's entry is its place by seq in a ring (seq & mask: no hashing on
// the ack path); one still held when a newer seq needs that place (stuck in flight, or done with a receiver's loss
// that a late ack may take back) moves to a spare entry past the ring, found through a map. The spare entries double
// when every one is in use, never per image.

/** What {@link InFlightTable.entryOf} gives for an image not held. */
export const NOT_HELD = -1;

/** Spare entries at first: an image moves to one only when stuck or settled as lost. */
const INITIAL_SPARES = 64;

/** One section's images in flight, by seq, in columns: see the module comment. */
export class InFlightTable {
  /** Seq of each entry; -1 when the entry is free. */
  seqs: Float64Array;
  /** 1 once every receiver is done with the image (its window slot is free). */
  done: Uint8Array;
  /** The stamp the image's header carries (held by reference: nothing new is made). */
  stampNs: bigint[];
  clients: Int32Array;
  /** Under RATE: stamp − due time in ns; NaN in a closed loop or for a warm-up image. */
  dueLagNs: Float64Array;
  /** Receivers that acknowledged it, that it was settled as lost for, and that read a later image first: a bit each. */
  ackedMask: Int32Array;
  lostMask: Int32Array;
  supersededMask: Int32Array;
  /** Images held. */
  held = 0;
  private readonly ringMask: number;
  private readonly spareBySeq = new Map<number, number>();
  private readonly freeSpares: number[] = [];

  /** `ringSize`: a power of two, several windows' worth so a place is free long before its next seq comes. */
  constructor(private readonly ringSize: number) {
    this.ringMask = ringSize - 1;
    const entries = ringSize + INITIAL_SPARES;
    this.seqs = new Float64Array(entries).fill(-1);
    this.done = new Uint8Array(entries);
    this.stampNs = new Array<bigint>(entries).fill(0n);
    this.clients = new Int32Array(entries);
    this.dueLagNs = new Float64Array(entries);
    this.ackedMask = new Int32Array(entries);
    this.lostMask = new Int32Array(entries);
    this.supersededMask = new Int32Array(entries);
    for (let spare = entries - 1; spare >= ringSize; spare--) this.freeSpares.push(spare);
  }

  /** The entry of held image `seq`, or {@link NOT_HELD}. */
  entryOf(seq: number): number {
    const slot = seq & this.ringMask;
    if (this.seqs[slot] === seq) return slot;
    return this.spareBySeq.size === 0 ? NOT_HELD : (this.spareBySeq.get(seq) ?? NOT_HELD);
  }

  /** Holds newly stamped `seq` in its ring place (an image still held there moves to a spare entry) and returns it. */
  add(seq: number, stampNs: bigint, client: number, dueLagNs: number): number {
    const slot = seq & this.ringMask;
    if (this.seqs[slot] !== -1) this.moveAside(slot);
    this.seqs[slot] = seq;
    this.done[slot] = 0;
    this.stampNs[slot] = stampNs;
    this.clients[slot] = client;
    this.dueLagNs[slot] = dueLagNs;
    this.ackedMask[slot] = 0;
    this.lostMask[slot] = 0;
    this.supersededMask[slot] = 0;
    this.held++;
    return slot;
  }

  /** Nothing more can come for the image of `entry`: its entry is free again. */
  forget(entry: number): void {
    if (entry >= this.ringSize) {
      this.spareBySeq.delete(this.seqs[entry]!);
      this.freeSpares.push(entry);
    }
    this.seqs[entry] = -1;
    this.stampNs[entry] = 0n;
    this.held--;
  }

  // The image at ring place `slot` is still held: it moves to a spare entry.
  private moveAside(slot: number): void {
    if (this.freeSpares.length === 0) this.addSpares();
    const spare = this.freeSpares.pop()!;
    this.seqs[spare] = this.seqs[slot]!;
    this.done[spare] = this.done[slot]!;
    this.stampNs[spare] = this.stampNs[slot]!;
    this.clients[spare] = this.clients[slot]!;
    this.dueLagNs[spare] = this.dueLagNs[slot]!;
    this.ackedMask[spare] = this.ackedMask[slot]!;
    this.lostMask[spare] = this.lostMask[slot]!;
    this.supersededMask[spare] = this.supersededMask[slot]!;
    this.spareBySeq.set(this.seqs[slot]!, spare);
  }

  // Twice the spare entries: every column copied into one twice as long past the ring.
  private addSpares(): void {
    const entries = this.seqs.length;
    const grown = this.ringSize + 2 * (entries - this.ringSize);
    const longer = <T extends Float64Array | Uint8Array | Int32Array>(column: T, make: (length: number) => T): T => {
      const copy = make(grown);
      copy.set(column);
      return copy;
    };
    this.seqs = longer(this.seqs, (n) => new Float64Array(n).fill(-1));
    this.done = longer(this.done, (n) => new Uint8Array(n));
    this.clients = longer(this.clients, (n) => new Int32Array(n));
    this.dueLagNs = longer(this.dueLagNs, (n) => new Float64Array(n));
    this.ackedMask = longer(this.ackedMask, (n) => new Int32Array(n));
    this.lostMask = longer(this.lostMask, (n) => new Int32Array(n));
    this.supersededMask = longer(this.supersededMask, (n) => new Int32Array(n));
    for (let entry = entries; entry < grown; entry++) this.stampNs.push(0n);
    for (let spare = grown - 1; spare >= entries; spare--) this.freeSpares.push(spare);
  }
}
