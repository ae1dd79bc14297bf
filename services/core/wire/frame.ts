import { ErrorCode, ItbError } from '../errors.js';

// Every image travels as a fixed 40-byte header plus its bytes. The header is the only thing the
// receiver needs to time and verify an image, so every transport carries it unchanged.
// Layout (big-endian): magic u32 | version u16 | headerBytes u16 | sectionId u32 | seq u32 |
// sizeBytes u64 | checksum u64 | sentAtNs u64. The checksum is checksum.ts's imageChecksum, whose
// algorithm the version names: version 2 sums images over 16 KiB with XXH3-64 and the rest with
// xxHash64; version 1 (xxHash64 at every size) is refused as unsupported, never verified as corrupt.

/** Byte length of an encoded frame header. */
export const FRAME_HEADER_BYTES = 40;
/** Byte length of an encoded acknowledgement. */
export const ACK_BYTES = 12;

const MAGIC = 0x49544231; // "ITB1"
const VERSION = 2;
const SENT_AT_OFFSET = 32;

/** What the transmitter says about one image. */
export interface FrameHeader {
  sectionId: number;
  seq: number;
  sizeBytes: number;
  checksum: bigint;
  /** Transmitter's monotonic clock when the window admitted the image (its stamp). */
  sentAtNs: bigint;
}

/**
 * Receiver's answer on one image, sent back as soon as the image is in hand: accepted (recorded;
 * its bytes are verified after the ack, and the verdict goes into the
 * section's result) or rejected (a duplicate, or a frame for no open section).
 */
export type AckStatus = 'accepted' | 'rejected';

/** Acknowledgement of one image. */
export interface Ack {
  sectionId: number;
  seq: number;
  status: AckStatus;
  /**
   * Which of the section's receivers sends it (RECEIVERS > 1; 0 for the first or only one): a
   * pub/sub transport's one link hears every receiver. Raw acks carry it in their byte 9.
   */
  receiver?: number;
}

/**
 * Seqs from here on are commands (COMMAND_RATE), not images: the lane's small frames share the header, the link and the
 * ack with images, and the seq alone tells them apart, so no transport needs to know. Images never reach it
 * (MAX_IMAGE_COUNT is 10^9).
 */
export const COMMAND_SEQ_BASE = 2 ** 31;
/** Added to a command's seq when it was sent beside images; without it, it was sent with nothing else in flight. */
const COMMAND_BESIDE_OFFSET = 2 ** 30;

/** When a command was sent: with no image in flight, or while a section's images flowed. */
export type CommandPhase = 'alone' | 'beside';

/** The seq of command `index` (from 0) of `phase`. */
export function commandSeq(phase: CommandPhase, index: number): number {
  if (!(Number.isSafeInteger(index) && index >= 0 && index < COMMAND_BESIDE_OFFSET))
    throw new RangeError(`command index out of range: ${index}`);
  return COMMAND_SEQ_BASE + (phase === 'beside' ? COMMAND_BESIDE_OFFSET : 0) + index;
}

/** The command a seq names, or undefined when the seq is an image's. */
export function commandOf(seq: number): { phase: CommandPhase; index: number } | undefined {
  if (seq < COMMAND_SEQ_BASE) return undefined;
  const rest = seq - COMMAND_SEQ_BASE;
  return rest >= COMMAND_BESIDE_OFFSET
    ? { phase: 'beside', index: rest - COMMAND_BESIDE_OFFSET }
    : { phase: 'alone', index: rest };
}

/** Wire code of each status: its index. */
export const ACK_STATUS_CODES: readonly AckStatus[] = ['accepted', 'rejected'];

/** Encodes a header; the transmitter encodes it with the stamp it just took. */
export function encodeFrameHeader(header: FrameHeader): Buffer {
  // From Node's shared pool rather than an ArrayBuffer of its own per image: every byte is written below.
  const buf = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  buf.writeUInt32BE(MAGIC, 0);
  buf.writeUInt16BE(VERSION, 4);
  buf.writeUInt16BE(FRAME_HEADER_BYTES, 6);
  buf.writeUInt32BE(header.sectionId, 8);
  buf.writeUInt32BE(header.seq, 12);
  buf.writeBigUInt64BE(BigInt(header.sizeBytes), 16);
  buf.writeBigUInt64BE(header.checksum, 24);
  buf.writeBigUInt64BE(header.sentAtNs, SENT_AT_OFFSET);
  return buf;
}

/**
 * Decodes and checks a header: wrong length, magic or version, or a size over `maxImageBytes`,
 * throws ITB_ERR_FRAME before any payload memory is set aside for it.
 */
export function decodeFrameHeader(buf: Buffer, maxImageBytes: number): FrameHeader {
  if (buf.length !== FRAME_HEADER_BYTES) {
    throw new ItbError(ErrorCode.frame, `frame header is ${buf.length} bytes, expected ${FRAME_HEADER_BYTES}`);
  }
  const magic = buf.readUInt32BE(0);
  if (magic !== MAGIC) throw new ItbError(ErrorCode.frame, `bad frame magic 0x${magic.toString(16).padStart(8, '0')}`);
  const version = buf.readUInt16BE(4);
  if (version !== VERSION || buf.readUInt16BE(6) !== FRAME_HEADER_BYTES) {
    throw new ItbError(ErrorCode.frame, `unsupported frame version ${version}`);
  }
  const sizeBytes = buf.readBigUInt64BE(16);
  if (sizeBytes > BigInt(maxImageBytes)) {
    throw new ItbError(
      ErrorCode.frame,
      `frame announces ${sizeBytes} bytes, over MAX_IMAGE_SIZE (${maxImageBytes} bytes)`,
    );
  }
  return {
    sectionId: buf.readUInt32BE(8),
    seq: buf.readUInt32BE(12),
    sizeBytes: Number(sizeBytes),
    checksum: buf.readBigUInt64BE(24),
    sentAtNs: buf.readBigUInt64BE(SENT_AT_OFFSET),
  };
}

/** Encodes an acknowledgement for transports that carry raw bytes. */
export function encodeAck(ack: Ack): Buffer {
  // From the shared pool, as headers are; the receiver's index, then two padding bytes zeroed explicitly.
  const buf = Buffer.allocUnsafe(ACK_BYTES);
  buf.writeUInt32BE(ack.sectionId, 0);
  buf.writeUInt32BE(ack.seq, 4);
  buf.writeUInt8(ACK_STATUS_CODES.indexOf(ack.status), 8);
  buf.writeUInt8(ack.receiver ?? 0, 9);
  buf.fill(0, 10);
  return buf;
}

/** Decodes an acknowledgement; throws ITB_ERR_FRAME on a malformed one. */
export function decodeAck(buf: Buffer): Ack {
  const status = buf.length === ACK_BYTES ? ACK_STATUS_CODES[buf.readUInt8(8)] : undefined;
  if (status === undefined) throw new ItbError(ErrorCode.frame, `malformed ack of ${buf.length} bytes`);
  // The first (or only) receiver, 0, is left out: an ack that names no receiver is its.
  const ack: Ack = { sectionId: buf.readUInt32BE(0), seq: buf.readUInt32BE(4), status };
  const receiver = buf.readUInt8(9);
  if (receiver !== 0) ack.receiver = receiver;
  return ack;
}
