import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisTransport } from '../../services/transports/redis/transport.js';
import type { HealthResponse } from '../../services/core/control/control-protocol.js';
import type { RunObserver } from '../../services/transmitter/app.js';
import { stopChild } from '../../services/shared/child-process.js';
import { freePort } from '../../services/shared/net.js';
import { answersWith } from '../../services/shared/local-server.js';
import { runBoth, runTransmitter, startReceiver } from '../helpers/in-process.js';

// Redis stopped in the middle of the redis section: that section fails with the reason, the
// other transports' results stay intact, and the run reports failure. Redis up only after the
// receiver (a cluster starts services in any order): the transmitter waits for the listener.

let outputDir: string;
beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-redis-down-'));
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

describe('Redis going down mid-run', () => {
  it('fails the redis section with its reason and keeps the others', async () => {
    const redis = await redisTransport.deployment.localServer!.start();
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
      const outcome = await runBoth(
        outputDir,
        {
          TRANSPORTS: 'tcp,redis,websocket',
          IMAGE_COUNT: '3000',
          IMAGE_SIZE: '64KB',
          WINDOW: '4',
          REDIS_URL: redis.url,
          IMAGE_TIMEOUT_MS: '2000',
        },
        observer,
      );
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

describe('Redis coming up after the receiver, as a cluster may start them', () => {
  it("waits within CONNECT_TIMEOUT_MS for the receiver's redis listener to retry, and the section is ok", async () => {
    const port = await freePort();
    const { receiver, transmitterConfig } = await startReceiver(outputDir, {
      TRANSPORTS: 'tcp,redis',
      IMAGE_COUNT: '20',
      REDIS_URL: `redis://127.0.0.1:${port}`,
      CONNECT_TIMEOUT_MS: '20000',
    });
    const redis = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--logfile', ''],
      { stdio: 'ignore' },
    );
    try {
      // The receiver found no Redis at its start: its listener retries in the background.
      const health = (await (
        await fetch(`http://127.0.0.1:${transmitterConfig.controlPort}/health`)
      ).json()) as HealthResponse;
      expect(health.listeners.redis).toMatchObject({ ready: false, retrying: true });
      for (let tries = 0; !(await answersWith(port, '+PONG', 'PING\r\n')); tries++) {
        expect(tries).toBeLessThan(200);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const outcome = await runTransmitter(transmitterConfig);
      expect(outcome.summary).toMatch(/^Redis\s+20\s+0\s+0\s.*\sok$/m);
      expect(outcome.succeeded).toBe(true);
    } finally {
      await receiver.close();
      await stopChild(redis, 3000);
    }
  }, 60_000);
});

describe('a Redis transport with no REDIS_URL at all', () => {
  it('is down for good, not retried: its section fails at ' +
    'once with the reason, without waiting CONNECT_TIMEOUT_MS', async () => {
    const { receiver, transmitterConfig } = await startReceiver(outputDir, {
      TRANSPORTS: 'redis,tcp',
      IMAGE_COUNT: '5',
      REDIS_URL: '',
      CONNECT_TIMEOUT_MS: '20000',
    });
    try {
      const health = (await (
        await fetch(`http://127.0.0.1:${transmitterConfig.controlPort}/health`)
      ).json()) as HealthResponse;
      expect(health.listeners.redis).toMatchObject({
        ready: false,
        retrying: false,
        error: expect.stringContaining('REDIS_URL is not set'),
      });
      expect(health.listeners.tcp).toMatchObject({ ready: true, retrying: false });
      const startedAt = Date.now();
      const outcome = await runTransmitter(transmitterConfig);
      expect(Date.now() - startedAt).toBeLessThan(15_000);
      expect(outcome.summary).toMatch(/^Redis\s+0\s+5\s+0\s.*FAILED: .*REDIS_URL is not set/m);
      expect(outcome.summary).toMatch(/^TCP \(baseline\)\s+5\s+0\s+0\s.*\sok$/m);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});
