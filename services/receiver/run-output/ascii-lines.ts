// The per-image lines of output.log and of a section's CSV, written as bytes straight into a
// buffer: no string is built per image. They are written as images arrive, on the thread that
// stamps arrivals, so their cost is every image's; building them as strings (a template, then a
// join and a conversion to bytes per chunk) cost about 0.65 µs an image, this about a quarter of
// it. The text is the same as core/report/text/output-log.ts's renderImageLine (a unit test holds them equal).

import type { ImageStatus } from '../../core/model/section.js';

const ZERO = 0x30;
const NEWLINE = 0x0a;
const COMMA = 0x2c;
const DOT = 0x2e;
const MINUS = 0x2d;

/** Fixed pieces of the lines, as bytes once. */
const PIECES = {
  image: Buffer.from('Image ', 'latin1'),
  time: Buffer.from(' transmission time: ', 'latin1'),
  ms: Buffer.from(' ms', 'latin1'),
  twoClocks: Buffer.from(' (two clocks: ± the bound below)', 'utf8'),
  corrupt: Buffer.from(' (CORRUPT: checksum or size mismatch)', 'latin1'),
  lost: Buffer.from(': LOST (never arrived)', 'latin1'),
  superseded: Buffer.from(': superseded (written over before it was read)', 'latin1'),
  supersededStatus: Buffer.from('superseded', 'latin1'),
  ok: Buffer.from('ok', 'latin1'),
  corruptStatus: Buffer.from('corrupt', 'latin1'),
  lostStatus: Buffer.from('lost', 'latin1'),
};

/** Decimal digits of a whole number ≥ 0 below 10^16. */
function digitCount(value: number): number {
  let digits = 1;
  for (let bound = 10; value >= bound && digits < 16; bound *= 10) digits++;
  return digits;
}

/** Longest line written, in bytes: a chunk always has room for one more. */
const LINE_MAX_BYTES = 256;
/** Chunks kept for reuse once written: one being written, one filling, one spare. */
const SPARE_CHUNKS_MAX = 2;

/**
 * Lines appended into fixed-size chunks; a full chunk goes to `emit` (which owns it until it gives it back with
 * {@link giveBack}, if ever). Numbers are written digit by digit.
 */
export class AsciiLines {
  private chunk: Buffer;
  private at = 0;
  // Chunks written out and given back: a flush takes one of these before it makes a new one (a flush comes every
  // half second, and a new 256 KiB chunk each time was memory outside the heap that the collector counts).
  private readonly spareChunks: Buffer[] = [];
  // The memory of every chunk made here (never a slice of Node's shared pool): only these are taken back.
  private readonly chunkMemory = new WeakSet<ArrayBufferLike>();

  constructor(
    private readonly emit: (chunk: Buffer) => void,
    private readonly chunkBytes = 256 * 1024,
  ) {
    this.chunk = this.newChunk();
  }

  /** Bytes waiting in the current chunk. */
  get pendingBytes(): number {
    return this.at;
  }

  /** Hands over what is written so far (a partial chunk), if anything. */
  flush(): void {
    if (this.at === 0) return;
    const full = this.chunk.subarray(0, this.at);
    this.chunk = this.spareChunks.pop() ?? this.newChunk();
    this.at = 0;
    this.emit(full);
  }

  /**
   * Takes back a chunk `emit` was given, once it is written out: a later flush writes into it again. Only a chunk
   * made here is taken; any other buffer (a text's bytes, perhaps a slice of Node's shared pool) is left.
   */
  giveBack(chunk: Buffer): void {
    if (this.chunkMemory.has(chunk.buffer) && this.spareChunks.length < SPARE_CHUNKS_MAX)
      this.spareChunks.push(Buffer.from(chunk.buffer, 0, this.chunkBytes));
  }

  /** Any text (a heading, a section's figures): rare, so as a string, after what is pending. */
  text(text: string): void {
    this.flush();
    this.emit(Buffer.from(text));
  }

  /** output.log's line for an image (as renderImageLine words it). */
  imageLine(image: number, oneWayNs: number | null, status: ImageStatus, twoClocks: boolean): void {
    this.bytes(PIECES.image);
    this.uint(image);
    if (oneWayNs === null) this.bytes(status === 'superseded' ? PIECES.superseded : PIECES.lost);
    else {
      this.bytes(PIECES.time);
      this.msOfNs(oneWayNs);
      this.bytes(PIECES.ms);
      if (twoClocks) this.bytes(PIECES.twoClocks);
      if (status === 'corrupt') this.bytes(PIECES.corrupt);
    }
    this.end();
  }

  /** The CSV's line for an image: image,status,one_way_ns,round_trip_ns,due_lag_ns (empty where null). */
  csvLine(
    image: number,
    status: ImageStatus,
    oneWayNs: number | null,
    rttNs: number | null,
    dueLagNs: number | null,
  ): void {
    this.uint(image);
    this.byte(COMMA);
    this.bytes(
      status === 'ok'
        ? PIECES.ok
        : status === 'corrupt'
          ? PIECES.corruptStatus
          : status === 'superseded'
            ? PIECES.supersededStatus
            : PIECES.lostStatus,
    );
    this.byte(COMMA);
    if (oneWayNs !== null) this.int(oneWayNs);
    this.byte(COMMA);
    if (rttNs !== null) this.int(rttNs);
    this.byte(COMMA);
    if (dueLagNs !== null) this.int(dueLagNs);
    this.end();
  }

  // A chunk with memory of its own (allocUnsafeSlow: never a slice of the shared pool), remembered as one of ours.
  private newChunk(): Buffer {
    const chunk = Buffer.allocUnsafeSlow(this.chunkBytes);
    this.chunkMemory.add(chunk.buffer);
    return chunk;
  }

  private end(): void {
    this.byte(NEWLINE);
    if (this.at > this.chunkBytes - LINE_MAX_BYTES) this.flush();
  }

  private byte(value: number): void {
    this.chunk[this.at++] = value;
  }

  // A byte at a time: for pieces this short a native copy costs more than the loop.
  private bytes(piece: Buffer): void {
    const chunk = this.chunk;
    let at = this.at;
    for (let i = 0; i < piece.length; i++) chunk[at++] = piece[i]!;
    this.at = at;
  }

  // A whole number, rounded (the figures are whole ns; a float from a batch may carry a fraction).
  private int(value: number): void {
    const rounded = Math.round(value);
    if (rounded < 0) {
      this.byte(MINUS);
      this.uint(-rounded);
    } else this.uint(rounded);
  }

  // Digits from the last. Below 2^31 (every time under 2.1 s) in 32-bit integer steps, which V8
  // keeps in registers; above, in exact steps on doubles (the values stay below 2^53).
  private uint(value: number): void {
    const digits = digitCount(value);
    const chunk = this.chunk;
    if (value <= 0x7fffffff) {
      let rest = value | 0;
      for (let i = this.at + digits - 1; i >= this.at; i--) {
        const next = (rest / 10) | 0;
        chunk[i] = ZERO + (rest - next * 10);
        rest = next;
      }
    } else {
      let rest = value;
      for (let i = this.at + digits - 1; i >= this.at; i--) {
        const digit = rest % 10;
        chunk[i] = ZERO + digit;
        rest = (rest - digit) / 10;
      }
    }
    this.at += digits;
  }

  // As core/report/text/output-log.ts's msOfNs: rounded to the µs, half away from zero, three decimals.
  private msOfNs(ns: number): void {
    const us = Math.round(Math.abs(ns) / 1000);
    const fraction = us <= 0x7fffffff ? (us | 0) % 1000 : us % 1000;
    if (ns < 0 && us > 0) this.byte(MINUS);
    this.uint((us - fraction) / 1000);
    this.byte(DOT);
    const hundreds = (fraction / 100) | 0;
    const tens = ((fraction / 10) | 0) - hundreds * 10;
    this.byte(ZERO + hundreds);
    this.byte(ZERO + tens);
    this.byte(ZERO + (fraction - hundreds * 100 - tens * 10));
  }
}
