import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ErrorCode, ItbError } from '../../services/core/errors.js';
import {
  MIN_GENERATED_PNG_BYTES,
  PADDING_CHUNK_TYPE,
  describePng,
  generatePng,
  pngChunk,
} from '../../services/core/model/png.js';

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

// CRC-32 as the PNG spec's sample code computes it, so the check does not lean on the zlib.crc32
// the implementation uses.
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function specCrc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

interface ParsedChunk {
  type: string;
  data: Buffer;
  crcValid: boolean;
}

/** Splits a PNG into its chunks; throws if a chunk runs past the end or bytes trail IEND. */
function parseChunks(png: Buffer): ParsedChunk[] {
  const chunks: ParsedChunk[] = [];
  let at = SIGNATURE.length;
  while (at < png.length) {
    const length = png.readUInt32BE(at);
    const end = at + 12 + length;
    if (end > png.length) throw new Error(`chunk at ${at} runs past the end`);
    const type = png.toString('latin1', at + 4, at + 8);
    const crcValid = png.readUInt32BE(at + 8 + length) === specCrc32(png.subarray(at + 4, at + 8 + length));
    chunks.push({ type, data: png.subarray(at + 8, at + 8 + length), crcValid });
    at = end;
    if (type === 'IEND' && at !== png.length) throw new Error(`${png.length - at} bytes after IEND`);
  }
  return chunks;
}

describe('pngChunk', () => {
  it('frames data with its length, type and CRC', () => {
    // IEND's bytes are the same in every PNG.
    expect([...pngChunk('IEND', new Uint8Array(0))]).toEqual([
      0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ]);
    const chunk = pngChunk('paDd', Buffer.from([1, 2, 3]));
    expect(chunk.length).toBe(15);
    expect(chunk.readUInt32BE(0)).toBe(3);
    expect(chunk.toString('latin1', 4, 8)).toBe('paDd');
    expect(chunk.readUInt32BE(11)).toBe(specCrc32(chunk.subarray(4, 11)));
  });
});

describe('generatePng', () => {
  it('has the smallest size the layout allows: one pixel, no padding', () => {
    // signature 8 + IHDR 25 + IDAT 12 + (zlib 2 + block header 5 + row 4 + adler 4) + paDd 12 + IEND 12
    expect(MIN_GENERATED_PNG_BYTES).toBe(84);
  });

  const cases = [
    { sizeBytes: MIN_GENERATED_PNG_BYTES, width: 1, height: 1, paddingBytes: 0 },
    { sizeBytes: MIN_GENERATED_PNG_BYTES + 1, width: 1, height: 1, paddingBytes: 1 },
    { sizeBytes: 1000, width: 17, height: 17, paddingBytes: 36 },
    { sizeBytes: 4096, width: 36, height: 36, paddingBytes: 92 },
    { sizeBytes: 545_792, width: 426, height: 426, paddingBytes: 818 },
    { sizeBytes: 1_000_000, width: 577, height: 577, paddingBytes: 481 },
    { sizeBytes: 4_000_000, width: 1154, height: 1154, paddingBytes: 3318 },
    { sizeBytes: 12_000_000, width: 1999, height: 2000, paddingBytes: 3005 },
  ];

  it.each(cases)(
    'makes a valid $width x $height PNG of exactly $sizeBytes bytes',
    ({ sizeBytes, width, height, paddingBytes }) => {
      const png = generatePng(sizeBytes, 1);
      expect(png.length).toBe(sizeBytes);
      expect([...png.subarray(0, 8)]).toEqual(SIGNATURE);

      const chunks = parseChunks(png);
      expect(chunks.map((c) => c.type)).toEqual(['IHDR', 'IDAT', PADDING_CHUNK_TYPE, 'IEND']);
      for (const chunk of chunks) expect(chunk.crcValid, `${chunk.type} CRC`).toBe(true);

      const ihdr = chunks[0]!.data;
      expect(ihdr.length).toBe(13);
      expect({
        width: ihdr.readUInt32BE(0),
        height: ihdr.readUInt32BE(4),
        bitDepth: ihdr[8],
        colourType: ihdr[9],
        compression: ihdr[10],
        filterMethod: ihdr[11],
        interlace: ihdr[12],
      }).toEqual({ width, height, bitDepth: 8, colourType: 2, compression: 0, filterMethod: 0, interlace: 0 });
      expect(describePng(png)).toEqual({ width, height });

      const rowBytes = 1 + 3 * width;
      const raw = zlib.inflateSync(chunks[1]!.data); // also checks the stream's Adler-32
      expect(raw.length).toBe(height * rowBytes);
      for (let row = 0; row < height; row++) expect(raw[row * rowBytes], `filter type of row ${row}`).toBe(0);

      expect(chunks[2]!.data.length).toBe(paddingBytes);
      expect(chunks[3]!.data.length).toBe(0);
    },
  );

  it('fills its pixels with noise no compressor can shrink', () => {
    const png = generatePng(1_000_000, 1);
    expect(zlib.deflateSync(png).length).toBeGreaterThan(png.length);
  });

  it.each([MIN_GENERATED_PNG_BYTES, 85, 1000, 4095])(
    'gives the same %i bytes wherever Node would have put a small buffer',
    (sizeBytes) => {
      const first = generatePng(sizeBytes, 5);
      for (let shift = 1; shift <= 3; shift++) {
        Buffer.allocUnsafe(shift); // moves the shared pool's next offset off 4-byte alignment
        expect(generatePng(sizeBytes, 5).equals(first), `after a ${shift}-byte allocation`).toBe(true);
      }
    },
  );

  it('gives the same bytes for the same seed and different bytes for another', () => {
    const a = generatePng(100_000, 1);
    expect(generatePng(100_000, 1).equals(a)).toBe(true);
    for (const seed of [0, 2, 3, 0xffffffff]) {
      const other = generatePng(100_000, seed);
      expect(other.length).toBe(a.length);
      expect(other.equals(a), `seed ${seed}`).toBe(false);
      // Different in the pixels, not just somewhere: the first 64 bytes after the zlib header.
      expect(other.subarray(50, 114).equals(a.subarray(50, 114)), `seed ${seed} pixels`).toBe(false);
    }
  });

  it.each([
    { sizeBytes: MIN_GENERATED_PNG_BYTES - 1 },
    { sizeBytes: 0 },
    { sizeBytes: -1 },
    { sizeBytes: 1000.5 },
    { sizeBytes: Number.NaN },
    { sizeBytes: 2 ** 31 + 1 },
  ])('refuses $sizeBytes bytes with ITB_ERR_IMAGE', ({ sizeBytes }) => {
    let thrown: unknown;
    try {
      generatePng(sizeBytes, 1);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ItbError);
    expect((thrown as ItbError).code).toBe(ErrorCode.image);
    expect((thrown as ItbError).code).toBe('ITB_ERR_IMAGE');
  });
});

describe('describePng', () => {
  it.each([
    { name: 'empty', bytes: Buffer.alloc(0) },
    { name: 'text', bytes: Buffer.from('hello, this is not a picture at all') },
    { name: 'JPEG', bytes: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1]) },
    { name: 'a signature alone', bytes: Buffer.from(SIGNATURE) },
    {
      name: 'a signature then IEND',
      bytes: Buffer.concat([Buffer.from(SIGNATURE), pngChunk('IEND', new Uint8Array(0)), Buffer.alloc(13)]),
    },
  ])('throws ITB_ERR_IMAGE for $name', ({ bytes }) => {
    expect(() => describePng(bytes)).toThrow(expect.objectContaining({ code: ErrorCode.image }));
  });

  it('reads width and height from IHDR', () => {
    const ihdr = Buffer.alloc(13);
    ihdr.writeUInt32BE(640, 0);
    ihdr.writeUInt32BE(480, 4);
    expect(describePng(Buffer.concat([Buffer.from(SIGNATURE), pngChunk('IHDR', ihdr)]))).toEqual({
      width: 640,
      height: 480,
    });
  });
});
