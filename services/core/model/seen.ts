// Which seqs of a section have arrived, to refuse duplicates and to list the lost at its end, in
// memory that does not grow with the section: a bitmap in chunks, and a chunk whose every seq has
// arrived is dropped and remembered as full. Images arrive nearly in order (a window apart), so
// only the chunks around the newest arrivals are held: a few KiB whatever the image count, and at
// worst (every chunk with a hole) one bit per image.

/** Seqs per chunk: 8 KiB of bits. */
const CHUNK_SEQS = 65_536;
const FULL = 'full';

/** A set of whole numbers (seqs) held as a chunked bitmap; see the module comment. */
export class SeenSet {
  private readonly chunks = new Map<number, Uint8Array | typeof FULL>();
  private readonly counts = new Map<number, number>();
  private total = 0;
  // The chunk the last add went to: arrivals come in order, so the next one almost always goes there too.
  private lastIndex = -1;
  private lastChunk: Uint8Array | undefined;
  private lastCount = 0;

  /** Seqs in the set. */
  get size(): number {
    return this.total;
  }

  /** True when `seq` is in the set. */
  has(seq: number): boolean {
    const chunk = this.chunks.get(Math.floor(seq / CHUNK_SEQS));
    if (chunk === undefined) return false;
    if (chunk === FULL) return true;
    const bit = seq % CHUNK_SEQS;
    return (chunk[bit >> 3]! & (1 << (bit & 7))) !== 0;
  }

  /** Adds `seq`; false when it was in the set already. */
  add(seq: number): boolean {
    const index = Math.floor(seq / CHUNK_SEQS);
    if (index !== this.lastIndex) {
      let chunk = this.chunks.get(index);
      if (chunk === FULL) return false;
      if (chunk === undefined) {
        chunk = new Uint8Array(CHUNK_SEQS / 8);
        this.chunks.set(index, chunk);
      }
      if (this.lastChunk !== undefined) this.counts.set(this.lastIndex, this.lastCount);
      this.lastIndex = index;
      this.lastChunk = chunk;
      this.lastCount = this.counts.get(index) ?? 0;
    }
    const chunk = this.lastChunk!;
    const bit = seq % CHUNK_SEQS;
    const mask = 1 << (bit & 7);
    if ((chunk[bit >> 3]! & mask) !== 0) return false;
    chunk[bit >> 3]! |= mask;
    this.total++;
    if (++this.lastCount === CHUNK_SEQS) {
      this.chunks.set(index, FULL);
      this.counts.delete(index);
      this.lastIndex = -1;
      this.lastChunk = undefined;
    }
    return true;
  }

  /** Every seq from `from` (inclusive) to `to` (exclusive) not in the set, in order. */
  *missing(from: number, to: number): Generator<number> {
    for (let seq = from; seq < to; seq++) {
      const chunk = this.chunks.get(Math.floor(seq / CHUNK_SEQS));
      if (chunk === FULL) {
        // Skip to the next chunk: nothing is missing in this one.
        seq = (Math.floor(seq / CHUNK_SEQS) + 1) * CHUNK_SEQS - 1;
        continue;
      }
      if (!this.has(seq)) yield seq;
    }
  }

  /** Bytes the bitmap holds now (for tests of its bound). */
  get heldBytes(): number {
    let bytes = 0;
    for (const chunk of this.chunks.values()) if (chunk !== FULL) bytes += chunk.length;
    return bytes;
  }
}
