import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/config.js';
import type { ReceiverApp } from '../../services/receiver/app.js';
import { failedSectionEnd, type HealthResponse } from '../../services/core/control/control-protocol.js';
import { TEST_AUTH_TOKEN } from '../helpers/harness.js';
import { startReceiver } from '../helpers/in-process.js';

// The control endpoint accepts only what the protocol defines, in small bodies, from the holder of
// AUTH_TOKEN only, and serves only its own fixed files: nothing from the network names a path.

let outputDir: string;
let receiver: ReceiverApp;
let config: Config;
const url = (route: string): string => `http://127.0.0.1:${config.controlPort}${route}`;
/** A POST with the test token, another token, or (null) none. */
const post = (route: string, body: string, token: string | null = TEST_AUTH_TOKEN): Promise<Response> =>
  fetch(url(route), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    body,
  });
const health = async (): Promise<HealthResponse> => (await (await fetch(url('/health'))).json()) as HealthResponse;

beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-control-'));
  ({ receiver, transmitterConfig: config } = await startReceiver(outputDir, { TRANSPORTS: 'tcp' }));
});
afterAll(async () => {
  await receiver?.close();
  await rm(outputDir, { recursive: true, force: true });
});

describe('control endpoint', () => {
  it(
    'refuses every request that changes state without AUTH_TOKEN (401) or with a wrong one (403), and changes ' +
      'nothing',
    async () => {
      const plan = {
        sectionId: 1,
        transport: 'tcp',
        label: 'TCP',
        baseline: true,
        repeat: 1,
        imageCount: 5,
        warmup: { mode: 'images', images: 0 },
        imageSizeBytes: 10,
        window: 1,
        clock: null,
      };
      const requests: [string, string][] = [
        ['/runs', JSON.stringify({ hello: 'world' })],
        ['/sections', JSON.stringify(plan)],
        ['/sections/1/measure', JSON.stringify({ images: 0, ms: 0, steady: null, mediansMs: null })],
        ['/sections/1/end', JSON.stringify({ ...failedSectionEnd('test'), failure: null })],
        ['/runs/finish', ''],
      ];
      const before = (await health()).counters;
      for (const [route, body] of requests) {
        const missing = await post(route, body, null);
        expect(missing.status, route).toBe(401);
        expect(missing.headers.get('www-authenticate'), route).toMatch(/^Bearer/);
        expect((await post(route, body, 'not-the-token-0123456789')).status, route).toBe(403);
      }
      // The clock is the transmitter's too: answering it keeps a run alive.
      expect((await fetch(url('/clock'))).status).toBe(401);
      const after = await health();
      expect(after.counters.refusedRequests).toBe(before.refusedRequests + 2 * requests.length + 1);
      // Nothing started: no run is in progress and no file was written.
      expect((await fetch(url('/results.json'))).status).toBe(404);
      expect(await readdir(outputDir)).toEqual([]);
      expect(await (await fetch(url('/'))).text()).toContain('No run has finished yet');
    },
  );

  it('keeps GET /, /health, /progress, /results.json and /output.log open to anyone', async () => {
    expect((await fetch(url('/health'))).status).toBe(200);
    const progress = await fetch(url('/progress'));
    expect(progress.status).toBe(200);
    expect(await progress.json()).toEqual({ inProgress: false, transport: null, recorded: 0, imageCount: 0 });
    expect((await fetch(url('/'))).status).toBe(200);
    expect((await fetch(url('/results.json'))).status).toBe(404); // open, but no run has finished
    expect((await fetch(url('/output.log'))).status).toBe(404);
  });

  it('refuses a body over its 64 KiB limit with 413', async () => {
    expect((await post('/runs', JSON.stringify({ padding: 'x'.repeat(1024 * 1024) }))).status).toBe(413);
  });

  it('refuses bodies outside the protocol with 400: unknown fields, wrong types, no coercion', async () => {
    expect((await post('/runs', JSON.stringify({ hello: 'world' }))).status).toBe(400);
    const plan = {
      sectionId: 1,
      transport: 'tcp',
      label: 'TCP',
      baseline: true,
      repeat: 1,
      imageCount: '5',
      warmup: { mode: 'images', images: 0 },
      imageSizeBytes: 10,
      window: 1,
      clock: null,
    };
    expect((await post('/sections', JSON.stringify(plan))).status).toBe(400);
    expect((await post('/sections', JSON.stringify({ ...plan, imageCount: 5, extra: true }))).status).toBe(400);
    expect((await post('/sections/1/end', JSON.stringify({ failure: 7, transmitterCost: null }))).status).toBe(400);
    expect((await post('/runs', 'not json')).status).toBe(400);
  });

  it('takes POST /sections/:id/measure only with a warm-up outcome as its body', async () => {
    const outcome = { images: 0, ms: 0, steady: null, mediansMs: null };
    for (const body of [
      '',
      '{}',
      JSON.stringify({ images: 0, ms: 0, steady: null }),
      JSON.stringify({ ...outcome, images: -1 }),
      JSON.stringify({ ...outcome, images: 1.5 }),
      JSON.stringify({ ...outcome, ms: -1 }),
      JSON.stringify({ ...outcome, steady: 'yes' }),
      JSON.stringify({ ...outcome, mediansMs: [1] }),
      JSON.stringify({ ...outcome, mediansMs: Array.from({ length: 17 }, () => 1) }),
      JSON.stringify({ ...outcome, mediansMs: [1, -2] }),
      JSON.stringify({ ...outcome, extra: true }),
    ]) {
      expect((await post('/sections/1/measure', body)).status, body).toBe(400);
    }
    // A well-formed outcome gets as far as the section check: none is open.
    expect((await post('/sections/1/measure', JSON.stringify(outcome))).status).toBe(409);
    expect(
      (
        await post(
          '/sections/1/measure',
          JSON.stringify({ images: 1234, ms: 812.5, steady: false, mediansMs: [0.3, 0.4] }),
        )
      ).status,
    ).toBe(409);
  });

  it('knows only its own routes and files', async () => {
    expect((await fetch(url('/../../etc/passwd'))).status).toBe(404);
    expect((await fetch(url('/output.log'))).status).toBe(404);
    expect((await fetch(url('/results.json'))).status).toBe(404);
    expect(
      (await post('/sections/%2e%2e%2fetc/end', JSON.stringify({ ...failedSectionEnd('test'), failure: null }))).status,
    ).toBe(409);
    const page = await fetch(url('/'));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('No run has finished yet');
  });
});
