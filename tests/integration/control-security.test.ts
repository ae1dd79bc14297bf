import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config.js';
import type { ReceiverApp } from '../../services/receiver/app.js';
import { startReceiver } from '../helpers/in-process.js';

// The control endpoint accepts only what the protocol defines, in small bodies, and serves only
// its own fixed files: nothing from the network names a path.

let outputDir: string;
let receiver: ReceiverApp;
let config: Config;
const url = (route: string): string => `http://127.0.0.1:${config.controlPort}${route}`;
const post = (route: string, body: string): Promise<Response> => fetch(url(route), { method: 'POST', headers: { 'content-type': 'application/json' }, body });

beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-control-'));
  ({ receiver, transmitterConfig: config } = await startReceiver(outputDir, { TRANSPORTS: 'tcp' }));
});
afterAll(async () => {
  await receiver?.close();
  await rm(outputDir, { recursive: true, force: true });
});

describe('control endpoint', () => {
  it('refuses a body over its 64 KiB limit with 413', async () => {
    expect((await post('/runs', JSON.stringify({ padding: 'x'.repeat(1024 * 1024) }))).status).toBe(413);
  });

  it('refuses bodies outside the protocol with 400: unknown fields, wrong types, no coercion', async () => {
    expect((await post('/runs', JSON.stringify({ hello: 'world' }))).status).toBe(400);
    const plan = { sectionId: 1, transport: 'tcp', label: 'TCP', baseline: true, repeat: 1, imageCount: '5', warmup: 0, imageSizeBytes: 10, window: 1, clock: null };
    expect((await post('/sections', JSON.stringify(plan))).status).toBe(400);
    expect((await post('/sections', JSON.stringify({ ...plan, imageCount: 5, extra: true }))).status).toBe(400);
    expect((await post('/sections/1/end', JSON.stringify({ failure: 7, transmitterCost: null }))).status).toBe(400);
    expect((await post('/runs', 'not json')).status).toBe(400);
  });

  it('knows only its own routes and files', async () => {
    expect((await fetch(url('/../../etc/passwd'))).status).toBe(404);
    expect((await fetch(url('/output.log'))).status).toBe(404);
    expect((await fetch(url('/results.json'))).status).toBe(404);
    expect((await post('/sections/%2e%2e%2fetc/end', JSON.stringify({ failure: null, transmitterCost: null, rttNs: [] }))).status).toBe(409);
    const page = await fetch(url('/'));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('No run has finished yet');
  });
});
