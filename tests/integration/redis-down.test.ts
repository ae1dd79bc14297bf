import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisTransport } from '../../services/transports/redis.js';
import type { RunObserver } from '../../services/transmitter/app.js';
import { runBoth } from '../helpers/in-process.js';

// Redis stopped in the middle of the redis section: that section fails with the reason, the
// other transports' results stay intact, and the run reports failure.

let outputDir: string;
beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-redis-down-'));
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

describe('Redis going down mid-run', () => {
  it('fails the redis section with its reason and keeps the others', async () => {
    const redis = await redisTransport.localServer!.start();
    let stopped: Promise<void> | undefined;
    // Stops Redis once the redis section has had some images acknowledged.
    const observer: RunObserver = {
      sectionStarted(progress) {
        if (progress.transport !== 'redis') return;
        const poll = setInterval(() => {
          if (progress.acked < 5) return;
          clearInterval(poll);
          stopped = redis.close();
        }, 1);
      },
      sectionEnded() {},
    };
    try {
      const outcome = await runBoth(outputDir, { TRANSPORTS: 'tcp,redis,websocket', IMAGE_COUNT: '3000', IMAGE_SIZE: '64KB', WINDOW: '4', REDIS_URL: redis.url, IMAGE_TIMEOUT_MS: '2000' }, observer);
      expect(outcome.succeeded).toBe(false);
      const [tcp, redisSection, websocket] = outcome.report.transports;
      expect(tcp).toMatchObject({ transport: 'tcp', ok: true, okCount: 3000 });
      expect(websocket).toMatchObject({ transport: 'websocket', ok: true, okCount: 3000 });
      expect(redisSection?.ok).toBe(false);
      expect(redisSection?.okCount).toBeGreaterThanOrEqual(5);
      expect(redisSection?.lostCount).toBeGreaterThan(0);
      expect(redisSection?.failure).toMatch(/Redis|redis/);
      const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
      expect(log).toMatch(/^Redis\s+\d+\s+\d+\s+0\s.*FAILED: .*[Rr]edis/m);
      expect(log).toMatch(/^TCP \(baseline\)\s+3000\s+0\s+0\s.*\sok$/m);
    } finally {
      await stopped;
      await redis.close();
    }
  }, 120_000);
});
