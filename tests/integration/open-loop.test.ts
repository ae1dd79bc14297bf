import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../services/core/report/report.js';
import { OVERLOAD_RATE_SHARE } from '../../services/core/model/section.js';
import { transportByName } from '../../services/transports/index.js';
import { LocalServers } from '../helpers/harness.js';
import { runBoth } from '../helpers/in-process.js';
import { readImageCsv } from '../helpers/run-files.js';
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

const results = async (): Promise<RunReport> =>
  JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as RunReport;

describe('RATE (open loop)', () => {
  it(
    'sends each of 200 images at RATE=100 no earlier than its due time, none dropped at the sender, and says ' +
      'whether it kept up',
    async () => {
      const outcome = await runBoth(outputDir, {
        TRANSPORTS: 'tcp',
        IMAGE_COUNT: '200',
        RATE: '100',
        WINDOW: '4',
        WARMUP: '0',
      });
      expect(outcome.succeeded, outcome.summary).toBe(true);
      const [section] = (await results()).sections;
      const open = section?.openLoop;
      // Every planned image sent (stamped, with its send lag) and delivered intact: the schedule
      // delays an image, never drops it, whatever a busy machine does to the pace.
      expect([section?.okCount, section?.lostCount, open?.sendLag?.count]).toEqual([200, 0, 200]);
      const csv = await readImageCsv(outputDir, section!);
      expect(csv.map((l) => l.image).sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      // Never ahead of the schedule: each stamp is at or after its due time (stamp − due ≥ 0).
      expect(csv.filter((l) => l.dueLagNs === null || l.dueLagNs < 0)).toEqual([]);
      // The pace, with wide margins: the last image is due 1.99 s after the first, so the span from
      // the first stamp to the last arrival is no shorter (less the first image's own lag); on a
      // loaded machine images go late, so it may be longer, and the rates lower, but not by half.
      expect(section!.totalMs).toBeGreaterThanOrEqual(1990 - Math.min(...csv.map((l) => l.dueLagNs!)) / 1e6);
      expect(section!.totalMs).toBeLessThan(4000);
      for (const rate of [open?.achievedRatePerSecond, open?.deliveredRatePerSecond]) {
        expect(rate).toBeGreaterThan(50);
        expect(rate).toBeLessThanOrEqual(105);
      }
      // Counted from the due time, a time is never shorter than from the stamp.
      expect(open?.latencyFromDue?.minMs).toBeGreaterThanOrEqual(section?.latency?.minMs ?? Infinity);
      // Kept up or OVERLOADED is what the rates say, and output.log says the same.
      const overloaded =
        Math.min(open!.achievedRatePerSecond!, open!.deliveredRatePerSecond!) < OVERLOAD_RATE_SHARE * 100;
      expect(open?.overloaded).toBe(overloaded);
      const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
      expect(log).toContain('Send schedule: open loop at RATE 100 images/s');
      expect(log).toMatch(
        new RegExp(
          `^Open loop: RATE 100 images/s offered, sent at \\d+\\.\\d and delivered at \\d+\\.\\d images/s: ` +
            (overloaded ? 'OVERLOADED' : 'kept up$'),
          'm',
        ),
      );
    },
  );

  it(
    'sends late, never drops, every image due while WINDOW are unacknowledged, counts the wait from its due time, ' +
      'and says OVERLOADED',
    async () => {
      const outcome = await runBoth(outputDir, {
        TRANSPORTS: 'tcp,zeromq-pubsub',
        IMAGE_COUNT: '400',
        RATE: '100000',
        WINDOW: '1',
        WARMUP: '0',
      });
      expect(outcome.succeeded, outcome.summary).toBe(true);
      const report = await results();
      expect(resultsSchemaErrors(report)).toEqual([]);
      for (const section of report.sections) {
        const open = section.openLoop;
        // 10 µs apart, 533 KiB each through a window of one: no transport here keeps up.
        expect(
          [section.okCount, section.lostCount, section.ok, open?.overloaded, open?.sendLag?.count],
          section.transport,
        ).toEqual([400, 0, true, true, 400]);
        expect(open?.achievedRatePerSecond, section.transport).toBeLessThan(95_000);
        // The backlog grows through the section: the last image waited far longer than its own transfer took.
        expect(open?.sendLag?.maxMs, section.transport).toBeGreaterThan(section.latency!.maxMs);
        expect(open?.latencyFromDue?.p99Ms, section.transport).toBeGreaterThan(section.latency!.p99Ms!);
        // Each image's record in the section's CSV carries its stamp − due beside its round trip: the send lags
        // summarized above.
        const csv = await readImageCsv(outputDir, section);
        expect(
          csv.map((l) => l.image).sort((a, b) => a - b),
          section.transport,
        ).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
        expect(
          csv.every((l) => l.status === 'ok' && l.dueLagNs !== null && l.rttNs !== null),
          section.transport,
        ).toBe(true);
        expect(Math.max(...csv.map((l) => l.dueLagNs!)) / 1e6, section.transport).toBe(open?.sendLag?.maxMs);
      }
      const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
      expect(log).not.toContain('NOT SENT');
      expect(log).toMatch(
        /^Open loop: RATE 100,000 images\/s offered, sent at \d+\.\d and delivered at \d+\.\d images\/s: OVERLOADED/m,
      );
      expect(log).toMatch(/^Result: every transport delivered every image intact; 2 sections were OVERLOADED at RATE/m);
    },
  );
});
