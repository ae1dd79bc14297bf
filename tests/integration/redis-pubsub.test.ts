import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sectionCredential } from '../../services/core/wire/auth.js';
import { ErrorCode } from '../../services/core/errors.js';
import type { RunReport } from '../../services/core/report/report.js';
import type { LocalServer } from '../../services/transports/contract.js';
import { sectionKeys, startPrivateRedis } from '../../services/transports/kit/redis.js';
import { redisPubsubTransport } from '../../services/transports/redis-pubsub/transport.js';
import { eventually, openPair, stampedHeader, testDoor, testLog } from '../helpers/harness.js';
import { runBoth } from '../helpers/in-process.js';
import { readImageRecords } from '../helpers/run-files.js';

// Only what is PARTICULAR to Redis pub/sub; the shared suite (transports.test.ts) tests the
// contract. Here: a subscriber Redis disconnects at its output-buffer limit fails its section with
// that reason and the exact count of lost images, through the real apps; a PUBLISH nobody reads
// fails the link; an image too large for the limit is refused before anything is sent; only the
// open section's channel is read, and its subscription and ack list are gone when it ends.

/**
 * The slow subscriber: a pubsub limit of 1 MiB (soft 512 KiB for 1 s) against images of 600 KB
 * with WINDOW 16, so up to 9.6 MB are in flight towards a subscriber whose unread messages may not
 * pass 1 MiB. One image alone fits (connect() refuses an image that does not). Both apps share this
 * process's event loop, so while the transmitter stamps and hands over a window the receiver reads
 * nothing, and the kernel's socket buffers (a few MB on loopback) cannot take the rest: Redis
 * disconnects the subscriber within the first window. Measured: 10 runs of 10 tripped, with 0 or 6
 * images delivered first (400 KB images: 3 of 3, 1 to 10 first). With 256 KB images (4 MB in
 * flight) it did not trip, against this limit or a 512kb one; against a 256kb limit one 256 KB
 * message alone trips it, which connect() refuses up front.
 */
const SMALL_PUBSUB_LIMIT = ['--client-output-buffer-limit', 'pubsub 1mb 512kb 1'];
const LOSS_RUN = {
  TRANSPORTS: 'redis-pubsub,tcp',
  IMAGE_SIZE: '600KB',
  WINDOW: '16',
  IMAGE_COUNT: '300',
  WARMUP: '0',
  IMAGE_TIMEOUT_MS: '3000',
};
const MIB = 1024 * 1024;

let redis: LocalServer;
let inspector: Redis;
let outputDir: string;
beforeAll(async () => {
  redis = await startPrivateRedis(SMALL_PUBSUB_LIMIT);
  inspector = new Redis(redis.url, { protocol: 2, retryStrategy: () => null });
  inspector.on('error', () => {});
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-redis-pubsub-'));
});
afterAll(async () => {
  inspector?.disconnect();
  await redis?.close();
  await rm(outputDir, { recursive: true, force: true });
});

describe('redis-pubsub transport: Redis pub/sub specifics', () => {
  it('fails the section when Redis disconnects the slow subscriber at its output-buffer limit, counting every lost ' +
    'image exactly', async () => {
    const outcome = await runBoth(outputDir, { ...LOSS_RUN, REDIS_URL: redis.url });
    expect(outcome.succeeded).toBe(false);
    const imageCount = Number(LOSS_RUN.IMAGE_COUNT);
    const [pubsub, tcp] = outcome.report.transports;
    expect(tcp).toMatchObject({ transport: 'tcp', ok: true, okCount: imageCount });
    expect(pubsub).toMatchObject({ transport: 'redis-pubsub', ok: false, corruptCount: 0 });
    expect(pubsub!.failure).toMatch(/client-output-buffer-limit pubsub 1mb 512kb 1/);
    expect(pubsub!.failure).toMatch(/read slower than/);
    expect(pubsub!.lostCount).toBeGreaterThan(0);
    expect(pubsub!.okCount + pubsub!.lostCount).toBe(imageCount);

    // results.json has the same counts, and the section's CSV the same, image by image.
    const results = JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as RunReport;
    const section = results.sections.find((s) => s.transport === 'redis-pubsub')!;
    expect(section.ok).toBe(false);
    const images = await readImageRecords(outputDir, section);
    expect(images.map((i) => i.image)).toEqual(Array.from({ length: imageCount }, (_, i) => i + 1));
    const statuses = images.map((i) => i.status);
    expect(statuses.filter((s) => s === 'ok')).toHaveLength(section.okCount);
    expect(statuses.filter((s) => s === 'lost')).toHaveLength(section.lostCount);
    expect(section.okCount).toBe(pubsub!.okCount);
    expect(section.lostCount).toBe(pubsub!.lostCount);
    // Images arrive in order or not at all: once one is lost, so is every one after it.
    const firstLost = statuses.indexOf('lost');
    expect(statuses.slice(firstLost).every((s) => s === 'lost')).toBe(true);

    const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
    expect(log).toMatch(
      new RegExp(
        `^Redis pub/sub\\s+${section.okCount}\\s+${section.lostCount}\\s+0\\s.*FAILED: ` +
          `.*client-output-buffer-limit pubsub`,
        'm',
      ),
    );
    expect(log).toMatch(new RegExp(`^TCP \\(baseline\\)\\s+${imageCount}\\s+0\\s+0\\s.*\\sok$`, 'm'));
  }, 90_000);

  it('fails the link with a clear reason when a PUBLISH reaches no subscriber', async () => {
    // A section nobody prepared on this Redis: its channel has no subscriber.
    const section = testDoor('redis-pubsub', 11);
    const failures: Error[] = [];
    const link = await redisPubsubTransport.connect({
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
      onFailure: (err) => failures.push(err),
    });
    try {
      const image = randomBytes(1000);
      link.send(stampedHeader(image, 0), image);
      await eventually(() => failures.length > 0);
      link.send(stampedHeader(image, 1), image);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatchObject({ code: ErrorCode.receiverUnreachable });
      expect(failures[0]!.message).toContain(`no receiver is reading this section on Redis at ${redis.url}`);
      expect(failures[0]!.message).toContain(
        `PUBLISH to ${sectionKeys(section.credential).frames} reached no subscriber`,
      );
    } finally {
      await link.close();
    }
  });

  it('refuses at connect an image that alone would pass the pubsub output-buffer limit', async () => {
    const section = testDoor('redis-pubsub', 12);
    const connecting = redisPubsubTransport.connect({
      host: '127.0.0.1',
      bindHost: '127.0.0.1',
      port: 0,
      url: redis.url,
      maxImageBytes: 4 * MIB,
      log: testLog,
      connectTimeoutMs: 5000,
      imageBytes: 1_000_000,
      window: 4,
      credential: section.credential,
      onAck: () => {},
      onFailure: () => {},
    });
    await expect(connecting).rejects.toMatchObject({
      code: ErrorCode.transport,
      message: expect.stringMatching(
        /images of 1000000 bytes cannot go through Redis pub\/sub .* client-output-buffer-limit pubsub 1mb 512kb 1/,
      ),
    });
  });

  it(
    'reports a subscriber Redis closed while the server ' + 'stays up, once, with the limit, before the section ends',
    async () => {
      const section = testDoor('redis-pubsub', 13);
      const failures: string[] = [];
      const listener = await redisPubsubTransport.listen({
        host: '127.0.0.1',
        bindHost: '127.0.0.1',
        port: 0,
        url: redis.url,
        maxImageBytes: MIB,
        log: testLog,
        door: section.door,
        idleTimeoutMs: 5000,
        deliver: (frame) => ({ sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' }),
        onReject: () => {},
        onFailure: (reason) => failures.push(reason),
      });
      try {
        await section.prepare(listener);
        expect(await inspector.call('CLIENT', 'KILL', 'TYPE', 'pubsub')).toBe(1);
        // The app ends the section's record when closeSection() returns: the reason must be in by then.
        await listener.closeSection!();
        expect(failures).toHaveLength(1);
        expect(failures[0]).toContain(
          `Redis at ${redis.url} closed the subscriber connection while the server stayed up`,
        );
        expect(failures[0]).toContain('client-output-buffer-limit pubsub 1mb 512kb 1');
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(failures).toHaveLength(1);
      } finally {
        await listener.close();
      }
    },
  );

  it(
    "reads only the open section's channel, and leaves " + 'no subscription or key behind when the section ends',
    async () => {
      const pair = await openPair(redisPubsubTransport, { url: redis.url, imageBytes: 100 });
      const keys = sectionKeys(pair.section.credential);
      const stranger = sectionKeys(sectionCredential('not-the-test-secret-0123', pair.section.credential.sectionId));
      try {
        expect(await inspector.pubsub('NUMSUB', keys.frames)).toEqual([keys.frames, 1]);
        // A message on a channel a stranger can name is never read.
        const image = randomBytes(100);
        expect(await inspector.publish(stranger.frames, Buffer.concat([stampedHeader(image, 0), image]))).toBe(0);
        pair.link.send(stampedHeader(image, 1), image);
        await eventually(() => pair.seen.acks.length === 1);
        expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual([1]);
        expect(pair.seen.rejects).toEqual([]);
        // The next section subscribes to its own channel; the ended one's subscription and acks are gone.
        await pair.section.reopen(pair.listener, 8);
        expect(await inspector.pubsub('NUMSUB', keys.frames)).toEqual([keys.frames, 0]);
        expect(await inspector.exists(keys.acks)).toBe(0);
        const next = sectionKeys(pair.section.credential).frames;
        expect(await inspector.pubsub('NUMSUB', next)).toEqual([next, 1]);
      } finally {
        await pair.close();
      }
    },
  );
});
