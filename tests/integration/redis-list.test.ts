import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sectionCredential } from '../../services/core/wire/auth.js';
import { ErrorCode } from '../../services/core/errors.js';
import { encodeFrameHeader } from '../../services/core/wire/frame.js';
import type { LocalServer } from '../../services/transports/contract.js';
import { startPrivateRedis } from '../../services/transports/kit/redis.js';
import { listSectionKeys, redisListTransport } from '../../services/transports/redis-list/transport.js';
import { eventually, openPair, stampedHeader, testDoor, testLog, transferThrough } from '../helpers/harness.js';

// Only what is PARTICULAR to the Redis list transport; the shared suite (transports.test.ts) tests
// the contract. Here: only the open section's list is read and its keys are gone when it ends, a
// transmitter with no receiver behind its list fails at connect, elements not pushed by a
// transmitter are rejected without losing the pairing of the good ones, the list is emptied as it
// goes, and a server without BLMPOP (Redis < 7.0) is served one element at a time.

const MIB = 1024 * 1024;

let redis: LocalServer;
let inspector: Redis;
beforeAll(async () => {
  redis = await redisListTransport.deployment.localServer!.start();
  inspector = new Redis(redis.url, { protocol: 2, retryStrategy: () => null });
  inspector.on('error', () => {});
});
afterAll(async () => {
  inspector?.disconnect();
  await redis?.close();
});

describe('redis-list transport: Redis list specifics', () => {
  it("reads only the open section's list, and deletes the section's keys when it ends", async () => {
    const pair = await openPair(redisListTransport, { url: redis.url });
    const keys = listSectionKeys(pair.section.credential);
    const stranger = listSectionKeys(sectionCredential('not-the-test-secret-0123', pair.section.credential.sectionId));
    try {
      expect(await inspector.exists(keys.reader)).toBe(1);
      // Images in lists a stranger can name (a fixed key, another token's section) are never read.
      const image = Buffer.from([1, 2, 3, 4]);
      for (const key of ['itb:frames', stranger.frames]) await inspector.lpush(key, stampedHeader(image, 0), image);
      pair.link.send(stampedHeader(image, 1), image);
      await eventually(() => pair.seen.acks.length === 1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual([1]);
      expect(pair.seen.rejects).toEqual([]);
      expect(await inspector.llen(stranger.frames)).toBe(2);
      // The next section has keys of its own; every key of the ended one is gone.
      await pair.section.reopen(pair.listener, 8);
      expect(await inspector.exists(keys.frames, keys.acks, keys.reader)).toBe(0);
      expect(await inspector.exists(listSectionKeys(pair.section.credential).reader)).toBe(1);
    } finally {
      await pair.close();
      await inspector.del('itb:frames', stranger.frames);
    }
    // The receiver leaves nothing behind when it closes.
    expect(await inspector.exists(listSectionKeys(pair.section.credential).reader)).toBe(0);
  });

  it(
    'connect() fails at once, naming the missing receiver, ' + 'when no receiver prepared the section on this Redis',
    async () => {
      const section = testDoor('redis-list', 21);
      const started = Date.now();
      const connecting = redisListTransport.connect({
        host: '127.0.0.1',
        bindHost: '127.0.0.1',
        port: 0,
        url: redis.url,
        maxImageBytes: MIB,
        log: testLog,
        connectTimeoutMs: 5000,
        imageBytes: 1000,
        window: 4,
        credential: section.credential,
        onAck: () => {},
        onFailure: () => {},
      });
      await expect(connecting).rejects.toMatchObject({
        code: ErrorCode.receiverUnreachable,
        message: expect.stringContaining(`no receiver is reading this section on Redis at ${redis.url}`),
      });
      expect(Date.now() - started).toBeLessThan(2000);
      // Nothing was pushed into a list nobody reads.
      expect(await inspector.exists(listSectionKeys(section.credential).frames)).toBe(0);
    },
  );

  it(
    'rejects elements not pushed by a transmitter, keeps ' + 'the pairing of the good ones, and empties the list',
    async () => {
      const pair = await openPair(redisListTransport, { url: redis.url, receiverMaxImageBytes: MIB });
      const keys = listSectionKeys(pair.section.credential);
      try {
        const image = Buffer.from([9, 8, 7, 6]);
        const oversize = encodeFrameHeader({ sectionId: 7, seq: 3, sizeBytes: MIB + 1, checksum: 0n, sentAtNs: 1n });
        // LPUSH puts its last argument at the head: these reach the receiver oldest first, left to right.
        await inspector.lpush(keys.frames, Buffer.from('not a header'));
        await inspector.lpush(keys.frames, oversize, Buffer.from([1, 2, 3, 4]));
        await inspector.lpush(keys.frames, stampedHeader(image, 4), Buffer.from([1, 2, 3]));
        pair.link.send(stampedHeader(image, 5), image);
        await eventually(() => pair.seen.acks.length === 1 && pair.seen.rejects.length === 3);
        expect(pair.seen.rejects).toHaveLength(3);
        expect(pair.seen.rejects[0]).toBe('redis-list: frame header is 12 bytes, expected 40');
        expect(pair.seen.rejects[1]).toMatch(/^redis-list: frame announces \d+ bytes, over MAX_IMAGE_SIZE/);
        expect(pair.seen.rejects[2]).toBe('redis-list: image of 3 bytes, its header announces 4');
        expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual([5]);
        expect(pair.seen.acks).toEqual([{ sectionId: 7, seq: 5, status: 'accepted' }]);
        expect(pair.seen.failures).toEqual([]);
        expect(await inspector.llen(keys.frames)).toBe(0);
      } finally {
        await pair.close();
      }
    },
  );

  it(
    'holds no more than a window of images: the list ' + 'and the ack list are empty once every image is acked',
    async () => {
      const pair = await openPair(redisListTransport, { url: redis.url, window: 4 });
      const keys = listSectionKeys(pair.section.credential);
      const image = randomBytes(100_000);
      try {
        for (let seq = 0; seq < 40; seq++) {
          await eventually(() => pair.seen.acks.length > seq - 4 || pair.seen.failures.length > 0, 10_000);
          pair.link.send(stampedHeader(image, seq), image);
        }
        await eventually(() => pair.seen.acks.length === 40, 10_000);
        expect(pair.seen.failures).toEqual([]);
        expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i));
        expect(await inspector.llen(keys.frames)).toBe(0);
        expect(await inspector.llen(keys.acks)).toBe(0);
      } finally {
        await pair.close();
      }
    },
  );

  it('works one element at a time on a server without BLMPOP (Redis < 7.0)', async () => {
    const old = await startPrivateRedis(['--rename-command', 'BLMPOP', '']);
    try {
      const images = [randomBytes(1), randomBytes(70_000), randomBytes(545_792), randomBytes(3)];
      const outcome = await transferThrough(redisListTransport, images, { window: 2, url: old.url });
      expect(outcome.rejects).toEqual([]);
      expect(outcome.received.map((r) => r.seq)).toEqual([0, 1, 2, 3]);
      for (const r of outcome.received) expect(r.bytes.equals(images[r.seq]!)).toBe(true);
      expect(outcome.acks.map((a) => a.seq)).toEqual([0, 1, 2, 3]);
    } finally {
      await old.close();
    }
  });
});
