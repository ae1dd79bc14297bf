// The transmitter's account of a transport that may drop images by design (pub/sub at a
// high-water mark). Such a transport delivers in order or not at all, so once an image is
// acknowledged every earlier one still unacknowledged will never arrive: it is settled as lost and
// frees its window slot. Images at the tail have no later ack to settle them: silence does (the
// caller decides how long). An image settled as lost whose ack comes after all is taken back. The
// receiver's record stays the exact count of what arrived; this only keeps the window moving.

const OPEN = 0;
const ACKED = 1;
const LOST = 2;
/** Not sent through this ledger: dropped at the sender under RATE, or carried by another client. */
const UNSENT = 3;

/** Which seqs are acknowledged, and which settled as lost; see the module comment. */
export class DropLedger {
  private readonly states: Uint8Array;
  /** No seq below this is open. */
  private lowestOpen = 0;
  /** Seqs settled as lost and not taken back. */
  lost = 0;

  /**
   * `allOpen` false: every seq starts as not this ledger's, and {@link open} adds the ones it
   * carries (one ledger per client and receiver). `onLost` hears each seq as it is settled as lost.
   */
  constructor(seqs: number, allOpen = true, private readonly onLost?: (seq: number) => void) {
    this.states = new Uint8Array(seqs);
    if (!allOpen) this.states.fill(UNSENT);
  }

  /** `seq` was sent through this ledger's client: open until acknowledged or settled. */
  open(seq: number): void {
    this.states[seq] = OPEN;
  }

  /**
   * `seq` was acknowledged (each seq is reported once): every open seq below it is settled as lost
   * (unless `settlesEarlier` is false: acks that may overtake each other on the way back), and
   * `seq` itself is taken back if it was. Returns how many seqs were newly settled as lost.
   */
  acknowledged(seq: number, settlesEarlier = true): number {
    if (this.states[seq] === LOST) this.lost--;
    this.states[seq] = ACKED;
    return settlesEarlier ? this.settleBelow(seq) : 0;
  }

  /** Settles every open seq below `end` (the stamped ones, when the link fell silent) as lost; returns how many. */
  settleBelow(end: number): number {
    let settled = 0;
    const stop = Math.min(end, this.states.length);
    for (let seq = this.lowestOpen; seq < stop; seq++) {
      if (this.states[seq] !== OPEN) continue;
      this.states[seq] = LOST;
      settled++;
      this.onLost?.(seq);
    }
    this.lowestOpen = Math.max(this.lowestOpen, stop);
    this.lost += settled;
    return settled;
  }

  /** Seqs from `from` (count of them) settled as lost and not taken back. */
  lostIn(from: number, count: number): number {
    let lost = 0;
    for (const state of this.states.subarray(from, from + count)) if (state === LOST) lost++;
    return lost;
  }
}
