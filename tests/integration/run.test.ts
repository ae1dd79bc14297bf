import { mkdtemp, readFile, readlink, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderImageLine } from '../../services/core/report/text/output-log.js';
import type { RunReport } from '../../services/core/report/report.js';
import { freePort } from '../../services/shared/net.js';
import { transports } from '../../services/transports/index.js';
import { escapeRegExp, LocalServers, TEST_AUTH_TOKEN } from '../helpers/harness.js';
import { runBoth as runBothInProcess, runTransmitter, startReceiver } from '../helpers/in-process.js';
import { logSections, readImageCsv, readImageRecords } from '../helpers/run-files.js';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';
import { followingReport } from '../../services/core/report/live-page.js';
import { livePageLibraries } from '../../services/shared/report-assets.js';

// Both apps in this process, every transport over real loopback sockets and a real redis-server.

const servers = new LocalServers();
let outputDir: string;
beforeAll(async () => {
  await servers.startFor(transports);
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-run-'));
});
afterAll(async () => {
  await servers.closeAll();
  await rm(outputDir, { recursive: true, force: true });
});

// Every transport unless a test names its own (the default run is only the transports with defaultRun).
const runBoth = (env: Record<string, string>) =>
  runBothInProcess(outputDir, { TRANSPORTS: 'all', ...servers.env(transports), ...env });

describe('a whole run in-process', () => {
  it('moves the asset over every transport, three repeats interleaved in rotated order, and writes output.log and ' +
    'a valid results.json', async () => {
    const outcome = await runBoth({ IMAGE_COUNT: '3', WARMUP: '1', REPEAT: '3' });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
    const n = transports.length;
    for (const t of transports) {
      const title = `${t.label}${t.traits.baseline ? ' (baseline)' : ''}`;
      for (const repeat of [1, 2, 3])
        expect(log).toContain(
          `=== ${title} performance test: 3 images transfer (533.0 KiB each, window 1, repeat ${repeat}/3) ===`,
        );
    }
    expect(log.match(/^Image \d transmission time: \d+\.\d{3} ms$/gm)).toHaveLength(3 * 3 * n);
    expect(log.match(/^Total transfer time: \d+\.\d{3} ms$/gm)).toHaveLength(3 * n);
    expect(log.match(/^Round trip: p50 \d+\.\d{3}, /gm)).toHaveLength(3 * n);
    expect(log).toContain('Spread across completed repeats (min–max):');

    // OUTPUT_DIR's files are links through latest, which points at the run's own folder.
    expect(outcome.runFolder).toMatch(/^runs\/\d{8}T\d{6}Z-[0-9a-f]{6}$/);
    for (const file of ['output.log', 'results.json', 'report.html'])
      expect(await readlink(path.join(outputDir, file))).toBe(path.join('latest', file));
    expect(await realpath(path.join(outputDir, 'latest'))).toBe(
      await realpath(path.join(outputDir, outcome.runFolder!)),
    );
    const results = JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as RunReport;
    expect(resultsSchemaErrors(results)).toEqual([]);
    // The shared secret is in no report, and the schema would refuse one that had it.
    expect(JSON.stringify(results)).not.toContain(TEST_AUTH_TOKEN);
    expect(
      resultsSchemaErrors({
        ...results,
        run: { ...results.run, config: { ...results.run.config, authToken: TEST_AUTH_TOKEN } },
      }),
    ).not.toEqual([]);
    // Interleaved, one section of every transport per repeat, the order rotated each repeat so no
    // transport always follows the same neighbour: A B C, B C A, C A B.
    const order = transports.map((t) => t.name);
    const rotated = (shift: number): string[] => [...order.slice(shift), ...order.slice(0, shift)];
    expect(results.sections.map((s) => `${s.transport}/${s.repeat}`)).toEqual(
      [1, 2, 3].flatMap((repeat) => rotated(repeat - 1).map((t) => `${t}/${repeat}`)),
    );
    expect(results.transports.map((t) => [t.transport, t.repeats, t.completedRepeats, t.okCount])).toEqual(
      order.map((t) => [t, 3, 3, 9]),
    );
    // output.log's sections are results.json's, in order, each image's line streamed as it arrived.
    const logged = logSections(log);
    expect(logged.map((s) => s.heading)).toEqual(
      results.sections.map((s) =>
        expect.stringMatching(new RegExp(`^=== ${escapeRegExp(s.label)}.* repeat ${s.repeat}/3\\) ===$`)),
      ),
    );
    for (const [index, section] of results.sections.entries()) {
      expect(section.okCount).toBe(3);
      // Each section's CSV, named in results.json and in output.log, holds every image with its round trip.
      expect(logged[index]!.footer[0]).toBe(`Per-image records: ${section.imagesFile}`);
      const csv = await readImageCsv(outputDir, section);
      const images = await readImageRecords(outputDir, section);
      expect(images.map((i) => [i.image, i.status])).toEqual([
        [1, 'ok'],
        [2, 'ok'],
        [3, 'ok'],
      ]);
      expect(images.every((i) => i.timeMs !== null && i.timeMs > 0)).toBe(true);
      // Every image's round trip (stamp → ack processed on the transmitter) covers its one-way time.
      for (const image of images) expect(image.rttMs).toBeGreaterThan(image.timeMs!);
      // WINDOW 1: the images arrived in order, and so their lines were written: the figures the CSV has.
      expect(logged[index]!.imageLines).toEqual(
        [1, 2, 3].map((image) => renderImageLine(image, csv.find((l) => l.image === image)!.oneWayNs, 'ok', false)),
      );
      expect(section.rtt?.count).toBe(3);
      expect(section.verifyMs).toBeGreaterThan(0);
      // The total spans from the first send to the last arrival, so it covers every image.
      expect(section.totalMs).toBeGreaterThanOrEqual(Math.max(...images.map((i) => i.timeMs!)));
      expect(section.latency?.p50Ms).toBeGreaterThan(0);
      expect(section.throughputMBps).toBeGreaterThan(0);
      // Both sides in one process here: each side's CPU is that process's, so only its presence is checked.
      for (const side of [section.cost.transmitter, section.cost.receiver]) {
        expect(side?.cpuMs).toBeGreaterThan(0);
        expect(side?.peakRssBytes).toBeGreaterThan(10 * 1024 * 1024);
        expect(side?.eventLoopUtilization).toBeGreaterThan(0);
      }
      // A transport that goes through a broker reports it as a third side: Redis from its own
      // counters (INFO, in microseconds); the others (NATS, Mosquitto, RabbitMQ, whose protocols
      // carry no CPU counter) from /proc of the private server listening on their port, whose
      // 10 ms ticks may not move for three images.
      const deployment = transports.find((t) => t.name === section.transport)?.deployment;
      if (deployment?.localServer !== undefined) {
        if (deployment.setting.envVar === 'REDIS_URL') expect(section.cost.broker?.cpuMs).toBeGreaterThan(0);
        else expect(section.cost.broker?.cpuMs).toBeGreaterThanOrEqual(0);
        expect(section.cost.broker?.peakRssBytes).toBeGreaterThan(1024 * 1024);
        expect(section.cost.broker?.eventLoopUtilization).toBeNull();
      } else {
        expect(section.cost.broker).toBeNull();
      }
      // One host, one kernel: the true offset is 0, and not applied. Each estimate lies within its own
      // bound (half its best round trip), however long a loaded machine makes that round trip.
      expect(section.clock?.applied).toBe(false);
      expect(Math.abs(section.clock!.offsetNs)).toBeLessThanOrEqual(section.clock!.uncertaintyNs);
      // Estimated again after the last ack, and one-way times carry no clock error on one clock.
      expect(Math.abs(section.clockAfter!.offsetNs)).toBeLessThanOrEqual(section.clockAfter!.uncertaintyNs);
      expect(section.clockAfter!.samples).toBe(8);
      expect(section.oneWayClockErrorMs).toBeNull();
    }
    expect(results.run.hosts.receiver.libraries['@grpc/grpc-js']).toMatch(/^\d+\.\d+\.\d+/);
    expect(outcome.summary).toContain('TCP (baseline)');
  }, 90_000);

  it('keeps WINDOW meaning the same on every transport: the window stays full and is never exceeded at WINDOW=16 ' +
    'with 1,000 images', async () => {
    // 1,000 images, not fewer: the first and last windows fill and drain, and over a short section
    // that alone pulls the mean in flight well under WINDOW.
    const imageCount = 1000;
    const outcome = await runBoth({ IMAGE_COUNT: String(imageCount), IMAGE_SIZE: '64KB', WINDOW: '16', WARMUP: '16' });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    expect(outcome.report.sections.map((s) => s.transport)).toEqual(transports.map((t) => t.name));
    const log = logSections(await readFile(path.join(outputDir, 'output.log'), 'utf8'));
    for (const [index, section] of outcome.report.sections.entries()) {
      const images = await readImageRecords(outputDir, section, outcome.runFolder);
      expect(images.map((i) => i.image)).toEqual(Array.from({ length: imageCount }, (_, i) => i + 1));
      // output.log has a line for each image, once, written as it arrived.
      // A latest-frame key's superseded images have theirs too ("Image 7: superseded …").
      expect(new Set(log[index]!.imageLines.map((line) => Number(/^Image (\d+)[ :]/.exec(line)?.[1])))).toEqual(
        new Set(images.map((i) => i.image)),
      );
      expect(log[index]!.imageLines).toHaveLength(imageCount);
      // Images stamped and not yet acknowledged, on average over the first stamp to the last ack
      // (Little's law from the round trips): near WINDOW, never more. A busy sender refills the window
      // late, so below it by a stated margin: over half, where a loop that waited for each ack has 1.
      const flights = images.map((i) => i.rttMs!);
      expect(section.meanInFlight, section.transport).toBeGreaterThan(0.5 * 16);
      expect(section.meanInFlight, section.transport).toBeLessThanOrEqual(16 * 1.000001);
      expect(section.littleRatio).toBeCloseTo(section.meanInFlight! / 16, 9);
      // On one clock no image arrives after its ack.
      expect(section.arrivalsAfterAck).toBe(0);
      expect(flights.every((rttMs, image) => rttMs >= images[image]!.timeMs!)).toBe(true);
    }
  }, 120_000);

  it('keeps a window of images in flight with a generated size, and says when verification is off', async () => {
    const outcome = await runBoth({
      IMAGE_COUNT: '20',
      IMAGE_SIZE: '64KB',
      WINDOW: '8',
      TRANSPORTS: 'tcp,zeromq',
      VERIFY: 'false',
    });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    // Verification off (to measure its cost) is said in the record, never silently.
    expect(await readFile(path.join(outputDir, 'output.log'), 'utf8')).toContain(
      'Integrity: NOT VERIFIED (VERIFY=false',
    );
    expect(outcome.report.sections.map((s) => [s.transport, s.okCount, s.window, s.imageSizeBytes])).toEqual([
      ['tcp', 20, 8, 64_000],
      ['zeromq', 20, 8, 64_000],
    ]);
  }, 60_000);

  it('records a transport whose Redis is down as failed with its reason, and runs the others', async () => {
    const deadPort = await freePort();
    const outcome = await runBoth({
      IMAGE_COUNT: '2',
      TRANSPORTS: 'redis,tcp',
      REDIS_URL: `redis://127.0.0.1:${deadPort}`,
    });
    expect(outcome.succeeded, outcome.summary).toBe(false);
    const [redisSection, tcpSection] = outcome.report.sections;
    expect(redisSection?.ok).toBe(false);
    expect(redisSection?.failure).toMatch(new RegExp(`redis listener is not available: .*${deadPort}`));
    expect(redisSection?.lostCount).toBe(2);
    expect(tcpSection?.ok).toBe(true);
    const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
    expect(log).toContain(
      `FAILED: receiver's redis listener is not available: no connection to Redis at redis://127.0.0.1:${deadPort}`,
    );
    expect(log).toMatch(/^Redis\s+0\s+2\s+0(\s+-){11}\s+FAILED/m);
  }, 60_000);

  it("serves the live page at / during a run, then the run's report.html, results.json and output.log", async () => {
    const { receiver, transmitterConfig } = await startReceiver(outputDir, {
      IMAGE_COUNT: '200',
      IMAGE_SIZE: '64KB',
      TRANSPORTS: 'tcp,zeromq',
    });
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
      // The live page's shell: its figures come from GET /events (tests/integration/live-browser.test.ts).
      expect(live).toContain('<main id="live-dashboard">');
      expect(live).toContain('connect-src &#39;self&#39;');

      const page = await fetch(`${base}/`);
      expect(page.headers.get('content-type')).toContain('text/html');
      const html = await page.text();
      // The report as written, with the script that follows the next run (the file on disk has none).
      const onDisk = await readFile(path.join(outputDir, 'report.html'), 'utf8');
      expect(html).toBe(followingReport(onDisk, livePageLibraries().followScript));
      expect(onDisk).not.toContain("fetch('/progress'");
      expect(html).toContain('data-chart=');
      const results = (await (await fetch(`${base}/results.json`)).json()) as RunReport;
      expect(results.transports.map((t) => t.transport)).toEqual(['tcp', 'zeromq']);
      // output.log too, as written: a receiver on another node needs no copy out.
      const log = await fetch(`${base}/output.log`);
      expect(log.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await log.text()).toBe(await readFile(path.join(outputDir, 'output.log'), 'utf8'));
    } finally {
      await receiver.close();
    }
  }, 60_000);
});
