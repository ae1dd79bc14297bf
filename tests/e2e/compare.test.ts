import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/config.js';
import {
  RESULTS_SCHEMA_VERSION,
  renderResultsJson,
  summarizeTransports,
  type HostFacts,
  type RunReport,
} from '../../services/core/report/report.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { projectPath } from '../../services/shared/paths.js';

// `npm run compare`'s entry as a user runs it, on two results.json files. `npm test` builds dist/
// first (its pretest step).

const entry = projectPath('dist', 'scripts', 'compare.js');
let dir: string;

beforeAll(async () => {
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run "npm run build" first (npm test does)`);
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-compare-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const host: HostFacts = {
  hostname: 'bench',
  cpuModel: 'cpu',
  cores: 2,
  totalMemoryBytes: 2 ** 33,
  platform: 'linux',
  kernel: '6.1',
  nodeVersion: 'v20.20.2',
  bootId: null,
  libraries: {},
};

function section(transport: string, label: string, repeat: number, p50Ms: number, mbps: number): SectionResult {
  return {
    sectionId: repeat,
    transport,
    label,
    baseline: false,
    repeat,
    imageCount: 10,
    warmup: { mode: 'images', images: 0 },
    imageSizeBytes: 545_792,
    window: 1,
    ratePerSecond: null,
    clients: 1,
    receivers: 1,
    receiverIndex: 0,
    clock: null,
    ok: true,
    failure: null,
    imagesFile: null,
    series: [],
    histograms: { oneWayNs: null, rttNs: null },
    okCount: 10,
    corruptCount: 0,
    lostCount: 0,
    duplicateCount: 0,
    outOfOrderCount: 0,
    strayCount: 0,
    totalMs: 10 + repeat,
    latency: {
      count: 10,
      p50Ms,
      p90Ms: p50Ms * 2,
      p99Ms: p50Ms * 2,
      p999Ms: p50Ms * 2,
      minMs: p50Ms,
      maxMs: p50Ms * 2,
      meanMs: p50Ms,
      stdDevMs: 0,
    },
    rtt: null,
    littleRatio: null,
    verifyMs: null,
    throughputMBps: mbps,
    imagesPerSecond: 1000,
    throughputIndicative: true,
    openLoop: null,
    clientFairness: null,
    fanOut: null,
    warmedUp: { images: 0, ms: 0, steady: null, mediansMs: null },
    coldStart: { connectMs: null, firstImageMs: null, firstImageRttMs: null },
    cost: { transmitter: null, receiver: null, broker: null },
  };
}

/** A run of one transport over the given repeats, each [p50 ms, MB/s]. */
function report(startedAt: string, transport: string, label: string, repeats: [number, number][]): RunReport {
  const sections = repeats.map(([p50, mbps], i) => section(transport, label, i + 1, p50, mbps));
  const config = {
    imageCount: 10,
    window: 1,
    warmup: 0,
    repeat: repeats.length,
    transports: [transport],
  } as unknown as Config;
  return {
    schemaVersion: RESULTS_SCHEMA_VERSION,
    stopReason: null,
    run: {
      startedAt,
      imageDescription: 'assets/sample.png',
      imageSizeBytes: 545_792,
      imageCount: 10,
      window: 1,
      warmup: { mode: 'images', images: 0 },
      repeat: repeats.length,
      transports: [transport],
      arrivalNotes: [],
      receivers: 1,
      receiverIndex: 0,
      config,
      hosts: { transmitter: host, receiver: host },
    },
    finishedAt: startedAt,
    sections,
    transports: summarizeTransports(sections, [transport]),
  };
}

function runCompare(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [entry, ...args], { encoding: 'utf8', timeout: 20_000 });
  if (result.error) throw result.error;
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function writeJson(name: string, content: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, content);
  return file;
}

describe('compare entry', () => {
  it('prints the comparison of two results.json files and exits 0', async () => {
    const before = await writeJson(
      'before.json',
      renderResultsJson(
        report('2026-01-01T00:00:00.000Z', 'websocket', 'WebSocket', [
          [1.9, 100],
          [2.0, 101],
          [2.1, 102],
        ]),
      ),
    );
    const after = await writeJson(
      'after.json',
      renderResultsJson(report('2026-01-02T00:00:00.000Z', 'grpc', 'gRPC', [[3, 50]])),
    );
    const afterWs = await writeJson(
      'after-ws.json',
      renderResultsJson(
        report('2026-01-02T00:00:00.000Z', 'websocket', 'WebSocket', [
          [1.0, 150],
          [1.1, 151],
          [1.2, 152],
        ]),
      ),
    );

    const result = runCompare(before, afterWs);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        /^Comparing before: 2026-01-01T00:00:00\.000Z, 10 images of 533\.0 KiB, window 1, warm-up none /.source +
          /\(WARMUP=0: a cold run\), repeat 3, closed loop$/.source,
        'm',
      ),
    );
    expect(result.stdout).toMatch(
      new RegExp(
        /^ +with after: +2026-01-02T00:00:00\.000Z, 10 images of 533\.0 KiB, window 1, warm-up none /.source +
          /\(WARMUP=0: a cold run\), repeat 3, closed loop$/.source,
        'm',
      ),
    );
    expect(result.stdout).toMatch(
      new RegExp(
        /^WebSocket +2\.000 → 1\.100 +−0\.900 \(−45\.0%\) faster \* +4\.000 → 2\.200 +−1\.800 /.source +
          /\(−45\.0%\) faster \* +101\.0 → 151\.0 +\+50\.0 \(\+49\.5%\) faster \*$/.source,
        'm',
      ),
    );
    expect(result.stdout).toContain('?  spread unknown (REPEAT=1): rerun with REPEAT=3 for a verdict');

    const apart = runCompare(before, after);
    expect(apart.code).toBe(0);
    expect(apart.stdout).toMatch(/^gRPC .*not in before run$/m);
    expect(apart.stdout).toMatch(/^WebSocket .*not in after run$/m);
  });

  it('gives no percentage between a closed-loop run and a DURATION run at a RATE; says what it sent', async () => {
    const closedLoop = report('2026-01-01T00:00:00.000Z', 'tcp', 'TCP', [[2, 100]]);
    const closed = await writeJson('closed-loop.json', renderResultsJson(closedLoop));
    // RATE=30 DURATION=20s, as the receiver writes it: no run-level count, each section the 600 it sent.
    const atRate = report('2026-01-02T00:00:00.000Z', 'tcp', 'TCP', [[2, 16]]);
    atRate.run.imageCount = null;
    atRate.run.config = { ...atRate.run.config, ratePerSecond: 30, durationMs: 20_000 };
    atRate.sections = atRate.sections.map((s) => ({
      ...s,
      imageCount: 600,
      okCount: 600,
      ratePerSecond: 30,
      durationMs: 20_000,
      frameAge: { ...s.latency!, p50Ms: 40, p99Ms: 426 },
    }));
    const rate = await writeJson('rate.json', renderResultsJson(atRate));

    const result = runCompare(closed, rate);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        /^ +with after: +2026-01-02T00:00:00\.000Z, 533\.0 KiB images for 20s \(600 sent per transport\), /.source +
          /.*, RATE 30\/s$/.source,
        'm',
      ),
    );
    expect(result.stdout).toContain('  RATE: unset (closed loop) → 30/s\n');
    expect(result.stdout).toContain('  IMAGE_COUNT: 10 → unused (DURATION)\n');
    expect(result.stdout).toMatch(
      new RegExp(
        /^TCP +2\.000 → 40\.000 +not comparable +4\.000 → 426\.000 +not comparable +100\.0 → 16\.0 +/.source +
          /not comparable +not comparable: closed loop vs RATE 30\/s$/.source,
        'm',
      ),
    );
    expect(result.stdout).not.toMatch(/%\)/);
  });

  it('exits 2 naming the file when it is missing, not JSON, or of another schemaVersion', async () => {
    const good = await writeJson(
      'good.json',
      renderResultsJson(report('2026-01-01T00:00:00.000Z', 'tcp', 'TCP', [[1, 100]])),
    );
    const missing = path.join(dir, 'no-such-results.json');
    const notJson = await writeJson('truncated.json', '{"schemaVersion": 2, "run": {');
    const oldVersion = await writeJson(
      'old-version.json',
      JSON.stringify({ ...JSON.parse(renderResultsJson(report('x', 'tcp', 'TCP', [[1, 100]]))), schemaVersion: 1 }),
    );

    const unreadable = runCompare(good, missing);
    expect(unreadable.code).toBe(2);
    expect(unreadable.stdout).toBe('');
    expect(unreadable.stderr).toContain(`${missing}: cannot read it (ENOENT`);

    const invalid = runCompare(notJson, good);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain(`${notJson}: not valid JSON`);

    const wrongVersion = runCompare(good, oldVersion);
    expect(wrongVersion.code).toBe(2);
    expect(wrongVersion.stdout).toBe('');
    expect(wrongVersion.stderr).toContain(
      `${oldVersion}: schemaVersion 1, this tool reads schemaVersion ${RESULTS_SCHEMA_VERSION} only`,
    );
  });

  it('exits 2 with the usage when a file is not given', () => {
    const result = runCompare('only-one.json');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('usage: npm run compare -- <before results.json> <after results.json>');
  });
});
