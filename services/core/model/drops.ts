// The transmitter's account of a transport that may drop images by design (pub/sub at a
// high-water mark). Such a transport delivers in order or not at all, so once an image is
// acknowledged every earlier one still unacknowledged will never arrive: it is settled as lost and
// frees its window slot. Images at the tail have no later ack to settle them: silence does (the
// caller decides how long). An image settled as lost whose ack comes after all is taken back. The
// receiver's record stays the exact count of what arrived; this only keeps the window moving.

/** Which seqs are acknowledged, and which settled as lost; see the module comment. */
export class DropLedger {
  /** Seqs sent through this ledger and neither acknowledged nor settled, in the order they were opened (ascending). */
  private readonly openSeqs = new Set<number>();
  private readonly openOrder: number[] = [];
  private openHead = 0;
  /** Seqs settled as lost and not taken back: as many as were lost, which a healthy run keeps at none. */
  private readonly lostSeqs = new Set<number>();

  /** `onLost` hears each seq as it is settled as lost. Memory follows the seqs open and lost, not the seqs sent. */
  constructor(private readonly onLost?: (seq: number) => void) {}

  /** A ledger with seqs 0 … count − 1 open: one client that carries every seq. */
  static opened(count: number, onLost?: (seq: number) => void): DropLedger {
    const ledger = new DropLedger(onLost);
    for (let seq = 0; seq < count; seq++) ledger.open(seq);
    return ledger;
  }

  /** Seqs settled as lost and not taken back. */
  get lost(): number {
    return this.lostSeqs.size;
  }

  /**
   * Entries the ledger holds now (for tests of its bound): its open and lost seqs, and the order list, acknowledged
   * seqs at its head until it is compacted.
   */
  get heldEntries(): number {
    return this.openSeqs.size + this.lostSeqs.size + this.openOrder.length;
  }

  /**
   * `seq` was sent through this ledger's client: open until acknowledged or settled (seqs are opened in ascending
   * order).
   */
  open(seq: number): void {
    this.openSeqs.add(seq);
    this.openOrder.push(seq);
  }

  /**
   * `seq` was acknowledged (each seq is reported once): every open seq below it is settled as lost
   * (unless `settlesEarlier` is false: acks that may overtake each other on the way back), and
   * `seq` itself is taken back if it was. Returns how many seqs were newly settled as lost.
   */
  acknowledged(seq: number, settlesEarlier = true): number {
    this.lostSeqs.delete(seq);
    this.openSeqs.delete(seq);
    const settled = settlesEarlier ? this.settleBelow(seq) : 0;
    this.dropClosedHead();
    return settled;
  }

  /** Settles every open seq below `end` (the stamped ones, when the link fell silent) as lost; returns how many. */
  settleBelow(end: number): number {
    let settled = 0;
    while (this.openHead < this.openOrder.length && this.openOrder[this.openHead]! < end) {
      const seq = this.openOrder[this.openHead++]!;
      if (!this.openSeqs.delete(seq)) continue;
      this.lostSeqs.add(seq);
      settled++;
      this.onLost?.(seq);
    }
    this.compact();
    return settled;
  }

  /** Seqs from `from` (count of them) settled as lost and not taken back. */
  lostIn(from: number, count: number): number {
    let lost = 0;
    for (const seq of this.lostSeqs) if (seq >= from && seq < from + count) lost++;
    return lost;
  }

  // The order list keeps only what is still open from its oldest on: acknowledged seqs at its head go.
  private dropClosedHead(): void {
    while (this.openHead < this.openOrder.length && !this.openSeqs.has(this.openOrder[this.openHead]!)) this.openHead++;
    this.compact();
  }

  private compact(): void {
    if (this.openHead > 4096 && this.openHead * 2 > this.openOrder.length) {
      this.openOrder.splice(0, this.openHead);
      this.openHead = 0;
    }
  }
}
