import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import { FRAME_HEADER_BYTES } from '../../services/core/wire/frame.js';
import { grpcTransport } from '../../services/transports/grpc/transport.js';
import { eventually, openPair, stampedHeader, testLog, transferThrough } from '../helpers/harness.js';

// Only what is PARTICULAR to gRPC. The contract every transport shares (delivery of every size,
// handles after close, connect() timeout, bad magic and oversize headers, a delivery that throws,
// a receiver that goes away, connecting before the receiver listens) is tested for gRPC too by the
// shared suite in transports.test.ts. Here: grpc-js's message limits, fitted to MAX_IMAGE_SIZE on
// each side (exactly MAX_IMAGE_SIZE passes; over it the sender fails at once, and the receiver
// stays bounded by its own limit), and a frame the gate drops while the stream goes on (a message
// stream can resynchronise where a byte stream cannot).

const MIB = 1024 * 1024;
/** grpc-js's message limit for a MAX_IMAGE_SIZE: the image, its 40-byte header and 16 bytes of protobuf framing. */
const messageLimit = (maxImageBytes: number): number => maxImageBytes + FRAME_HEADER_BYTES + 16;

describe('grpc transport', () => {
  it('carries an image of exactly MAX_IMAGE_SIZE (12 MiB): ' +
    'the message limit leaves room for header and protobuf', async () => {
    const image = randomBytes(12 * MIB);
    const outcome = await transferThrough(grpcTransport, [image], { window: 1, maxImageBytes: 12 * MIB });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.received).toHaveLength(1);
    expect(outcome.received[0]?.bytes.equals(image)).toBe(true);
    expect(outcome.acks).toEqual([{ sectionId: 7, seq: 0, status: 'accepted' }]);
  }, 90_000);

  it('refuses to send an image over MAX_IMAGE_SIZE: the link fails at once with RESOURCE_EXHAUSTED, nothing ' +
    'delivered, no hang', async () => {
    // The receiver would take it (4 MiB): only the sender's own limit (1 MiB) stops it.
    const pair = await openPair(grpcTransport, { transmitterMaxImageBytes: MIB, receiverMaxImageBytes: 4 * MIB });
    try {
      const image = randomBytes(2 * MIB);
      const startedMs = Date.now();
      expect(pair.link.send(stampedHeader(image, 0), image)).toBeUndefined(); // returns at once, never throws
      await eventually(() => pair.seen.failures.length > 0, 5000);
      expect(Date.now() - startedMs).toBeLessThan(5000);
      expect(pair.seen.failures[0]).toMatchObject({
        code: ErrorCode.transport,
        message: expect.stringMatching(/RESOURCE_EXHAUSTED: Attempted to send message with a size larger than/),
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(pair.seen.failures).toHaveLength(1);
      expect(pair.seen.delivered).toEqual([]);
      expect(pair.seen.acks).toEqual([]);
    } finally {
      await pair.close();
    }
  }, 90_000);

  it('receiver stays bounded by its own MAX_IMAGE_SIZE: grpc-js refuses the message, nothing delivered, the ' +
    'listener keeps serving', async () => {
    // The sender's limit (4 MiB) lets a 2 MiB image out; the receiver's (1 MiB) must stop it.
    const pair = await openPair(grpcTransport, { receiverMaxImageBytes: MIB, transmitterMaxImageBytes: 4 * MIB });
    try {
      const image = randomBytes(2 * MIB);
      pair.link.send(stampedHeader(image, 0), image);
      await eventually(() => pair.seen.rejects.length > 0 && pair.seen.failures.length > 0);
      expect(pair.seen.delivered).toEqual([]);
      expect(pair.seen.acks).toEqual([]);
      expect(pair.seen.rejects).toHaveLength(1);
      expect(pair.seen.rejects[0]).toMatch(
        new RegExp(
          `^grpc from 127\\.0\\.0\\.1:\\d+: stream ended before the transmitter closed it: .*over ` +
            `the ${messageLimit(MIB)}-byte limit`,
        ),
      );
      expect(pair.seen.failures).toHaveLength(1);
      expect(pair.seen.failures[0]).toMatchObject({
        code: ErrorCode.transport,
        message: expect.stringMatching(/RESOURCE_EXHAUSTED: Received message larger than max/),
      });
    } finally {
      await pair.link.close();
    }
    // The refusal ended that one stream, not the server: the next section's link is served normally.
    await pair.section.reopen(pair.listener, 8);
    const acks: number[] = [];
    const next = await grpcTransport.connect({
      host: '127.0.0.1',
      bindHost: '127.0.0.1',
      port: pair.listener.port,
      url: undefined,
      maxImageBytes: MIB,
      log: testLog,
      connectTimeoutMs: 5000,
      imageBytes: 1024 * 1024,
      window: 64,
      credential: pair.section.credential,
      onAck: (ack) => acks.push(ack.seq),
      onFailure: (err) => pair.seen.failures.push(err),
    });
    try {
      const image = randomBytes(MIB); // exactly the receiver's MAX_IMAGE_SIZE
      next.send(stampedHeader(image, 1), image);
      await eventually(() => acks.length === 1);
      expect(acks).toEqual([1]);
      expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual([1]);
      expect(pair.seen.failures).toHaveLength(1);
    } finally {
      await next.close();
      await pair.listener.close();
    }
  }, 90_000);

  it('drops a frame with a truncated header, a wrong payload length or an empty header field, and keeps the stream ' +
    'going', async () => {
    const pair = await openPair(grpcTransport, { receiverMaxImageBytes: MIB, transmitterMaxImageBytes: MIB });
    try {
      const image = randomBytes(1000);
      pair.link.send(stampedHeader(image, 1).subarray(0, 39), image);
      pair.link.send(stampedHeader(image, 2, { sizeBytes: 999 }), image);
      pair.link.send(stampedHeader(image, 3, { sizeBytes: 1001 }), image);
      pair.link.send(Buffer.alloc(0), image); // an empty header field: protobuf leaves it out, it decodes as empty
      pair.link.send(stampedHeader(image, 4), image);
      await eventually(() => pair.seen.acks.length === 1 && pair.seen.rejects.length === 4);
      const source = String.raw`^grpc from 127\.0\.0\.1:\d+: `;
      expect(pair.seen.rejects).toHaveLength(4);
      expect(pair.seen.rejects[0]).toMatch(new RegExp(`${source}frame header is 39 bytes, expected 40$`));
      expect(pair.seen.rejects[1]).toMatch(new RegExp(`${source}image of 1000 bytes, its header announces 999$`));
      expect(pair.seen.rejects[2]).toMatch(new RegExp(`${source}image of 1000 bytes, its header announces 1001$`));
      expect(pair.seen.rejects[3]).toMatch(new RegExp(`${source}frame header is 0 bytes, expected 40$`));
      expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual([4]);
      const payload = pair.seen.delivered[0]!.payload;
      expect(Buffer.isBuffer(payload) ? payload.equals(image) : Buffer.concat(payload).equals(image)).toBe(true);
      expect(pair.seen.acks).toEqual([{ sectionId: 7, seq: 4, status: 'accepted' }]);
      expect(pair.seen.failures).toEqual([]);
    } finally {
      await pair.close();
    }
    expect(pair.seen.failures).toEqual([]);
  }, 90_000);
});
