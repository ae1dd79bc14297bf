import { mkdtemp, readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunReport } from '../../services/core/report/report.js';
import {
  exitWithin,
  freePortsEnv,
  startReadyReceiver,
  startService,
  stopService,
  type ServiceProcess,
} from '../helpers/processes.js';

// A receiver killed in a run (not under npm start: compose restarts it, or a person does) leaves
// the run's folder with its finished sections and the open one's records. A receiver started again
// on that OUTPUT_DIR ends the run before it serves; one already running there ends it between runs.

const services: ServiceProcess[] = [];
let outputDir: string | undefined;
afterEach(async () => {
  for (const service of services.splice(0)) await stopService(service);
  if (outputDir) await rm(outputDir, { recursive: true, force: true });
});

// Two sections of 5 s each: the kill lands in the second, once some of its records are on disk. The transmitter's
// waits are short, so that it gives up on the killed receiver soon.
const runEnv = {
  TRANSPORTS: 'tcp,websocket',
  IMAGE_COUNT: '100',
  RATE: '20',
  WARMUP: '0',
  LOG_LEVEL: 'info',
  IMAGE_TIMEOUT_MS: '5000',
  CONNECT_TIMEOUT_MS: '5000',
};

/** Starts a transmitter against `killed`, and SIGKILLs that receiver once the second section has records on disk. */
async function killInSecondSection(
  env: Record<string, string>,
  killed: ServiceProcess,
): Promise<{ runDir: string; transmitter: ServiceProcess }> {
  const transmitter = startService('transmitter', env);
  services.push(transmitter);
  const runs = path.join(env.OUTPUT_DIR!, 'runs');
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (Date.now() > deadline)
      throw new Error(
        `the second section never wrote records; receiver:\n${killed.stderr().slice(-2000)}\n` +
          `transmitter:\n${transmitter.stderr().slice(-2000)}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const [name] = await readdir(runs).catch(() => [] as string[]);
    if (name === undefined) continue;
    const csv = await readFile(path.join(runs, name, 'images-02-websocket.csv'), 'utf8').catch(() => '');
    if (csv.split('\n').filter(Boolean).length >= 4) {
      killed.child.kill('SIGKILL');
      await killed.exited;
      return { runDir: path.join(runs, name), transmitter };
    }
  }
}

/** The run in `runDir` once it has ended (`latest` pointing at it), or undefined while it has not. */
async function endedRun(outputDir: string, runDir: string): Promise<RunReport | undefined> {
  const latest = await readlink(path.join(outputDir, 'latest')).catch(() => undefined);
  if (latest !== path.relative(outputDir, runDir)) return undefined;
  return JSON.parse(await readFile(path.join(runDir, 'results.json'), 'utf8')) as RunReport;
}

/** Asserts that `report` is the killed run, ended: the first section whole, the second failed with what came. */
async function expectEnded(report: RunReport | undefined, runDir: string): Promise<void> {
  expect(report?.stopReason).toMatch(
    new RegExp(
      /^the receiver stopped before the run ended \(its receiver, process \d+ on .+, is gone\); /.source +
        /completed by the next receiver on its OUTPUT_DIR$/.source,
    ),
  );
  expect(report!.sections.map((s) => [s.transport, s.ok])).toEqual([
    ['tcp', true],
    ['websocket', false],
  ]);
  expect(report!.sections[0]!.okCount).toBe(100);
  expect(report!.sections[1]!.okCount).toBeGreaterThanOrEqual(3);
  expect(report!.sections[1]!.okCount + report!.sections[1]!.lostCount).toBe(100);
  expect((await stat(path.join(runDir, 'report.html'))).size).toBeGreaterThan(0);
  expect(await readFile(path.join(runDir, 'output.log'), 'utf8')).toContain(
    'Result: INCOMPLETE: the receiver stopped before the run ended',
  );
  // It names no writer any more: no receiver looks at it again.
  expect((await readdir(runDir)).filter((name) => name.startsWith('.'))).toEqual([]);
}

describe('a receiver SIGKILLed mid-run', () => {
  it('started again, ends that run within 5 s of starting, before it is ready: results.json with its sections and ' +
    'the INCOMPLETE verdict, report.html, latest pointing at it', async () => {
    outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-restart-'));
    const env = { ...(await freePortsEnv()), ...runEnv, OUTPUT_DIR: outputDir };
    const killed = await startReadyReceiver(env);
    services.push(killed);
    const { runDir, transmitter } = await killInSecondSection(env, killed);

    // The transmitter says what the receiver had written, and where.
    expect(await exitWithin(transmitter, 60_000)).toBe(1);
    expect(transmitter.stdout()).toContain(
      `The receiver kept what it had written in its OUTPUT_DIR, in runs/${path.basename(runDir).slice(0, 16)}-…/: ` +
        "the section that ended (TCP) whole, and the WebSocket section's images up to then. A receiver started " +
        'again on that OUTPUT_DIR ends the run there, marked INCOMPLETE.',
    );

    const startedAt = Date.now();
    const restarted = startService('receiver', env);
    services.push(restarted);
    for (;;) {
      const report = await endedRun(outputDir, runDir);
      if (report !== undefined) {
        await expectEnded(report, runDir);
        break;
      }
      expect(Date.now() - startedAt, `not ended yet; receiver:\n${restarted.stderr()}`).toBeLessThan(5000);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Ended before the receiver was ready (its control port answered "starting" until then).
    await restarted.waitForLog(/"msg":"receiver ready"/);
    const log = restarted.stderr();
    expect(log.indexOf('"msg":"completed a run its receiver never ended')).toBeGreaterThan(-1);
    expect(log.indexOf('"msg":"completed a run its receiver never ended')).toBeLessThan(
      log.indexOf('"msg":"receiver ready"'),
    );
  }, 120_000);

  it('sharing OUTPUT_DIR with a running receiver: that one ends the run between runs, and never while its ' +
    'receiver is alive', async () => {
    outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-restart-'));
    const watcher = await startReadyReceiver({ ...(await freePortsEnv()), ...runEnv, OUTPUT_DIR: outputDir });
    services.push(watcher);
    const env = { ...(await freePortsEnv()), ...runEnv, OUTPUT_DIR: outputDir };
    const killed = await startReadyReceiver(env);
    services.push(killed);
    // The run lasts over 5 s before the kill: the watcher looked at it (every 5 s) while its receiver was alive.
    const { runDir } = await killInSecondSection(env, killed);
    expect(watcher.stderr()).not.toContain('completed a run its receiver never ended');

    await watcher.waitForLog(/"msg":"completed a run its receiver never ended/, 15_000);
    await expectEnded(await endedRun(outputDir, runDir), runDir);
  }, 120_000);
});
