import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import { encodeFrameHeader, type Ack } from '../../services/core/wire/frame.js';
import { freePort } from '../../services/shared/net.js';
import type { LocalServer, ReceiverOptions } from '../../services/transports/contract.js';
import { redisTransport, sectionKeys, type SectionKeys } from '../../services/transports/redis/transport.js';
import { activeResources, leakedResources } from '../helpers/handles.js';
import { sectionCredential } from '../../services/core/wire/auth.js';
import { eventually, openPair, pump, stampedHeader, testDoor, testLog, transferThrough } from '../helpers/harness.js';

// Only what is PARTICULAR to Redis. The contract every transport shares (delivery of every size,
// handles after close, connect() timeout, bad magic and oversize headers, a delivery that throws,
// the broker going away as one failure of the link) is tested for Redis too by the shared suite in
// transports.test.ts. Here: the stream is trimmed as it goes (memory flat over the image count),
// bytes survive as bytes, entries not written by a transmitter are rejected and trimmed too, a
// missing Redis or REDIS_URL fails fast naming it, Redis going away mid-run fails the listener as
// well as the link, and the broker's own CPU and memory are read for the cost report.

const GROUP = 'itb-receivers';
const MAX_IMAGE_BYTES = 64 * 1024 * 1024;

let redis: LocalServer;
let inspector: Redis;
beforeAll(async () => {
  redis = await redisTransport.deployment.localServer!.start();
  inspector = new Redis(redis.url, { protocol: 2, retryStrategy: () => null });
  inspector.on('error', () => {});
});
afterAll(async () => {
  inspector?.disconnect();
  await redis?.close();
});

/** Polls an asynchronous look inside Redis until it holds; false after `timeoutMs`. */
async function redisEventually(condition: () => Promise<boolean>, timeoutMs = 2000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** True when the section's stream, its pending list and its ack list are all empty. */
async function streamTrimmed(keys: SectionKeys): Promise<boolean> {
  return (
    (await inspector.xlen(keys.frames)) === 0 &&
    (await inspector.llen(keys.acks)) === 0 &&
    Number((await inspector.xpending(keys.frames, GROUP))[0]) === 0
  );
}

async function usedMemoryBytes(): Promise<number> {
  const info = await inspector.info('memory');
  const match = /used_memory:(\d+)/.exec(info);
  if (!match?.[1]) throw new Error('no used_memory in INFO memory');
  return Number(match[1]);
}

describe('redis transport: Redis specifics', () => {
  it('trims the stream as it goes: nothing pending, nothing left, memory flat over image count', async () => {
    const pair = await openPair(redisTransport, { url: redis.url });
    const keys = sectionKeys(pair.section.credential);
    const image = randomBytes(545_792);
    try {
      await pump(pair, image, 0, 20, 16);
      expect(await redisEventually(() => streamTrimmed(keys))).toBe(true);
      const memoryAfter20 = await usedMemoryBytes();
      await pump(pair, image, 20, 100, 16);
      expect(await redisEventually(() => streamTrimmed(keys))).toBe(true);
      const memoryAfter120 = await usedMemoryBytes();
      // Untrimmed, 100 more images would be 54 MB more; allow a couple of images of buffers.
      expect(memoryAfter120 - memoryAfter20).toBeLessThan(2 * image.length);
      expect(pair.seen.rejects).toEqual([]);
      expect(pair.seen.failures).toEqual([]);
      expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual(Array.from({ length: 120 }, (_, i) => i));
      expect(pair.seen.delivered.every((f) => Buffer.isBuffer(f.payload) && f.payload.equals(image))).toBe(true);
    } finally {
      await pair.close();
    }
    // The receiver leaves no keys behind when it closes.
    expect(await inspector.exists(keys.frames, keys.acks)).toBe(0);
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
    const outcome = await transferThrough(redisTransport, images, { window: 3, url: redis.url });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.received.map((r) => r.seq)).toEqual(images.map((_, i) => i));
    for (const r of outcome.received) {
      expect(r.bytes.length).toBe(images[r.seq]!.length);
      expect(r.bytes.equals(images[r.seq]!)).toBe(true);
    }
  }, 90_000);

  it('rejects entries not written by a transmitter, trims them too, and still delivers the good ones', async () => {
    const pair = await openPair(redisTransport, { url: redis.url, receiverMaxImageBytes: MAX_IMAGE_BYTES });
    const keys = sectionKeys(pair.section.credential);
    const STREAM_KEY = keys.frames;
    try {
      const good = encodeFrameHeader({ sectionId: 1, seq: 0, sizeBytes: 4, checksum: 0n, sentAtNs: 1n });
      const oversize = encodeFrameHeader({
        sectionId: 1,
        seq: 0,
        sizeBytes: MAX_IMAGE_BYTES + 1,
        checksum: 0n,
        sentAtNs: 1n,
      });
      await inspector.xadd(STREAM_KEY, '*', 'h', Buffer.from('not a header'), 'p', Buffer.from([1, 2, 3, 4]));
      const headerOnlyId = await inspector.xadd(STREAM_KEY, '*', 'h', good);
      await inspector.xadd(STREAM_KEY, '*', 'h', good, 'p', Buffer.from([1, 2, 3]));
      await inspector.xadd(STREAM_KEY, '*', 'h', oversize, 'p', Buffer.from([1, 2, 3, 4]));
      await inspector.xadd(STREAM_KEY, '*', 'header', good, 'payload', Buffer.from([1, 2, 3, 4]));
      const image = Buffer.from([9, 8, 7, 6]);
      pair.link.send(stampedHeader(image, 5), image);
      await eventually(() => pair.seen.acks.length === 1 && pair.seen.rejects.length === 5);
      expect(pair.seen.rejects).toHaveLength(5);
      expect(pair.seen.rejects[0]).toBe('redis: frame header is 12 bytes, expected 40');
      expect(pair.seen.rejects[1]).toBe(`redis: entry ${headerOnlyId} lacks the h or p field`);
      expect(pair.seen.rejects[2]).toBe('redis: image of 3 bytes, its header announces 4');
      expect(pair.seen.rejects[3]).toMatch(/^redis: frame announces \d+ bytes, over MAX_IMAGE_SIZE/);
      expect(pair.seen.rejects[4]).toMatch(/^redis: entry \d+-\d+ lacks the h or p field$/);
      expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual([5]);
      expect(pair.seen.acks).toEqual([{ sectionId: 7, seq: 5, status: 'accepted' }]);
      expect(pair.seen.failures).toEqual([]);
      expect(await redisEventually(() => streamTrimmed(keys))).toBe(true);
    } finally {
      await pair.close();
    }
  }, 90_000);

  it("reads only the open section's keys, and deletes them when the section ends", async () => {
    const pair = await openPair(redisTransport, { url: redis.url });
    const keys = sectionKeys(pair.section.credential);
    const stranger = sectionKeys(sectionCredential('not-the-test-secret-0123', pair.section.credential.sectionId));
    try {
      // Entries in keys a stranger can name (the old fixed key, another token's section) are never read.
      const image = Buffer.from([1, 2, 3, 4]);
      for (const key of ['itb:frames', stranger.frames])
        await inspector.xadd(key, '*', 'h', stampedHeader(image, 0), 'p', image);
      pair.link.send(stampedHeader(image, 1), image);
      await eventually(() => pair.seen.acks.length === 1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual([1]);
      expect(pair.seen.rejects).toEqual([]);
      expect(await inspector.xlen('itb:frames')).toBe(1);
      // The next section has keys of its own; the ended one's are gone.
      await pair.section.reopen(pair.listener, 8);
      expect(await inspector.exists(keys.frames, keys.acks)).toBe(0);
      expect(await inspector.exists(sectionKeys(pair.section.credential).frames)).toBe(1);
    } finally {
      await pair.close();
      await inspector.del('itb:frames', stranger.frames);
    }
  }, 90_000);

  it('listen() and connect() reject within seconds, naming the URL, when no Redis runs there', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const section = testDoor('redis');
    const endpoint = {
      host: '127.0.0.1',
      bindHost: '127.0.0.1',
      port: 0,
      url,
      maxImageBytes: MAX_IMAGE_BYTES,
      log: testLog,
      door: section.door,
      idleTimeoutMs: 5000,
      credential: section.credential,
    };
    const before = activeResources();

    // The receiver has no configured bound: it keeps retrying for its own 5 s, then gives up.
    let started = Date.now();
    const listenError = await redisTransport
      .listen({ ...endpoint, deliver: () => ({ sectionId: 0, seq: 0, status: 'accepted' }), onReject: () => {} })
      .then(
        () => new Error('listen() resolved'),
        (err: unknown) => err,
      );
    expect(Date.now() - started).toBeLessThan(8000);
    expect(listenError).toMatchObject({ code: ErrorCode.timeout, message: expect.stringContaining(`Redis at ${url}`) });
    expect((listenError as Error).message).toContain('ECONNREFUSED');

    started = Date.now();
    const connectError = await redisTransport
      .connect({
        ...endpoint,
        connectTimeoutMs: 1500,
        imageBytes: 1024 * 1024,
        window: 64,
        onAck: () => {},
        onFailure: () => {},
      })
      .then(
        () => new Error('connect() resolved'),
        (err: unknown) => err,
      );
    const elapsedMs = Date.now() - started;
    expect(elapsedMs).toBeGreaterThanOrEqual(1400); // it retried for the whole budget
    expect(elapsedMs).toBeLessThan(4000);
    expect(connectError).toMatchObject({
      code: ErrorCode.timeout,
      message: expect.stringContaining(`Redis at ${url} within 1500 ms`),
    });
    expect((connectError as Error).message).toContain('ECONNREFUSED');
    expect(await leakedResources(before)).toEqual([]);
  }, 90_000);

  it('listen() and connect() reject clearly when REDIS_URL is not set', async () => {
    const section = testDoor('redis');
    for (const url of [undefined, '']) {
      const endpoint = {
        host: '127.0.0.1',
        bindHost: '127.0.0.1',
        port: 0,
        url,
        maxImageBytes: MAX_IMAGE_BYTES,
        log: testLog,
        door: section.door,
        idleTimeoutMs: 5000,
        credential: section.credential,
      };
      const listening = redisTransport.listen({
        ...endpoint,
        deliver: () => ({ sectionId: 0, seq: 0, status: 'accepted' }),
        onReject: () => {},
      });
      await expect(listening).rejects.toMatchObject({
        code: ErrorCode.config,
        message: expect.stringMatching(/REDIS_URL is not set/),
      });
      const connecting = redisTransport.connect({
        ...endpoint,
        connectTimeoutMs: 1000,
        imageBytes: 1024 * 1024,
        window: 64,
        onAck: () => {},
        onFailure: () => {},
      });
      await expect(connecting).rejects.toMatchObject({
        code: ErrorCode.config,
        message: expect.stringMatching(/REDIS_URL is not set/),
      });
    }
  });

  it('reports a Redis that goes away mid-run on both sides, ' +
    'once each, naming the URL, and still closes cleanly', async () => {
    const doomed = await redisTransport.deployment.localServer!.start();
    const section = testDoor('redis');
    const endpoint = {
      host: '127.0.0.1',
      bindHost: '127.0.0.1',
      port: 0,
      url: doomed.url,
      maxImageBytes: MAX_IMAGE_BYTES,
      log: testLog,
      door: section.door,
      idleTimeoutMs: 5000,
      credential: section.credential,
    };
    const listenerFailures: string[] = [];
    const acks: Ack[] = [];
    const linkFailures: Error[] = [];
    const deliver: ReceiverOptions['deliver'] = (frame) => ({
      sectionId: frame.header.sectionId,
      seq: frame.header.seq,
      status: 'accepted',
    });
    const listener = await redisTransport.listen({
      ...endpoint,
      deliver,
      onReject: () => {},
      onFailure: (reason) => listenerFailures.push(reason),
    });
    await section.prepare(listener);
    const link = await redisTransport.connect({
      ...endpoint,
      connectTimeoutMs: 5000,
      imageBytes: 1024 * 1024,
      window: 64,
      onAck: (ack) => acks.push(ack),
      onFailure: (err) => linkFailures.push(err),
    });
    try {
      const image = randomBytes(1000);
      link.send(stampedHeader(image, 0), image);
      await eventually(() => acks.length === 1);
      await doomed.close();
      await eventually(() => linkFailures.length > 0 && listenerFailures.length > 0);
      const late = randomBytes(10);
      expect(link.send(stampedHeader(late, 1), late)).toBeUndefined(); // returns at once, never throws
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(linkFailures).toHaveLength(1);
      expect(linkFailures[0]).toMatchObject({
        code: ErrorCode.transport,
        message: expect.stringContaining(doomed.url),
      });
      expect(listenerFailures).toEqual([`lost its connection to Redis at ${doomed.url}`]);
      expect(acks.map((a) => a.seq)).toEqual([0]);
    } finally {
      const started = Date.now();
      await link.close();
      await link.close();
      await listener.close();
      await listener.close();
      expect(Date.now() - started).toBeLessThan(3000);
      await doomed.close();
    }
  }, 90_000);

  it("readBroker() reports the Redis server's CPU and RSS, and its CPU grows as images go through", async () => {
    const pair = await openPair(redisTransport, { url: redis.url });
    try {
      expect(pair.listener.readBroker).toBeTypeOf('function');
      const before = await pair.listener.readBroker!();
      for (const value of [before.cpuUserMicros, before.cpuSystemMicros, before.rssBytes]) {
        expect(Number.isInteger(value)).toBe(true);
        expect(value).toBeGreaterThanOrEqual(0);
      }
      expect(before.rssBytes).toBeGreaterThan(0); // a running server has resident memory
      // The same figures Redis itself reports (RSS moves a little between the two reads).
      const info = await inspector.info('memory');
      expect(before.rssBytes).toBeCloseTo(Number(/used_memory_rss:(\d+)/.exec(info)?.[1]), -7);

      await pump(pair, randomBytes(545_792), 0, 60, 8); // ~33 MB through the server
      const after = await pair.listener.readBroker!();
      const cpuMicros = (r: typeof before): number => r.cpuUserMicros + r.cpuSystemMicros;
      expect(cpuMicros(after)).toBeGreaterThan(cpuMicros(before));
      expect(after.cpuUserMicros).toBeGreaterThanOrEqual(before.cpuUserMicros);
      expect(after.cpuSystemMicros).toBeGreaterThanOrEqual(before.cpuSystemMicros);
      expect(after.rssBytes).toBeGreaterThan(0);
      expect(pair.seen.failures).toEqual([]);
    } finally {
      await pair.close();
    }
  }, 90_000);
});
