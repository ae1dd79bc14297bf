import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../services/core/report.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../../services/shared/redis-server.js';
import { runBoth as runBothInProcess, runTransmitter, startReceiver } from '../helpers/in-process.js';
import { resultsSchemaErrors } from '../helpers/schema.js';

// Both apps in this process, every transport over real loopback sockets and a real redis-server.

let redis: PrivateRedis;
let outputDir: string;
beforeAll(async () => {
  redis = await startPrivateRedis();
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-run-'));
});
afterAll(async () => {
  await redis?.close();
  await rm(outputDir, { recursive: true, force: true });
});

const runBoth = (env: Record<string, string>) => runBothInProcess(outputDir, env);

describe('a whole run in-process', () => {
  it('moves the asset over every transport, twice interleaved, and writes output.log and a valid results.json', async () => {
    const outcome = await runBoth({ IMAGE_COUNT: '3', WARMUP: '1', REPEAT: '2', REDIS_URL: redis.url });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
    for (const title of ['WebSocket', 'gRPC', 'ZeroMQ', 'Redis', 'TCP (baseline)']) {
      for (const repeat of [1, 2]) expect(log).toContain(`=== ${title} performance test: 3 images transfer (533.0 KiB each, window 1, repeat ${repeat}/2) ===`);
    }
    expect(log.match(/^Image \d transmission time: \d+\.\d{3} ms$/gm)).toHaveLength(30);
    expect(log.match(/^Total transfer time: \d+\.\d{3} ms$/gm)).toHaveLength(10);
    expect(log).toContain('Spread across repeats (min–max):');

    const results = JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as RunReport;
    expect(resultsSchemaErrors(results)).toEqual([]);
    // Interleaved: every transport once per repeat, in TRANSPORTS order.
    const order = ['websocket', 'grpc', 'zeromq', 'redis', 'tcp'];
    expect(results.sections.map((s) => `${s.transport}/${s.repeat}`)).toEqual([...order.map((t) => `${t}/1`), ...order.map((t) => `${t}/2`)]);
    expect(results.transports.map((t) => [t.transport, t.repeats, t.okCount])).toEqual(order.map((t) => [t, 2, 6]));
    for (const section of results.sections) {
      expect(section.okCount).toBe(3);
      expect(section.images.every((i) => i.timeMs !== null && i.timeMs > 0)).toBe(true);
      // The total spans from the first send to the last arrival, so it covers every image.
      expect(section.totalMs).toBeGreaterThanOrEqual(Math.max(...section.images.map((i) => i.timeMs!)));
      expect(section.latency?.p50Ms).toBeGreaterThan(0);
      expect(section.throughputMBps).toBeGreaterThan(0);
      // Both sides in one process here: each side's CPU is that process's, so only its presence is checked.
      for (const side of [section.cost.transmitter, section.cost.receiver]) {
        expect(side?.cpuMs).toBeGreaterThan(0);
        expect(side?.peakRssBytes).toBeGreaterThan(10 * 1024 * 1024);
        expect(side?.eventLoopUtilization).toBeGreaterThan(0);
      }
      // One host, one kernel: the estimate is near zero and not applied.
      expect(section.clock?.applied).toBe(false);
      expect(Math.abs(section.clock!.offsetNs)).toBeLessThan(200_000);
    }
    expect(results.run.hosts.receiver.libraries['@grpc/grpc-js']).toMatch(/^\d+\.\d+\.\d+/);
    expect(outcome.summary).toContain('TCP (baseline)');
  }, 90_000);

  it('keeps a window of images in flight with a generated size, and says when verification is off', async () => {
    const outcome = await runBoth({ IMAGE_COUNT: '20', IMAGE_SIZE: '64KB', WINDOW: '8', TRANSPORTS: 'tcp,zeromq', REDIS_URL: redis.url, VERIFY: 'false' });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    // Verification off (to measure its cost) is said in the record, never silently.
    expect(await readFile(path.join(outputDir, 'output.log'), 'utf8')).toContain('Integrity: NOT VERIFIED (VERIFY=false');
    expect(outcome.report.sections.map((s) => [s.transport, s.okCount, s.window, s.imageSizeBytes])).toEqual([
      ['tcp', 20, 8, 64_000],
      ['zeromq', 20, 8, 64_000],
    ]);
  }, 60_000);

  it('records a transport whose Redis is down as failed with its reason, and runs the others', async () => {
    const deadPort = await freePort();
    const outcome = await runBoth({ IMAGE_COUNT: '2', TRANSPORTS: 'redis,tcp', REDIS_URL: `redis://127.0.0.1:${deadPort}` });
    expect(outcome.succeeded, outcome.summary).toBe(false);
    const [redisSection, tcpSection] = outcome.report.sections;
    expect(redisSection?.ok).toBe(false);
    expect(redisSection?.failure).toMatch(new RegExp(`redis listener is not available: .*${deadPort}`));
    expect(redisSection?.lostCount).toBe(2);
    expect(tcpSection?.ok).toBe(true);
    const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
    expect(log).toContain(`FAILED: receiver's redis listener is not available: no connection to Redis at redis://127.0.0.1:${deadPort}`);
    expect(log).toMatch(/^Redis\s+0\s+2\s+0(\s+-){9}\s+FAILED/m);
  }, 60_000);

  it('serves progress at / during a run, then the run\'s report.html and results.json', async () => {
    const { receiver, transmitterConfig } = await startReceiver(outputDir, { IMAGE_COUNT: '200', IMAGE_SIZE: '64KB', TRANSPORTS: 'tcp,zeromq' });
    const base = `http://127.0.0.1:${transmitterConfig.controlPort}`;
    try {
      let livePage: Promise<string> | undefined;
      const outcome = await runTransmitter(transmitterConfig, {
        sectionStarted(progress) {
          if (progress.transport === 'zeromq') livePage ??= fetch(`${base}/`).then((r) => r.text());
        },
        sectionEnded() {},
      });
      expect(outcome.succeeded, outcome.summary).toBe(true);
      const live = await livePage!;
      expect(live).toContain('<h1>Run in progress</h1>');
      expect(live).toMatch(/TCP \(baseline\)<\/td><td><\/td><td><span class="ok">done: 200\/200 intact/);
      expect(live).toContain('<meta http-equiv="refresh" content="2">');

      const page = await fetch(`${base}/`);
      expect(page.headers.get('content-type')).toContain('text/html');
      const html = await page.text();
      expect(html).toBe(await readFile(path.join(outputDir, 'report.html'), 'utf8'));
      expect(html).toContain('data-chart=');
      const results = (await (await fetch(`${base}/results.json`)).json()) as RunReport;
      expect(results.transports.map((t) => t.transport)).toEqual(['tcp', 'zeromq']);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});
