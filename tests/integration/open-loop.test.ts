import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../services/core/report.js';
import { transportByName } from '../../services/transports/index.js';
import { LocalServers } from '../helpers/harness.js';
import { runBoth } from '../helpers/in-process.js';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';

// RATE: an open loop over real loopback sockets, both apps in this process.

const servers = new LocalServers();
let outputDir: string;
beforeAll(async () => {
  await servers.startFor([transportByName('tcp'), transportByName('zeromq-pubsub')]);
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-open-loop-'));
});
afterAll(async () => {
  await servers.closeAll();
  await rm(outputDir, { recursive: true, force: true });
});

const results = async (): Promise<RunReport> => JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as RunReport;

describe('RATE (open loop)', () => {
  it('sends 200 images at RATE=100 in 2 s ± 5 %, on schedule, whatever the acks do', async () => {
    const outcome = await runBoth(outputDir, { TRANSPORTS: 'tcp', IMAGE_COUNT: '200', RATE: '100', WINDOW: '4', WARMUP: '0' });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    const [section] = (await results()).sections;
    // The last image is due 1.99 s after the first: the span from its stamp to the last arrival.
    expect(section?.totalMs).toBeGreaterThanOrEqual(1900);
    expect(section?.totalMs).toBeLessThanOrEqual(2100);
    expect(section?.openLoop?.achievedRatePerSecond).toBeGreaterThanOrEqual(95);
    expect(section?.openLoop?.achievedRatePerSecond).toBeLessThanOrEqual(105);
    expect([section?.okCount, section?.openLoop?.unsentCount, section?.openLoop?.sendLag?.count]).toEqual([200, 0, 200]);
    // Counted from the due time, a time is never shorter than from the stamp.
    expect(section?.openLoop?.latencyFromDue?.minMs).toBeGreaterThanOrEqual(section?.latency?.minMs ?? Infinity);
    const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
    expect(log).toContain('Send schedule: open loop at RATE 100 images/s');
    expect(log).toMatch(/^Open loop: RATE 100 images\/s, achieved \d+\.\d images\/s; none dropped at the sender$/m);
  });

  it('drops at the sender, and counts, every image due while WINDOW are unacknowledged, and delivers the rest intact', async () => {
    const outcome = await runBoth(outputDir, { TRANSPORTS: 'tcp,zeromq-pubsub', IMAGE_COUNT: '400', RATE: '100000', WINDOW: '1', WARMUP: '0' });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    const report = await results();
    expect(resultsSchemaErrors(report)).toEqual([]);
    for (const section of report.sections) {
      const unsent = section.images.filter((i) => i.status === 'unsent').length;
      // 10 µs apart, each due image finds the previous one of 533 KiB still in flight often.
      expect(unsent, section.transport).toBeGreaterThan(0);
      expect([section.openLoop?.unsentCount, section.okCount + unsent, section.lostCount, section.ok]).toEqual([unsent, 400, 0, true]);
      expect(section.openLoop?.sendLag?.count).toBe(400 - unsent);
      expect(section.openLoop?.sendLag?.minMs).toBeGreaterThanOrEqual(0);
    }
    const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
    expect(log).toMatch(/^Open loop: RATE 100,000 images\/s, achieved \d+\.\d images\/s; \d+ DROPPED AT THE SENDER/m);
    expect(log).toMatch(/^Result: every transport delivered every image it sent intact; \d+ images were dropped at the sender under RATE/m);
  });
});
