import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../services/core/report/report.js';
import type { ReceiverApp } from '../../services/receiver/app.js';
import { transports } from '../../services/transports/index.js';
import { LocalServers } from '../helpers/harness.js';
import { configFor, runTransmitter, startReceiver } from '../helpers/in-process.js';
import { logSections, readImageRecords } from '../helpers/run-files.js';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';

// RECEIVERS: one transmitter, three receivers in this process, each with its own ports, over real
// loopback sockets; every image goes to every receiver.

const servers = new LocalServers();
let outputDir: string;
beforeAll(async () => {
  await servers.startFor(transports);
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-receivers-'));
});
afterAll(async () => {
  await servers.closeAll();
  await rm(outputDir, { recursive: true, force: true });
});

const RECEIVERS = 3;
// Every transport that takes several receivers (websocket-push's receivers would all dial one port).
const multiReceiver = transports.filter((t) => t.traits.maxReceivers === undefined);

/** Where receiver `index` (from 0) writes: OUTPUT_DIR for the first, a folder in it for each other. */
const receiverDir = (index: number): string => path.join(outputDir, ...(index === 0 ? [] : [`receiver-${index + 1}`]));

async function runWithReceivers(
  env: Record<string, string>,
): Promise<{ succeeded: boolean; summary: string; reports: RunReport[] }> {
  const started: { receiver: ReceiverApp; controlPort: number }[] = [];
  try {
    for (let index = 0; index < RECEIVERS; index++) {
      const { receiver, transmitterConfig } = await startReceiver(outputDir, env);
      started.push({ receiver, controlPort: transmitterConfig.controlPort });
    }
    const transmitterConfig = configFor(outputDir, env);
    const outcome = await runTransmitter({
      ...transmitterConfig,
      receivers: RECEIVERS,
      receiverAddresses: started.map((s) => ({ host: '127.0.0.1', controlPort: s.controlPort })),
    });
    const reports = await Promise.all(
      started.map(
        async (_, index) =>
          JSON.parse(await readFile(path.join(receiverDir(index), 'results.json'), 'utf8')) as RunReport,
      ),
    );
    return { succeeded: outcome.succeeded, summary: outcome.summary, reports };
  } finally {
    await Promise.all(started.map((s) => s.receiver.close()));
  }
}

describe('RECEIVERS', () => {
  it(
    'sends every image to each of 3 receivers (a copy each, or one publish for pub/sub), every one intact, with ' +
      'per-receiver and aggregate figures',
    async () => {
      const env = {
        ...servers.env(transports),
        TRANSPORTS: multiReceiver.map((t) => t.name).join(','),
        IMAGE_COUNT: '20',
        WINDOW: '4',
        WARMUP: '4',
      };
      const { succeeded, summary, reports } = await runWithReceivers(env);
      expect(succeeded, summary).toBe(true);
      for (const [index, report] of reports.entries()) {
        expect(resultsSchemaErrors(report), `receiver ${index + 1}`).toEqual([]);
        expect([report.run.receivers, report.run.receiverIndex]).toEqual([RECEIVERS, index]);
        for (const section of report.sections) {
          // A latest-frame key (redis-kv) supersedes what it could not read in time: none lost either way.
          const superseded = section.supersededCount ?? 0;
          expect([section.transport, section.receiverIndex, section.okCount + superseded, section.lostCount]).toEqual([
            section.transport,
            index,
            20,
            0,
          ]);
          // Each receiver's own CSV of the section: every image, intact, with its round trip to that receiver.
          const images = await readImageRecords(receiverDir(index), section);
          expect(
            images.map((i) => [i.image, i.status]),
            `receiver ${index + 1} ${section.transport}`,
          ).toEqual(
            Array.from({ length: 20 }, (_, i) => [i + 1, images[i]?.status === 'superseded' ? 'superseded' : 'ok']),
          );
          expect(images.filter((i) => i.status === 'superseded')).toHaveLength(superseded);
          expect(images.every((i) => i.status === 'superseded' || (i.rttMs !== null && i.rttMs > 0))).toBe(true);
        }
      }
      for (const section of reports[0]!.sections) {
        const transport = multiReceiver.find((t) => t.name === section.transport)!;
        expect(section.fanOut?.mode, section.transport).toBe(transport.traits.fanOut ?? 'copies');
        expect(
          section.fanOut?.perReceiver.map((r) => [r.receiver, r.ok, r.okCount + (r.supersededCount ?? 0)]),
          section.transport,
        ).toEqual([0, 1, 2].map((r) => [r, true, 20]));
        const aggregate = section.fanOut?.aggregate;
        expect(
          [(aggregate?.okCount ?? 0) + (aggregate?.supersededCount ?? 0), aggregate?.latency?.count],
          section.transport,
        ).toEqual([60, aggregate?.okCount]);
      }
      // The other receivers' records hold their own figures only.
      for (const report of reports.slice(1)) for (const section of report.sections) expect(section.fanOut).toBeNull();
      const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
      expect(log).toContain('Peers: one transmitter, one connection per transport; 3 receivers, every image to each');
      // Each section's figures in output.log hold every receiver's, under its own heading.
      const sections = logSections(log);
      expect(sections).toHaveLength(multiReceiver.length);
      for (const [index, section] of reports[0]!.sections.entries()) {
        const mode = section.fanOut?.mode === 'one send' ? 'one send reaching all' : 'a copy each';
        expect(sections[index]!.heading).toContain(
          `=== ${section.label}${section.baseline ? ' (baseline)' : ''} performance test:`,
        );
        const aggregate = section.fanOut?.aggregate;
        const superseded = aggregate?.supersededCount ?? 0;
        const counts = superseded === 0 ? '60 intact' : `${aggregate?.okCount} intact, ${superseded} superseded`;
        expect(sections[index]!.footer).toContainEqual(
          expect.stringMatching(new RegExp(`^Receivers: 3, ${mode}: aggregate of ${counts}, p50 \\d+\\.\\d{3}`)),
        );
        expect(sections[index]!.imageLines).toHaveLength(20);
      }
      expect(log).toMatch(/^Receivers: 3, a copy each: aggregate of 60 intact, p50 \d+\.\d{3}/m);
      expect(log).toMatch(/^Receivers: 3, one send reaching all: aggregate of 60 intact/m);
    },
  );
});
