import http from 'node:http';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReceiverApp } from '../../services/receiver/app.js';
import type { RunHeadline } from '../../services/core/report/runs-list.js';
import { RUNS_PAGE_CSP } from '../../services/core/report/runs-page.js';
import type { Config } from '../../services/core/config/config.js';
import { runTransmitter, startReceiver } from '../helpers/in-process.js';

// GET /runs and its companions over real HTTP, on a receiver whose OUTPUT_DIR holds two real runs
// (made here, in this process, with different settings), one made while a listing is taken, and
// planted folders: a corrupt results.json, a partial one, one whose receiver never ended it, a
// link with a run folder's name.

const CORRUPT = '20200101T000000Z-c0c0c0';
const PARTIAL = '20200101T000001Z-d0d0d0';
const NOT_ENDED = '20200101T000002Z-e0e0e0';
const LINKED = '29990101T000000Z-f0f0f0';

let outputDir: string;
let outside: string;
let receiver: ReceiverApp;
let transmitterConfig: Config;
let base: string;
let first: string;
let second: string;
/** /runs.json as taken while the second run's section was open. */
let midRun: { runs: RunHeadline[] };

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A GET whose path goes out exactly as written (no URL normalization of "..", "%2F"), within 10 s. */
function get(rawPath: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port: transmitterConfig.controlPort, path: rawPath }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.setTimeout(10_000, () => request.destroy(new Error(`GET ${rawPath} timed out`)));
    request.on('error', reject);
  });
}

const listing = async (): Promise<{ total: number; limit: number; runs: RunHeadline[] }> =>
  JSON.parse((await get('/runs.json')).body) as { total: number; limit: number; runs: RunHeadline[] };

beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-runs-page-'));
  outside = await mkdtemp(path.join(os.tmpdir(), 'itb-runs-outside-'));
  ({ receiver, transmitterConfig } = await startReceiver(outputDir, { TRANSPORTS: 'tcp,websocket', WARMUP: '0' }));
  base = `http://127.0.0.1:${transmitterConfig.controlPort}`;
  const one = await runTransmitter({ ...transmitterConfig, imageCount: 4 });
  expect(one.succeeded, one.summary).toBe(true);
  // Folder names start with the start second: the second run starts in a later one, so it sorts newer.
  const startSecond = Math.floor(Date.now() / 1000);
  while (Math.floor(Date.now() / 1000) === startSecond) await new Promise((resolve) => setTimeout(resolve, 50));
  // RATE=10 keeps each of its sections open about 1 s: the listing taken as the first opens sees the run in progress.
  let taking: Promise<{ runs: RunHeadline[] }> | undefined;
  const two = await runTransmitter(
    { ...transmitterConfig, transports: ['tcp'], imageCount: 10, window: 2, ratePerSecond: 10 },
    {
      sectionStarted() {
        taking ??= listing();
      },
      sectionEnded() {},
    },
  );
  expect(two.succeeded, two.summary).toBe(true);
  midRun = await taking!;
  first = path.basename(one.runFolder!);
  second = path.basename(two.runFolder!);
  const runsDir = path.join(outputDir, 'runs');
  for (const [name, text] of [
    [CORRUPT, '{"schemaVersion": 7, "run": {"startedAt": "2020-01-01T00:00:00'],
    [PARTIAL, '{"schemaVersion": 7, "run": {"window": 1}, "sections": [], "transports": []}'],
  ] as const) {
    await mkdir(path.join(runsDir, name));
    await writeFile(path.join(runsDir, name, 'results.json'), text);
  }
  const unended = JSON.parse(await readFile(path.join(runsDir, first, 'results.json'), 'utf8')) as object;
  await mkdir(path.join(runsDir, NOT_ENDED));
  await writeFile(
    path.join(runsDir, NOT_ENDED, 'results.json'),
    JSON.stringify({ ...unended, stopReason: 'in progress: the run has not ended' }),
  );
  // A link with a run folder's name, to a copy of a real run outside OUTPUT_DIR: never listed nor served.
  await cp(path.join(runsDir, first), path.join(outside, 'run'), { recursive: true });
  await symlink(path.join(outside, 'run'), path.join(runsDir, LINKED));
}, 60_000);

afterAll(async () => {
  await receiver?.close();
  await rm(outputDir, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

describe('GET /runs', () => {
  it('lists the kept runs newest first, with display names, settings, verdict and MB/s', async () => {
    const { total, limit, runs } = await listing();
    expect(limit).toBe(200);
    expect(total).toBe(5);
    expect(runs.map((r) => [r.folder, r.state])).toEqual([
      [second, 'finished'],
      [first, 'finished'],
      [NOT_ENDED, 'not-ended'],
      [PARTIAL, 'unreadable'],
      [CORRUPT, 'unreadable'],
    ]);
    const [newest, older] = runs as [RunHeadline, RunHeadline];
    expect(newest.settings).toEqual([
      '10 images of 533.0 KiB',
      'window 2',
      'repeat 1',
      'warm-up none (WARMUP=0: a cold run)',
      'RATE 10/s',
    ]);
    expect(older.settings.slice(0, 2)).toEqual(['4 images of 533.0 KiB', 'window 1']);
    expect(older.transports.map((t) => t.title)).toEqual(['TCP (baseline)', 'WebSocket']);
    for (const t of [...newest.transports, ...older.transports]) expect(t.throughputMBps).toBeGreaterThan(0);
    expect(newest.verdict).toEqual({ ok: true, text: 'every image intact' });
    expect(runs[3]!.problem).toBe(
      'partial: run.startedAt, run.imageCount, run.imageSizeBytes, run.repeat, ' + 'run.transports, run.warmup missing',
    );
    expect(runs[4]!.problem).toMatch(/^not valid JSON \(/);
  });

  it('listed the run open in this receiver as in progress, without a verdict', () => {
    const open = midRun.runs.find((r) => r.folder === second);
    expect(open).toMatchObject({ state: 'in-progress', verdict: null });
  });

  it('serves the page under its CSP, linking each finished run to its report', async () => {
    const page = await get('/runs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(RUNS_PAGE_CSP);
    for (const folder of [first, second]) expect(page.body).toContain(`<a href="/runs/${folder}/report.html">`);
    expect(page.body).toContain('results.json unreadable: not valid JSON');
    expect(page.body).not.toContain(LINKED);
  });

  it('serves a listed run’s report.html and results.json as they are on disk', async () => {
    for (const file of ['report.html', 'results.json']) {
      const answer = await get(`/runs/${first}/${file}`);
      expect(answer.status).toBe(200);
      expect(answer.body).toBe(await readFile(path.join(outputDir, 'runs', first, file), 'utf8'));
    }
    expect((await get(`/runs/${first}/report.html`)).headers['content-security-policy']).toContain(
      "default-src 'none'",
    );
    // No report yet for a run that never ended, but its results.json is there.
    expect((await get(`/runs/${NOT_ENDED}/report.html`)).status).toBe(404);
  });

  // Paths as functions: the folders are named once the runs are made.
  it.each([
    ['a link with a run folder’s name', () => `/runs/${LINKED}/report.html`],
    ['a run folder’s form that is not kept', () => '/runs/20200101T000000Z-000000/report.html'],
    ['..', () => '/runs/../latest/report.html'],
    ['an encoded ..', () => '/runs/%2e%2e/report.html'],
    ['encoded slashes', () => `/runs/..%2F..%2F${path.basename(outside)}%2Frun/report.html`],
    ['an encoded slash inside a name', () => `/runs/${first}%2F..%2F${second}/report.html`],
    ['the latest link', () => '/runs/latest/results.json'],
    ['a file not served', () => `/runs/${first}/output.log`],
  ])('refuses %s with 404', async (_name, rawPath) => {
    const answer = await get(rawPath());
    expect(answer.status).toBe(404);
    expect(answer.body).not.toContain('schemaVersion');
  });
});

describe('GET /runs/compare', () => {
  it('compares two runs: differing settings first with the warning, one line per run and transport', async () => {
    const answer = await get(`/runs/compare?a=${first}&b=${second}`);
    expect(answer.status).toBe(200);
    expect(answer.headers['content-security-policy']).toBe(RUNS_PAGE_CSP);
    const settings = [...answer.body.matchAll(/<tr( class="differs")?><th>([^<]+)<\/th><td>/g)].map((m) => [
      m[2],
      m[1] !== undefined,
    ]);
    // The first run went in a closed loop, the second at RATE 10.
    expect(settings.slice(0, 5)).toEqual([
      ['RATE', true],
      ['IMAGE_COUNT', true],
      ['TRANSPORTS', true],
      ['WINDOW', true],
      ['DURATION', false],
    ]);
    expect(answer.body).toContain('Warning: the runs differ in these settings');
    // A closed loop against a RATE: each run's figures, never a change between them.
    expect(answer.body).toContain('not comparable: closed loop vs RATE 10/s');
    expect(answer.body).not.toMatch(/%\)/);
    expect(answer.body.match(/<tr><th rowspan="2">TCP \(baseline\)<\/th><td>before · /g)).toHaveLength(1);
    expect(answer.body).toMatch(/<tr><td>after · [^<]+<\/td><td class="number">\d+\.\d{3}<span class="change">/);
    // WebSocket is in the first run only: compare's own note says so.
    expect(answer.body).toContain('not in after run');
  });

  it('refuses a corrupt run (409) and one not kept (404), with the form again', async () => {
    const corrupt = await get(`/runs/compare?a=${first}&b=${CORRUPT}`);
    expect(corrupt.status).toBe(409);
    expect(corrupt.body).toContain(`Cannot compare: ${CORRUPT}: not valid JSON`);
    expect(corrupt.body).toContain('<form method="get" action="/runs/compare">');
    for (const query of [`a=${first}&b=..%2F..%2Fetc`, `a=${first}&b=${LINKED}`, `a=${first}`]) {
      const answer = await get(`/runs/compare?${query}`);
      expect(answer.status, query).toBe(404);
    }
  });

  it('needs no AUTH_TOKEN, like GET /health', async () => {
    const answer = await fetch(`${base}/runs.json`);
    expect(answer.status).toBe(200);
  });
});
