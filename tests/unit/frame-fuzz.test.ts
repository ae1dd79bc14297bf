import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCode, ItbError } from '../../services/core/errors.js';
import {
  decodeAck,
  decodeFrameHeader,
  encodeAck,
  encodeFrameHeader,
  FRAME_HEADER_BYTES,
} from '../../services/core/wire/frame.js';

// The frame decoder is the first thing hostile bytes reach: whatever they are, it either returns
// a header within MAX_IMAGE_SIZE or throws ITB_ERR_FRAME, never anything else.

const MAX_IMAGE_BYTES = 256 * 1024 * 1024;
const header = fc.record({
  sectionId: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  seq: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  sizeBytes: fc.integer({ min: 0, max: MAX_IMAGE_BYTES }),
  checksum: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  sentAtNs: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
});

function decodeOrFrameError(bytes: Buffer): void {
  try {
    const decoded = decodeFrameHeader(bytes, MAX_IMAGE_BYTES);
    expect(decoded.sizeBytes).toBeLessThanOrEqual(MAX_IMAGE_BYTES);
  } catch (err) {
    expect(err).toBeInstanceOf(ItbError);
    expect((err as ItbError).code).toBe(ErrorCode.frame);
  }
}

describe('frame decoder under fuzzing', () => {
  it('round-trips every valid header', () => {
    fc.assert(
      fc.property(header, (h) => {
        expect(decodeFrameHeader(encodeFrameHeader(h), MAX_IMAGE_BYTES)).toEqual(h);
      }),
      { numRuns: 2000 },
    );
  });

  it('returns a bounded header or throws ITB_ERR_FRAME for arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 80 }), (bytes) => decodeOrFrameError(Buffer.from(bytes))),
      { numRuns: 5000 },
    );
  });

  it('survives any single corrupted byte of a valid header, and any announced size', () => {
    fc.assert(
      fc.property(
        header,
        fc.integer({ min: 0, max: FRAME_HEADER_BYTES - 1 }),
        fc.integer({ min: 0, max: 255 }),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        (h, index, value, size) => {
          const bytes = encodeFrameHeader(h);
          bytes[index] = value;
          decodeOrFrameError(bytes);
          bytes.writeBigUInt64BE(size, 16);
          decodeOrFrameError(bytes);
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('decodes acks round-trip and rejects malformed ones with ITB_ERR_FRAME', () => {
    const status = fc.constantFrom('accepted' as const, 'rejected' as const);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        status,
        fc.integer({ min: 0, max: 31 }),
        (sectionId, seq, s, receiver) => {
          expect(decodeAck(encodeAck({ sectionId, seq, status: s, receiver }))).toStrictEqual({
            sectionId,
            seq,
            status: s,
            ...(receiver === 0 ? {} : { receiver }),
          });
        },
      ),
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 24 }), (bytes) => {
        try {
          decodeAck(Buffer.from(bytes));
        } catch (err) {
          expect((err as ItbError).code).toBe(ErrorCode.frame);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
