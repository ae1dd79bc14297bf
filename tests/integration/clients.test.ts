import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../services/core/report/report.js';
import { MAX_CONNECTIONS_PER_LISTENER } from '../../services/transports/kit/door.js';
import { transports } from '../../services/transports/index.js';
import { LocalServers } from '../helpers/harness.js';
import { runBoth } from '../helpers/in-process.js';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';

// CLIENTS: several connections per section, each with its own window, over real loopback sockets.

const servers = new LocalServers();
let outputDir: string;
beforeAll(async () => {
  await servers.startFor(transports);
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-clients-'));
});
afterAll(async () => {
  await servers.closeAll();
  await rm(outputDir, { recursive: true, force: true });
});

const results = async (): Promise<RunReport> =>
  JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as RunReport;
// Every transport that can take several clients (websocket-push's receiver dials one connection back).
const multiClient = transports.filter((t) => t.traits.maxClients === undefined).map((t) => t.name);

describe('CLIENTS', () => {
  it(
    'sends over 4 connections per transport, each with its own window, every image intact, with per-client ' +
      'fairness',
    async () => {
      const outcome = await runBoth(outputDir, {
        ...servers.env(transports),
        TRANSPORTS: multiClient.join(','),
        CLIENTS: '4',
        IMAGE_COUNT: '40',
        WINDOW: '2',
        WARMUP: '8',
      });
      expect(outcome.succeeded, outcome.summary).toBe(true);
      const report = await results();
      expect(resultsSchemaErrors(report)).toEqual([]);
      expect(report.sections.map((s) => s.transport)).toEqual(multiClient);
      for (const section of report.sections) {
        expect([section.transport, section.clients, section.okCount, section.clientFairness?.clients]).toEqual([
          section.transport,
          4,
          40,
          4,
        ]);
        // Images go to whichever client has room: every client carried some, and they add up.
        expect(section.clientFairness?.fewestImages, section.transport).toBeGreaterThan(0);
        expect(section.clientFairness?.jainIndex, section.transport).toBeGreaterThan(0.25);
        expect(section.clientFairness?.jainIndex, section.transport).toBeLessThanOrEqual(1);
      }
      const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
      expect(log).toContain(
        'Peers: one transmitter with 4 clients (connections) per transport, each with its own window; one receiver',
      );
      expect(log).toMatch(
        /^=== TCP \(baseline\) performance test: 40 images transfer \(533\.0 KiB each, window 2, 4 clients\) ===$/m,
      );
      expect(log).toMatch(
        new RegExp(
          /^Clients: 4 connections, each with its own window: \d+–\d+ images each; slowest \d+\.\d MB\/s, /.source +
            /fastest \d+\.\d MB\/s/.source,
          'm',
        ),
      );
    },
  );

  it(
    `admits more connections than a listener keeps otherwise (${MAX_CONNECTIONS_PER_LISTENER}): the cap follows ` +
      `the open section`,
    async () => {
      const outcome = await runBoth(outputDir, {
        TRANSPORTS: 'tcp,websocket',
        CLIENTS: '50',
        IMAGE_COUNT: '100',
        WINDOW: '1',
        WARMUP: '50',
        IMAGE_SIZE: '4KiB',
      });
      expect(outcome.succeeded, outcome.summary).toBe(true);
      for (const section of (await results()).sections)
        expect([section.clients, section.okCount, section.clientFairness?.clients]).toEqual([50, 100, 50]);
    },
  );
});
