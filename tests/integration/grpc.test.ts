import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { imageChecksum } from '../../services/core/checksum.js';
import { ErrorCode } from '../../services/core/errors.js';
import { encodeFrameHeader, stampSentAt, type Ack } from '../../services/core/frame.js';
import type { ReceivedFrame, ReceiverListener, TransmitterLink } from '../../services/transports/contract.js';
import { grpcTransport } from '../../services/transports/grpc.js';
import { activeResources, leakedResources } from '../helpers/handles.js';
import { testLog, transferThrough } from '../helpers/harness.js';

// What is particular to gRPC (the shared suite in transports.test.ts covers the contract): its
// 4 MB default message limit, the limit's bound on the receiver, and the channel's connect deadline.

const MIB = 1024 * 1024;


/** A frame as the transmitter builds it, stamped now. */
function frameOf(image: Buffer, seq: number, overrides: { sizeBytes?: number } = {}): Buffer {
  const header = encodeFrameHeader({ sectionId: 3, seq, sizeBytes: overrides.sizeBytes ?? image.length, checksum: imageChecksum(image), sentAtNs: 0n });
  stampSentAt(header, process.hrtime.bigint());
  return header;
}

/** A listener and a link opened by hand, with separate limits, recording what each side saw. */
async function openPair(limits: { receiverMaxImageBytes: number; transmitterMaxImageBytes: number }) {
  const seen = { delivered: [] as ReceivedFrame[], rejects: [] as string[], acks: [] as Ack[], failures: [] as Error[] };
  const listener: ReceiverListener = await grpcTransport.listen({
    host: '127.0.0.1', bindHost: '127.0.0.1', port: 0, redisUrl: undefined, maxImageBytes: limits.receiverMaxImageBytes, log: testLog,
    deliver(frame) {
      seen.delivered.push(frame);
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'ok' };
    },
    onReject(reason) {
      seen.rejects.push(reason);
    },
  });
  const link: TransmitterLink = await grpcTransport.connect({
    host: '127.0.0.1', bindHost: '127.0.0.1', port: listener.port, redisUrl: undefined, maxImageBytes: limits.transmitterMaxImageBytes, log: testLog,
    connectTimeoutMs: 5000,
    onAck(ack) {
      seen.acks.push(ack);
    },
    onFailure(err) {
      seen.failures.push(err);
    },
  });
  const close = async (): Promise<void> => {
    await link.close();
    await listener.close();
  };
  return { seen, link, listener, close };
}

/** Polls until `condition` holds; fails the test after `timeoutMs` rather than hanging. */
async function eventually(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A loopback port nothing listens on (bound once by the OS, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

describe('grpc transport', () => {
  it('carries an image of exactly MAX_IMAGE_SIZE (12 MiB): the message limit leaves room for header and protobuf', async () => {
    const image = randomBytes(12 * MIB);
    const outcome = await transferThrough(grpcTransport, [image], { window: 1, maxImageBytes: 12 * MIB });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.received[0]?.bytes.equals(image)).toBe(true);
  }, 30_000);

  it('refuses to send an image over MAX_IMAGE_SIZE: the link fails with RESOURCE_EXHAUSTED, no hang', async () => {
    const started = Date.now();
    await expect(transferThrough(grpcTransport, [randomBytes(2 * MIB)], { window: 1, maxImageBytes: MIB, timeoutMs: 10_000 })).rejects.toMatchObject({
      code: ErrorCode.transport,
      message: expect.stringMatching(/RESOURCE_EXHAUSTED: Attempted to send message with a size larger than/),
    });
    expect(Date.now() - started).toBeLessThan(5000);
  }, 30_000);

  it('receiver stays bounded by its own MAX_IMAGE_SIZE: an oversize frame is rejected, never delivered', async () => {
    const pair = await openPair({ receiverMaxImageBytes: MIB, transmitterMaxImageBytes: 4 * MIB });
    try {
      const image = randomBytes(2 * MIB);
      await pair.link.send(frameOf(image, 0), image);
      await eventually(() => pair.seen.rejects.length > 0 && pair.seen.failures.length > 0);
      expect(pair.seen.delivered).toEqual([]);
      expect(pair.seen.rejects[0]).toMatch(/over the 1048632-byte limit/);
      expect(pair.seen.failures[0]?.message).toMatch(/RESOURCE_EXHAUSTED: Received message larger than max/);
      expect(pair.seen.failures).toHaveLength(1);
      expect(pair.seen.failures[0]).toMatchObject({ code: ErrorCode.transport });
    } finally {
      await pair.close();
    }
  }, 30_000);

  it('drops a frame with a bad header or a wrong payload length, and keeps the stream going', async () => {
    const pair = await openPair({ receiverMaxImageBytes: MIB, transmitterMaxImageBytes: MIB });
    try {
      const image = randomBytes(1000);
      const badMagic = Buffer.from(frameOf(image, 0));
      badMagic.writeUInt32BE(0xdeadbeef, 0);
      await pair.link.send(badMagic, image);
      await pair.link.send(frameOf(image, 1).subarray(0, 39), image);
      await pair.link.send(frameOf(image, 2, { sizeBytes: 999 }), image);
      await pair.link.send(frameOf(image, 3, { sizeBytes: 2 * MIB }), image);
      await pair.link.send(frameOf(image, 4), image);
      await eventually(() => pair.seen.acks.length === 1);
      expect(pair.seen.rejects).toHaveLength(4);
      expect(pair.seen.rejects.join('\n')).toMatch(/magic[\s\S]*39 bytes[\s\S]*announces 999[\s\S]*over MAX_IMAGE_SIZE/);
      expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual([4]);
      expect(pair.seen.acks).toEqual([{ sectionId: 3, seq: 4, status: 'ok' }]);
      expect(pair.seen.failures).toEqual([]);
    } finally {
      await pair.close();
    }
  }, 30_000);

  it('reports the link failure once when the receiver goes away, and not after close()', async () => {
    const pair = await openPair({ receiverMaxImageBytes: MIB, transmitterMaxImageBytes: MIB });
    try {
      await pair.listener.close();
      await eventually(() => pair.seen.failures.length > 0);
      await pair.link.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(pair.seen.failures).toHaveLength(1);
      expect(pair.seen.failures[0]).toMatchObject({ code: ErrorCode.transport });
      await expect(pair.link.send(frameOf(Buffer.alloc(1), 0), Buffer.alloc(1))).rejects.toMatchObject({ code: ErrorCode.transport });
    } finally {
      await pair.close();
    }
  }, 30_000);

  it('close() of a healthy link reports no failure', async () => {
    const pair = await openPair({ receiverMaxImageBytes: MIB, transmitterMaxImageBytes: MIB });
    await pair.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(pair.seen.failures).toEqual([]);
    expect(pair.seen.rejects).toEqual([]);
  }, 30_000);

  it('connect() to a port nobody listens on rejects within connectTimeoutMs with ITB_ERR_TIMEOUT', async () => {
    const port = await closedPort();
    const before = activeResources();
    const started = Date.now();
    await expect(
      grpcTransport.connect({
        host: '127.0.0.1', bindHost: '127.0.0.1', port, redisUrl: undefined, maxImageBytes: MIB, log: testLog,
        connectTimeoutMs: 500,
        onAck() {},
        onFailure() {},
      }),
    ).rejects.toMatchObject({ code: ErrorCode.timeout, message: expect.stringContaining(`127.0.0.1:${port}`) });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(await leakedResources(before)).toEqual([]);
  }, 10_000);
});
