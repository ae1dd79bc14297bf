import zlib from 'node:zlib';
import { ErrorCode, ItbError } from '../errors.js';

// A generated image is a real PNG (any viewer opens it) whose size is exact to the byte, so a run
// can ask for "4 MB images" and every transport moves exactly that many bytes. Pixels are random,
// so neither PNG nor a transport's own compression (permessage-deflate, say) can shrink them.
// Layout: signature | IHDR | IDAT (zlib stream of stored blocks) | paDd (padding) | IEND.

/** The 8 bytes every PNG file starts with. */
export const PNG_SIGNATURE: Buffer = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Type of the padding chunk. The case of each letter is a flag bit (bit 5 of the byte):
 * p lowercase = ancillary (a decoder may ignore it), a lowercase = private (not a registered type),
 * D uppercase = reserved bit clear (required by the PNG spec), d lowercase = safe to copy (an editor
 * may keep it when it rewrites the image data). So every decoder skips it and the picture is intact.
 */
export const PADDING_CHUNK_TYPE = 'paDd';

/** Bytes before a chunk's data: length u32 and type. */
const CHUNK_HEAD_BYTES = 8;
const CHUNK_CRC_BYTES = 4;
/** Bytes a chunk adds around its data. */
const CHUNK_OVERHEAD_BYTES = CHUNK_HEAD_BYTES + CHUNK_CRC_BYTES;
const IHDR_DATA_BYTES = 13;
const ZLIB_HEADER_BYTES = 2;
const ADLER32_BYTES = 4;
/** Largest payload of one deflate stored block (its LEN field is 16 bits). */
const STORED_BLOCK_MAX_BYTES = 65_535;
/** A stored block's header: 1 byte BFINAL/BTYPE (padded to a byte boundary), LEN u16, NLEN u16. */
const STORED_BLOCK_HEADER_BYTES = 5;
const RGB_BYTES_PER_PIXEL = 3;
const MAX_GENERATED_PNG_BYTES = 2 ** 31;

/** Every byte of a generated PNG that is not pixel data, stored-block headers or padding. */
const FIXED_OVERHEAD_BYTES =
  PNG_SIGNATURE.length +
  (CHUNK_OVERHEAD_BYTES + IHDR_DATA_BYTES) + // IHDR
  CHUNK_OVERHEAD_BYTES +
  ZLIB_HEADER_BYTES +
  ADLER32_BYTES + // IDAT around its blocks
  CHUNK_OVERHEAD_BYTES + // paDd, possibly with no data
  CHUNK_OVERHEAD_BYTES; // IEND

/** Smallest PNG {@link generatePng} can make: one pixel in one stored block. */
export const MIN_GENERATED_PNG_BYTES = FIXED_OVERHEAD_BYTES + STORED_BLOCK_HEADER_BYTES + (1 + RGB_BYTES_PER_PIXEL);

/** Width and height of a PNG, as its IHDR chunk states them. */
export interface PngDimensions {
  width: number;
  height: number;
}

/** One PNG chunk: length, 4-letter type, data and the CRC-32 of type and data. */
export function pngChunk(type: string, data: Uint8Array): Buffer {
  const chunk = Buffer.allocUnsafe(CHUNK_OVERHEAD_BYTES + data.length);
  writeChunkFrame(chunk, 0, type, data.length);
  chunk.set(data, CHUNK_HEAD_BYTES);
  writeChunkCrc(chunk, 0, data.length);
  return chunk;
}

/**
 * A valid 8-bit RGB PNG of exactly `sizeBytes` bytes with random pixels from `seed`: the same
 * arguments always give the same bytes. Throws ITB_ERR_IMAGE outside
 * [{@link MIN_GENERATED_PNG_BYTES}, 2^31].
 */
export function generatePng(sizeBytes: number, seed: number): Buffer {
  if (!Number.isSafeInteger(sizeBytes) || sizeBytes < MIN_GENERATED_PNG_BYTES || sizeBytes > MAX_GENERATED_PNG_BYTES) {
    throw new ItbError(
      ErrorCode.image,
      `cannot generate a PNG of ${sizeBytes} bytes: the size must be a whole number ` +
        `from ${MIN_GENERATED_PNG_BYTES} to ${MAX_GENERATED_PNG_BYTES}`,
    );
  }
  const { width, height } = dimensionsFor(sizeBytes);
  const rowBytes = 1 + RGB_BYTES_PER_PIXEL * width; // filter type byte + pixels
  const rawBytes = rowBytes * height;
  const blockCount = Math.ceil(rawBytes / STORED_BLOCK_MAX_BYTES);
  const idatDataBytes = ZLIB_HEADER_BYTES + rawBytes + blockCount * STORED_BLOCK_HEADER_BYTES + ADLER32_BYTES;

  // Fill everything with noise first (aligned 32-bit writes are the fast path), then write the
  // structure over it; whatever noise is left between the headers is the pixel data and padding.
  // allocUnsafeSlow: never a slice of the shared pool, so always aligned and the bytes never
  // depend on where a small image happened to land in the pool.
  const png = Buffer.allocUnsafeSlow(sizeBytes);
  fillRandom(png, seed);

  let offset = 0;
  PNG_SIGNATURE.copy(png, offset);
  offset += PNG_SIGNATURE.length;

  const ihdr = Buffer.alloc(IHDR_DATA_BYTES);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour (RGB)
  // compression 0 (deflate), filter method 0, interlace 0 (none): left at 0 by Buffer.alloc
  offset += pngChunk('IHDR', ihdr).copy(png, offset);

  const idatStart = offset;
  writeChunkFrame(png, idatStart, 'IDAT', idatDataBytes);
  offset += CHUNK_HEAD_BYTES;
  // zlib header: CM=8 (deflate), CINFO=7 (32 KiB window), FLEVEL=0 (fastest); FCHECK makes it %31.
  png[offset++] = 0x78;
  png[offset++] = 0x01;
  const firstBlockData = offset + STORED_BLOCK_HEADER_BYTES;
  for (let block = 0; block < blockCount; block++) {
    const blockBytes = Math.min(STORED_BLOCK_MAX_BYTES, rawBytes - block * STORED_BLOCK_MAX_BYTES);
    png[offset] = block === blockCount - 1 ? 1 : 0; // BFINAL on the last block, BTYPE 00 (stored)
    png.writeUInt16LE(blockBytes, offset + 1);
    png.writeUInt16LE(blockBytes ^ 0xffff, offset + 3);
    offset += STORED_BLOCK_HEADER_BYTES + blockBytes;
  }
  // Filter type 0 (None) at the start of every row; rows straddle block boundaries freely.
  for (let row = 0; row < height; row++) {
    const raw = row * rowBytes;
    const block = Math.floor(raw / STORED_BLOCK_MAX_BYTES);
    png[
      firstBlockData + block * (STORED_BLOCK_MAX_BYTES + STORED_BLOCK_HEADER_BYTES) + (raw % STORED_BLOCK_MAX_BYTES)
    ] = 0;
  }
  png.writeUInt32BE(storedBlocksAdler32(png, firstBlockData, rawBytes), offset);
  offset += ADLER32_BYTES;
  writeChunkCrc(png, idatStart, idatDataBytes);
  offset += CHUNK_CRC_BYTES;

  // The padding keeps its noise: it is never shown, and random bytes keep the whole file
  // incompressible for transports that compress.
  const paddingBytes = sizeBytes - offset - 2 * CHUNK_OVERHEAD_BYTES;
  // a bug, not bad input
  if (paddingBytes < 0)
    throw new ItbError(ErrorCode.internal, `generatePng overran its budget ` + `by ${-paddingBytes} bytes`);
  writeChunkFrame(png, offset, PADDING_CHUNK_TYPE, paddingBytes);
  writeChunkCrc(png, offset, paddingBytes);
  offset += CHUNK_OVERHEAD_BYTES + paddingBytes;

  pngChunk('IEND', new Uint8Array(0)).copy(png, offset);
  return png;
}

/** Width and height from a PNG's IHDR chunk; throws ITB_ERR_IMAGE if the bytes are not a PNG. */
export function describePng(png: Uint8Array): PngDimensions {
  const bytes = Buffer.from(png.buffer, png.byteOffset, png.byteLength);
  if (bytes.length < PNG_SIGNATURE.length || !bytes.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)) {
    throw new ItbError(ErrorCode.image, 'not a PNG: the file does not start with the PNG signature');
  }
  const ihdrEnd = PNG_SIGNATURE.length + CHUNK_OVERHEAD_BYTES + IHDR_DATA_BYTES;
  if (
    bytes.length < ihdrEnd ||
    bytes.readUInt32BE(8) !== IHDR_DATA_BYTES ||
    bytes.toString('latin1', 12, 16) !== 'IHDR'
  ) {
    throw new ItbError(ErrorCode.image, 'not a valid PNG: no IHDR chunk after the signature');
  }
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/**
 * Roughly square dimensions whose stored-block zlib stream fits in `sizeBytes`, leaving less than
 * about one row for padding.
 */
function dimensionsFor(sizeBytes: number): PngDimensions {
  const budgetBytes = sizeBytes - FIXED_OVERHEAD_BYTES; // raw rows + stored-block headers
  const blockCount = Math.ceil(budgetBytes / (STORED_BLOCK_MAX_BYTES + STORED_BLOCK_HEADER_BYTES));
  // With this many block headers set aside, the rest needs at most `blockCount` blocks.
  const maxRawBytes = budgetBytes - blockCount * STORED_BLOCK_HEADER_BYTES;
  const width = Math.max(1, Math.floor(Math.sqrt(maxRawBytes / RGB_BYTES_PER_PIXEL)));
  const height = Math.floor(maxRawBytes / (1 + RGB_BYTES_PER_PIXEL * width));
  return { width, height };
}

/**
 * Fills `buf` with xorshift32 output. Words are written in the platform's byte order, which is
 * little-endian on every platform Node ships for, so the bytes are the same everywhere it runs.
 */
function fillRandom(buf: Buffer, seed: number): void {
  // Scramble the seed (murmur3-style mixing) so nearby seeds start far apart; xorshift needs state != 0.
  let state = Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b);
  state = Math.imul(state ^ (state >>> 13), 0xc2b2ae35);
  state = (state ^ (state >>> 16)) >>> 0 || 0x2545f491;

  // A bug, not bad input.
  if (buf.byteOffset % 4 !== 0) throw new ItbError(ErrorCode.internal, 'fillRandom needs a 4-byte aligned buffer');
  const wordCount = Math.floor(buf.length / 4);
  const words = new Uint32Array(buf.buffer, buf.byteOffset, wordCount);
  for (let i = 0; i < wordCount; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    words[i] = state;
  }
  for (let i = wordCount * 4; i < buf.length; i++) {
    state = xorshift32(state);
    buf[i] = state & 0xff;
  }
}

function xorshift32(state: number): number {
  state ^= state << 13;
  state ^= state >>> 17;
  state ^= state << 5;
  return state >>> 0;
}

/** Adler-32 of the bytes inside consecutive stored blocks, skipping their 5-byte headers. */
function storedBlocksAdler32(buf: Buffer, firstBlockData: number, rawBytes: number): number {
  const MOD = 65_521;
  // zlib's bound: the most bytes summed before `b` could pass 2^32, so the sums stay exact.
  const NMAX = 5_552;
  let a = 1;
  let b = 0;
  let blockData = firstBlockData;
  for (let remaining = rawBytes; remaining > 0; ) {
    const blockBytes = Math.min(STORED_BLOCK_MAX_BYTES, remaining);
    const end = blockData + blockBytes;
    for (let i = blockData; i < end; ) {
      const stop = Math.min(end, i + NMAX);
      for (; i < stop; i++) {
        a += buf[i]!;
        b += a;
      }
      a %= MOD;
      b %= MOD;
    }
    remaining -= blockBytes;
    blockData = end + STORED_BLOCK_HEADER_BYTES;
  }
  return ((b << 16) | a) >>> 0;
}

/** Writes a chunk's length and type at `at`. */
function writeChunkFrame(buf: Buffer, at: number, type: string, dataBytes: number): void {
  if (type.length !== 4 || !/^[A-Za-z]{4}$/.test(type))
    throw new ItbError(ErrorCode.internal, `bad PNG chunk type ${JSON.stringify(type)}`);
  buf.writeUInt32BE(dataBytes, at);
  buf.write(type, at + 4, 4, 'latin1');
}

/** Writes the CRC-32 of a chunk's type and data, which must already be in place at `at`. */
function writeChunkCrc(buf: Buffer, at: number, dataBytes: number): void {
  const crc = zlib.crc32(buf.subarray(at + 4, at + CHUNK_HEAD_BYTES + dataBytes));
  buf.writeUInt32BE(crc >>> 0, at + CHUNK_HEAD_BYTES + dataBytes);
}

/** The bundled sample picture, relative to the project's root (made by `npm run make-asset`). */
export const SAMPLE_ASSET_PATH = 'assets/sample.png';
/** Exact size of the sample picture: 533.0 KiB. */
export const SAMPLE_ASSET_BYTES = 545_792;
