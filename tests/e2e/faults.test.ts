import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopChild } from '../../services/shared/child-process.js';
import { freePort } from '../../services/shared/net.js';
import type { RunReport } from '../../services/core/report/report.js';
import { exitWithin, freePortsEnv, startService, type ServiceProcess } from '../helpers/processes.js';
import { logSections, readImageCsv } from '../helpers/run-files.js';

// Faults over real processes and sockets: nothing hangs, nothing is lost silently, and every
// failure says what happened. Timeouts are short here so each case ends in seconds.

let outputDir: string;
const running: ServiceProcess[] = [];
const start = (...args: Parameters<typeof startService>): ServiceProcess => {
  const service = startService(...args);
  running.push(service);
  return service;
};

beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-faults-'));
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => stopChild(s.child, 1000)));
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

const base = {
  OUTPUT_DIR: '',
  LOG_LEVEL: 'info',
  TRANSPORTS: 'tcp,websocket',
  IMAGE_TIMEOUT_MS: '1500',
  CONNECT_TIMEOUT_MS: '1500',
};
const envFor = async (dir: string, extra: Record<string, string> = {}): Promise<Record<string, string>> => ({
  ...base,
  OUTPUT_DIR: dir,
  ...(await freePortsEnv()),
  ...extra,
});
// Many small images: a section lasts seconds, so a kill lands inside it.
const longSection = { IMAGE_COUNT: '50000', IMAGE_SIZE: '64KB', WINDOW: '4' };

/** Starts both services and resolves once the TCP section is under way. */
async function startInsideTcpSection(
  env: Record<string, string>,
): Promise<{ receiver: ServiceProcess; transmitter: ServiceProcess }> {
  const receiver = start('receiver', env);
  await receiver.waitForLog(/"msg":"receiver ready"/);
  const transmitter = start('transmitter', env);
  await receiver.waitForLog(/"transport":"tcp".*"msg":"section started"/);
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { receiver, transmitter };
}

describe('faults', () => {
  it('receiver not there: the transmitter retries, then exits 1 naming the host and port', async () => {
    const env = await envFor(outputDir);
    const startedAt = Date.now();
    const transmitter = start('transmitter', env);
    expect(await exitWithin(transmitter, 10_000)).toBe(1);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1500);
    expect(transmitter.stderr()).toContain(
      `receiver at 127.0.0.1:${env.CONTROL_PORT} (CONTROL_PORT) was not ready within 1500 ms (CONNECT_TIMEOUT_MS)`,
    );
  }, 20_000);

  it('receiver killed mid-section: the transmitter stops within IMAGE_TIMEOUT_MS, reports the loss, exits 1; a ' +
    'restarted receiver serves the next run', async () => {
    const dir = await mkdtemp(path.join(outputDir, 'rx-killed-'));
    const env = await envFor(dir, longSection);
    const { receiver, transmitter } = await startInsideTcpSection(env);
    receiver.child.kill('SIGKILL');
    const killedAt = Date.now();
    expect(await exitWithin(transmitter, 15_000)).toBe(1);
    expect(Date.now() - killedAt).toBeLessThan(1500 + 5000);
    expect(transmitter.stdout()).toMatch(/^TCP \(baseline\)\s+\d+\s+[1-9]\d*\s+0\s.*FAILED/m);
    expect(transmitter.stdout()).toContain('INCOMPLETE: the receiver went away');
    // What the receiver had written, and that it is kept: not "no output.log".
    expect(transmitter.stdout()).toMatch(
      new RegExp(
        /The receiver kept what it had written in its OUTPUT_DIR, in runs\/\d{8}T\d{6}Z-…\/: /.source +
          /the run's header, and the TCP section's images up to then\./.source,
      ),
    );

    const restarted = start('receiver', env);
    await restarted.waitForLog(/"msg":"receiver ready"/);
    // That run, ended before the receiver was ready.
    expect(restarted.stderr()).toContain('"msg":"completed a run its receiver never ended');
    const next = start('transmitter', { ...env, IMAGE_COUNT: '3', IMAGE_SIZE: '' });
    expect(await exitWithin(next, 20_000)).toBe(0);
    expect(await readFile(path.join(dir, 'output.log'), 'utf8')).toContain(
      'Result: every transport delivered every image intact.',
    );
  }, 60_000);

  it('transmitter killed mid-section: the receiver writes output.log marked incomplete with the count, and serves ' +
    'the next run', async () => {
    const dir = await mkdtemp(path.join(outputDir, 'tx-killed-'));
    // No warm-up: the kill lands among the recorded images, some of which came.
    const env = await envFor(dir, {
      ...longSection,
      WARMUP: '0',
      IMAGE_TIMEOUT_MS: '1000',
      CONNECT_TIMEOUT_MS: '1000',
    });
    const { receiver, transmitter } = await startInsideTcpSection(env);
    transmitter.child.kill('SIGKILL');
    // The receiver waits out the transmitter's longest wait (1 s) plus 5 s of grace.
    await receiver.waitForLog(/run ended incomplete/, 15_000);
    const log = await readFile(path.join(dir, 'output.log'), 'utf8');
    expect(log).toMatch(
      new RegExp(
        /\nResult: INCOMPLETE: transmitter went away: no frame or control request for \d+ s\. Sections /.source +
          /not listed above did not run\.\n$/.source,
      ),
    );
    const got = Number(/^FAILED: transmitter went away: .*; got (\d+) of 50000 images$/m.exec(log)?.[1]);
    expect(got).toBeGreaterThan(0);
    // The open section's CSV has every image: those that came as they came, then the rest as lost.
    const results = JSON.parse(await readFile(path.join(dir, 'results.json'), 'utf8')) as RunReport;
    const tcp = results.sections.find((s) => s.transport === 'tcp')!;
    expect([tcp.okCount, tcp.lostCount]).toEqual([got, 50_000 - got]);
    const csv = await readImageCsv(dir, tcp);
    expect(csv).toHaveLength(50_000);
    expect(csv.slice(0, got).every((l) => l.status === 'ok' && l.oneWayNs !== null)).toBe(true);
    expect(csv.slice(got).every((l) => l.status === 'lost' && l.oneWayNs === null)).toBe(true);
    expect(new Set(csv.map((l) => l.image)).size).toBe(50_000);
    // output.log lists the lost ones at the section's end, after the lines of those that came.
    const [section] = logSections(log);
    expect(section!.imageLines).toHaveLength(50_000);
    expect(section!.imageLines.slice(got).every((line) => / LOST \(never arrived\)$/.test(line))).toBe(true);

    const next = start('transmitter', { ...env, IMAGE_COUNT: '3', IMAGE_SIZE: '' });
    expect(await exitWithin(next, 20_000)).toBe(0);
    expect(await readFile(path.join(dir, 'output.log'), 'utf8')).toContain(
      'Result: every transport delivered every image intact.',
    );
  }, 60_000);

  it('SIGTERM mid-run: both services close and exit within 5 s, and the receiver flushes output.log', async () => {
    const dir = await mkdtemp(path.join(outputDir, 'sigterm-'));
    const env = await envFor(dir, longSection);
    const { receiver, transmitter } = await startInsideTcpSection(env);
    const sentAt = Date.now();
    transmitter.child.kill('SIGTERM');
    receiver.child.kill('SIGTERM');
    const [transmitterCode, receiverCode] = await Promise.all([
      exitWithin(transmitter, 5000),
      exitWithin(receiver, 5000),
    ]);
    expect(Date.now() - sentAt).toBeLessThan(5000);
    expect(transmitterCode).toBe(1);
    expect(receiverCode).toBe(0);
    const log = await readFile(path.join(dir, 'output.log'), 'utf8');
    expect(log).toMatch(
      /\nResult: INCOMPLETE: receiver stopped by SIGTERM during the run\. Sections not listed above did not run\.\n$/,
    );
    // Its ports are free again: nothing was left listening.
    expect(existsSync(path.join(dir, 'results.json'))).toBe(true);
    const again = start('receiver', env);
    await again.waitForLog(/"msg":"receiver ready"/);
  }, 90_000);

  it('a port already taken: the receiver reports that ' +
    'listener as failed, the others serve, exit 1 for the run', async () => {
    const dir = await mkdtemp(path.join(outputDir, 'port-taken-'));
    const env = await envFor(dir, { IMAGE_COUNT: '2' });
    const squatter = start('receiver', { ...env, TRANSPORTS: 'tcp', CONTROL_PORT: String(await freePort()) });
    await squatter.waitForLog(/"msg":"receiver ready"/);
    const receiver = start('receiver', env);
    await receiver.waitForLog(/"msg":"receiver ready"/);
    const transmitter = start('transmitter', env);
    expect(await exitWithin(transmitter, 20_000)).toBe(1);
    expect(transmitter.stdout()).toMatch(
      /^TCP \(baseline\)\s+0\s+2\s+0\s.*FAILED: receiver's tcp listener is not available: .*EADDRINUSE/m,
    );
    expect(transmitter.stdout()).toMatch(/^WebSocket\s+2\s+0\s+0\s.*\sok$/m);
  }, 90_000);
});
