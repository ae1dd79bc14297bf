import { describe, expect, it } from 'vitest';
import { ErrorCode, ItbError } from '../../services/core/errors.js';
import {
  ACK_BYTES,
  decodeAck,
  decodeFrameHeader,
  encodeAck,
  encodeFrameHeader,
  FRAME_HEADER_BYTES,
  type FrameHeader,
} from '../../services/core/wire/frame.js';

const header: FrameHeader = {
  sectionId: 4_000_000_000,
  seq: 12,
  sizeBytes: 545_792,
  checksum: 0xfedcba9876543210n,
  sentAtNs: 123_456_789_012_345n,
};

describe('frame header', () => {
  it('encodes to 40 bytes with a fixed layout and decodes back', () => {
    const buf = encodeFrameHeader(header);
    expect(buf.length).toBe(FRAME_HEADER_BYTES);
    expect(buf.subarray(0, 8).toString('hex')).toBe('4954423100020028');
    expect(buf.readUInt32BE(8)).toBe(4_000_000_000);
    expect(buf.readUInt32BE(12)).toBe(12);
    expect(buf.readBigUInt64BE(16)).toBe(545_792n);
    expect(decodeFrameHeader(buf, 1_000_000)).toEqual(header);
  });

  it('writes every byte, though its buffer comes from the shared pool unzeroed', () => {
    // Dirty the pool first: a byte the encoder skipped would show up as garbage.
    Buffer.allocUnsafe(64).fill(0xee);
    expect(encodeFrameHeader(header).equals(Buffer.from(encodeFrameHeader(header)))).toBe(true);
    expect(encodeAck({ sectionId: 1, seq: 2, status: 'accepted' }).toString('hex')).toBe('000000010000000200000000');
  });

  const bad = (mutate: (b: Buffer) => Buffer): Buffer => mutate(encodeFrameHeader(header));
  it.each([
    ['a short buffer', bad((b) => b.subarray(0, 39)), /40/],
    ['a long buffer', bad((b) => Buffer.concat([b, Buffer.alloc(1)])), /41 bytes/],
    [
      'a wrong magic',
      bad((b) => {
        b.writeUInt32BE(0xdeadbeef, 0);
        return b;
      }),
      /magic 0xdeadbeef/,
    ],
    [
      'a wrong version',
      bad((b) => {
        b.writeUInt16BE(9, 4);
        return b;
      }),
      /version 9/,
    ],
    [
      // Version 1 summed every image with xxHash64: its large images would all look corrupt here.
      'the previous version, whose checksum is another algorithm',
      bad((b) => {
        b.writeUInt16BE(1, 4);
        return b;
      }),
      /unsupported frame version 1/,
    ],
    [
      'a size over the maximum',
      bad((b) => {
        b.writeBigUInt64BE(10n * 1024n ** 3n, 16);
        return b;
      }),
      /10737418240 bytes, over MAX_IMAGE_SIZE/,
    ],
  ])('rejects %s with ITB_ERR_FRAME', (_, buf, message) => {
    let caught: unknown;
    try {
      decodeFrameHeader(buf, 1_000_000);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ItbError);
    expect((caught as ItbError).code).toBe(ErrorCode.frame);
    expect((caught as ItbError).message).toMatch(message);
  });

  it('accepts a size exactly at the maximum', () => {
    expect(decodeFrameHeader(encodeFrameHeader({ ...header, sizeBytes: 1_000_000 }), 1_000_000).sizeBytes).toBe(
      1_000_000,
    );
  });
});

describe('ack', () => {
  it.each(['accepted', 'rejected'] as const)('round-trips status %s in 12 bytes', (status) => {
    const buf = encodeAck({ sectionId: 9, seq: 3, status });
    expect(buf.length).toBe(ACK_BYTES);
    expect(decodeAck(buf)).toStrictEqual({ sectionId: 9, seq: 3, status });
  });

  it('carries the receiver that sends it in byte 9 (RECEIVERS > 1), the last two bytes zero', () => {
    const buf = encodeAck({ sectionId: 9, seq: 3, status: 'accepted', receiver: 31 });
    expect([buf.readUInt8(9), buf.readUInt8(10), buf.readUInt8(11)]).toEqual([31, 0, 0]);
    expect(decodeAck(buf)).toEqual({ sectionId: 9, seq: 3, status: 'accepted', receiver: 31 });
  });

  it('rejects a malformed ack', () => {
    expect(() => decodeAck(Buffer.alloc(11))).toThrow(/malformed ack of 11 bytes/);
    const unknownStatus = encodeAck({ sectionId: 1, seq: 1, status: 'accepted' });
    unknownStatus.writeUInt8(7, 8);
    expect(() => decodeAck(unknownStatus)).toThrow(/malformed/);
  });
});
