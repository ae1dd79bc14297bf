import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageChecksum } from '../../services/core/checksum.js';
import { ErrorCode, ItbError } from '../../services/core/errors.js';
import { encodeFrameHeader, stampSentAt, type Ack } from '../../services/core/frame.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../../services/shared/redis-server.js';
import type { ReceivedFrame, ReceiverListener, TransmitterLink } from '../../services/transports/contract.js';
import { redisTransport } from '../../services/transports/redis.js';
import { activeResources, leakedResources } from '../helpers/handles.js';
import { testLog, transferThrough } from '../helpers/harness.js';

// What only Redis has (the shared suite in transports.test.ts covers the contract): the stream
// must be trimmed as it goes, bytes must survive as bytes, and a missing Redis must fail fast
// with the URL in the message.

const STREAM_KEY = 'itb:frames';
const ACK_KEY = 'itb:acks';
const MAX_IMAGE_BYTES = 64 * 1024 * 1024;

let redis: PrivateRedis;
let inspector: Redis;
beforeAll(async () => {
  redis = await startPrivateRedis();
  inspector = new Redis(redis.url, { protocol: 2, retryStrategy: () => null });
  inspector.on('error', () => {});
});
afterAll(async () => {
  inspector?.disconnect();
  await redis?.close();
});


/** A receiver and a transmitter on the private Redis, kept open so a test can look inside Redis. */
async function openPair(url: string): Promise<{
  listener: ReceiverListener;
  link: TransmitterLink;
  delivered: { seq: number; bytes: Buffer }[];
  acks: Ack[];
  rejects: string[];
  failures: Error[];
  send(seq: number, image: Buffer): Promise<void>;
  waitForAcks(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}> {
  const delivered: { seq: number; bytes: Buffer }[] = [];
  const acks: Ack[] = [];
  const rejects: string[] = [];
  const failures: Error[] = [];
  const endpoint = { host: '127.0.0.1', bindHost: '127.0.0.1', port: 0, redisUrl: url, maxImageBytes: MAX_IMAGE_BYTES, log: testLog };
  const listener = await redisTransport.listen({
    ...endpoint,
    deliver(frame: ReceivedFrame): Ack {
      const bytes = Buffer.isBuffer(frame.payload) ? Buffer.from(frame.payload) : Buffer.concat(frame.payload);
      delivered.push({ seq: frame.header.seq, bytes });
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'ok' };
    },
    onReject: (reason) => rejects.push(reason),
  });
  const link = await redisTransport.connect({
    ...endpoint,
    connectTimeoutMs: 5000,
    onAck: (ack) => acks.push(ack),
    onFailure: (err) => failures.push(err),
  });
  return {
    listener,
    link,
    delivered,
    acks,
    rejects,
    failures,
    async send(seq, image) {
      const header = encodeFrameHeader({ sectionId: 1, seq, sizeBytes: image.length, checksum: imageChecksum(image), sentAtNs: 0n });
      stampSentAt(header, process.hrtime.bigint());
      await link.send(header, image);
    },
    async waitForAcks(count, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (acks.length < count) {
        if (failures.length > 0) throw failures[0];
        if (Date.now() > deadline) throw new Error(`timed out with ${acks.length}/${count} acks`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    async close() {
      await link.close();
      await listener.close();
    },
  };
}

/** Polls until `condition` holds; the trim travels in the same pipeline as the ack, so it is there at once or nearly. */
async function eventually(condition: () => Promise<boolean>, timeoutMs = 2000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function usedMemoryBytes(): Promise<number> {
  const info = await inspector.info('memory');
  const match = /used_memory:(\d+)/.exec(info);
  if (!match?.[1]) throw new Error('no used_memory in INFO memory');
  return Number(match[1]);
}

describe('redis transport: Redis specifics', () => {
  it('trims the stream as it goes: nothing pending, nothing left, memory flat over image count', async () => {
    const pair = await openPair(redis.url);
    try {
      const image = randomBytes(545_792);
      const window = 16;
      const sendBatch = async (from: number, count: number): Promise<void> => {
        for (let seq = from; seq < from + count; seq++) {
          await pair.waitForAcks(seq - window + 1);
          await pair.send(seq, image);
        }
        await pair.waitForAcks(from + count);
      };
      await sendBatch(0, 20);
      const isEmpty = async (): Promise<boolean> =>
        (await inspector.xlen(STREAM_KEY)) === 0 && (await inspector.llen(ACK_KEY)) === 0 && Number((await inspector.xpending(STREAM_KEY, 'itb-receivers'))[0]) === 0;
      expect(await eventually(isEmpty)).toBe(true);
      const memoryAfter20 = await usedMemoryBytes();
      await sendBatch(20, 100);
      expect(await eventually(isEmpty)).toBe(true);
      const memoryAfter120 = await usedMemoryBytes();
      // Untrimmed, 100 more images would be 54 MB more; allow a couple of images of buffers.
      expect(memoryAfter120 - memoryAfter20).toBeLessThan(2 * image.length);
      expect(pair.rejects).toEqual([]);
      expect(pair.failures).toEqual([]);
      expect(pair.delivered.every((d) => d.bytes.equals(image))).toBe(true);
    } finally {
      await pair.close();
    }
    // The receiver leaves no keys behind when it closes.
    expect(await inspector.exists(STREAM_KEY, ACK_KEY)).toBe(0);
  }, 60_000);

  it('carries images as identical bytes, including invalid UTF-8 and RESP-looking bytes', async () => {
    const images = [
      Buffer.from([0xff, 0xfe, 0xfd]),
      Buffer.from([0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x28, 0x8c, 0xbc]),
      Buffer.from([0x80, 0xbf, 0xed, 0xa0, 0x80, 0x00, 0x00, 0xef, 0xbf, 0xbd]),
      Buffer.from('*3\r\n$4\r\nPING\r\n$-1\r\n\r\n', 'latin1'),
      Buffer.alloc(70_000, 0xff),
      randomBytes(1_000_003),
    ];
    const outcome = await transferThrough(redisTransport, images, { window: 3, redisUrl: redis.url });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.received).toHaveLength(images.length);
    for (const r of outcome.received) {
      expect(r.bytes.length).toBe(images[r.seq]!.length);
      expect(r.bytes.equals(images[r.seq]!)).toBe(true);
    }
  }, 30_000);

  it('rejects malformed entries, trims them too, and still delivers the good ones', async () => {
    const pair = await openPair(redis.url);
    try {
      const good = encodeFrameHeader({ sectionId: 1, seq: 0, sizeBytes: 4, checksum: 0n, sentAtNs: 1n });
      const oversize = encodeFrameHeader({ sectionId: 1, seq: 0, sizeBytes: MAX_IMAGE_BYTES + 1, checksum: 0n, sentAtNs: 1n });
      await inspector.xadd(STREAM_KEY, '*', 'h', Buffer.from('not a header'), 'p', Buffer.from([1, 2, 3, 4]));
      await inspector.xadd(STREAM_KEY, '*', 'h', good);
      await inspector.xadd(STREAM_KEY, '*', 'h', good, 'p', Buffer.from([1, 2, 3]));
      await inspector.xadd(STREAM_KEY, '*', 'h', oversize, 'p', Buffer.from([1, 2, 3, 4]));
      await pair.send(5, Buffer.from([9, 8, 7, 6]));
      await pair.waitForAcks(1);
      expect(pair.rejects).toHaveLength(4);
      expect(pair.rejects.every((r) => r.startsWith('redis: '))).toBe(true);
      expect(pair.delivered.map((d) => d.seq)).toEqual([5]);
      expect(await eventually(async () => (await inspector.xlen(STREAM_KEY)) === 0)).toBe(true);
    } finally {
      await pair.close();
    }
  }, 30_000);

  it('listen() and connect() reject within seconds, naming the URL, when no Redis runs there', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const endpoint = { host: '127.0.0.1', bindHost: '127.0.0.1', port: 0, redisUrl: url, maxImageBytes: MAX_IMAGE_BYTES, log: testLog };
    const before = activeResources();

    let started = Date.now();
    const listenError = await redisTransport
      .listen({ ...endpoint, deliver: () => ({ sectionId: 0, seq: 0, status: 'ok' }), onReject: () => {} })
      .then(() => undefined, (err: unknown) => err);
    expect(Date.now() - started).toBeLessThan(8000);
    expect(listenError).toBeInstanceOf(ItbError);
    expect((listenError as ItbError).code).toBe(ErrorCode.transport);
    expect((listenError as ItbError).message).toContain(url);
    expect((listenError as ItbError).message).toContain('ECONNREFUSED');

    started = Date.now();
    const connectError = await redisTransport
      .connect({ ...endpoint, connectTimeoutMs: 1500, onAck: () => {}, onFailure: () => {} })
      .then(() => undefined, (err: unknown) => err);
    expect(Date.now() - started).toBeLessThan(4000);
    expect(connectError).toBeInstanceOf(ItbError);
    expect((connectError as ItbError).code).toBe(ErrorCode.timeout);
    expect((connectError as ItbError).message).toContain(url);
    expect(await leakedResources(before)).toEqual([]);
  }, 30_000);

  it('listen() and connect() reject clearly when REDIS_URL is not set', async () => {
    const endpoint = { host: '127.0.0.1', bindHost: '127.0.0.1', port: 0, redisUrl: undefined, maxImageBytes: MAX_IMAGE_BYTES, log: testLog };
    const listening = redisTransport.listen({ ...endpoint, deliver: () => ({ sectionId: 0, seq: 0, status: 'ok' }), onReject: () => {} });
    await expect(listening).rejects.toThrow(/REDIS_URL is not set/);
    await expect(listening).rejects.toMatchObject({ code: ErrorCode.transport });
    const connecting = redisTransport.connect({ ...endpoint, connectTimeoutMs: 1000, onAck: () => {}, onFailure: () => {} });
    await expect(connecting).rejects.toMatchObject({ code: ErrorCode.transport, message: expect.stringMatching(/REDIS_URL is not set/) });
  });

  it('reports a Redis that goes away mid-run through onFailure, once, and still closes cleanly', async () => {
    const doomed = await startPrivateRedis();
    const pair = await openPair(doomed.url);
    try {
      await pair.send(0, randomBytes(1000));
      await pair.waitForAcks(1);
      await doomed.close();
      const deadline = Date.now() + 5000;
      while (pair.failures.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(pair.failures).toHaveLength(1);
      expect(pair.failures[0]).toMatchObject({ code: ErrorCode.transport, message: expect.stringContaining(doomed.url) });
      await expect(pair.send(1, randomBytes(10))).rejects.toMatchObject({ code: ErrorCode.transport });
    } finally {
      const started = Date.now();
      await pair.close();
      await pair.close();
      expect(Date.now() - started).toBeLessThan(3000);
      await doomed.close();
    }
  }, 30_000);
});
