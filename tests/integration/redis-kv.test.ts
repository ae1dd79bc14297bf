import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../services/core/report/report.js';
import type { LocalServer } from '../../services/transports/contract.js';
import { startPrivateRedis } from '../../services/transports/kit/redis.js';
import { kvKeys, redisKvTransport } from '../../services/transports/redis-kv/transport.js';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';
import { eventually, openPair, stampedHeader, testDoor } from '../helpers/harness.js';
import { runBoth } from '../helpers/in-process.js';
import { readImageCsv } from '../helpers/run-files.js';

// Only what is PARTICULAR to the latest-frame key; the shared suite (transports.test.ts) tests the
// contract at window 1. Here, through the real apps: at WINDOW > 1 images written over before the
// receiver read them are counted as superseded (results.json, the CSV, output.log), the section is
// ok, and MB/s counts only the delivered; at WINDOW = 1 nothing is superseded. And: the key holds
// the latest image only, and the section's keys are gone when it ends.

let redis: LocalServer;
let inspector: Redis;
let outputDir: string;
beforeAll(async () => {
  redis = await startPrivateRedis();
  inspector = new Redis(redis.url, { protocol: 2, retryStrategy: () => null });
  inspector.on('error', () => {});
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-redis-kv-'));
});
afterAll(async () => {
  inspector?.disconnect();
  await redis?.close();
  await rm(outputDir, { recursive: true, force: true });
});

const results = async (): Promise<RunReport> =>
  JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as RunReport;

describe('redis-kv transport: a latest-frame key', () => {
  it(
    'at WINDOW 64 counts the images written over before they were read as superseded, apart from the lost, in ' +
      'results.json, the per-image file and output.log; the section is ok and MB/s counts the delivered only',
    async () => {
      // 64 images of 1 KB leave in one burst while the reader is one HMGET behind: most are written over.
      const outcome = await runBoth(outputDir, {
        TRANSPORTS: 'redis-kv',
        REDIS_URL: redis.url,
        IMAGE_SIZE: '1KB',
        IMAGE_COUNT: '600',
        WINDOW: '64',
        WARMUP: '0',
      });
      expect(outcome.succeeded, outcome.summary).toBe(true);
      const report = await results();
      expect(resultsSchemaErrors(report)).toEqual([]);
      const [section] = report.sections;
      if (section === undefined) throw new Error('no section');
      const superseded = section.supersededCount ?? 0;
      expect(superseded).toBeGreaterThan(0);
      expect([section.ok, section.lostCount, section.corruptCount, section.okCount + superseded]).toEqual([
        true,
        0,
        0,
        600,
      ]);
      // One writer, one key: what is read comes in order.
      expect(section.outOfOrderCount).toBe(0);
      expect(section.throughputMBps).toBeCloseTo((section.okCount * 1000) / 1e6 / (section.totalMs! / 1000), 6);
      // The CSV has the missing images last: put it in image order.
      const statuses = (await readImageCsv(outputDir, section)).sort((a, b) => a.image - b.image).map((r) => r.status);
      expect(statuses.filter((s) => s === 'superseded')).toHaveLength(superseded);
      expect(statuses.filter((s) => s === 'ok')).toHaveLength(section.okCount);
      // The last image is never written over: its signal comes after it.
      expect(statuses.at(-1)).toBe('ok');
      const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
      expect(log).toContain(
        `Superseded: ${superseded} of 600 images written over before the receiver read them (the key keeps the ` +
          'latest only): neither delivered nor lost, and not in MB/s or images/s',
      );
      expect(log.match(/^Image \d+: superseded \(written over before it was read\)$/gm)).toHaveLength(superseded);
      // The summary table gives them a column of their own beside OK, Lost and Corrupt.
      expect(log).toMatch(/^Transport +OK +Lost +Corrupt +Superseded +p50 ms/m);
      expect(log).toMatch(new RegExp(`^Redis latest-frame key +${section.okCount} +0 +0 +${superseded} +\\d`, 'm'));
      expect(log).not.toContain('LOST');
    },
  );

  it('at WINDOW 1 delivers every image: nothing is superseded', async () => {
    const outcome = await runBoth(outputDir, {
      TRANSPORTS: 'redis-kv',
      REDIS_URL: redis.url,
      IMAGE_SIZE: '64KiB',
      IMAGE_COUNT: '100',
      WINDOW: '1',
      WARMUP: '0',
    });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    const [section] = (await results()).sections;
    expect([section?.ok, section?.okCount, section?.supersededCount, section?.lostCount]).toEqual([true, 100, 0, 0]);
  });

  it('holds only the latest image under the section key, and removes the keys when the section ends', async () => {
    const pair = await openPair(redisKvTransport, { url: redis.url });
    const keys = kvKeys(testDoor('redis-kv').credential);
    try {
      const images = [randomBytes(3000), randomBytes(3000)];
      for (const [seq, image] of images.entries()) {
        pair.link.send(stampedHeader(image, seq), image);
        await eventually(() => pair.seen.acks.length === seq + 1);
      }
      expect(await inspector.hlen(keys.frame)).toBe(2);
      expect((await inspector.hgetBuffer(keys.frame, 'p'))?.equals(images[1]!)).toBe(true);
    } finally {
      await pair.close();
    }
    expect(await inspector.exists(keys.frame, keys.acks)).toBe(0);
  });
});
