import { mkdtemp, readdir, readFile, rm, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunReport } from '../../services/core/report/report.js';
import {
  freePortsEnv,
  startReadyReceiver,
  startService,
  stopService,
  type ServiceProcess,
} from '../helpers/processes.js';

// A receiver killed in a run (not under npm start: compose restarts it, or a person does) leaves
// the run's folder with its finished sections and the open one's records; the next receiver
// started on that OUTPUT_DIR completes it, once nothing has written to it for a while.

describe('a receiver started again where one was killed mid-run', () => {
  const services: ServiceProcess[] = [];
  let outputDir: string | undefined;
  afterEach(async () => {
    for (const service of services.splice(0)) await stopService(service);
    if (outputDir) await rm(outputDir, { recursive: true, force: true });
  });

  it('completes the abandoned run: the finished section whole, the open one marked incomplete, OUTPUT_DIR linked ' +
    'to it', async () => {
    outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-restart-'));
    const env = {
      ...(await freePortsEnv()),
      TRANSPORTS: 'tcp,websocket',
      OUTPUT_DIR: outputDir,
      IMAGE_COUNT: '100',
      RATE: '20',
      WARMUP: '0',
      LOG_LEVEL: 'info',
    };
    const killed = await startReadyReceiver(env);
    services.push(killed);
    const transmitter = startService('transmitter', env);
    services.push(transmitter);
    // Killed once the second section's records are on disk.
    const runs = path.join(outputDir, 'runs');
    const deadline = Date.now() + 60_000;
    let runDir: string | undefined;
    for (;;) {
      if (Date.now() > deadline)
        throw new Error(
          `the second section never wrote records; receiver:\n${killed.stderr().slice(-2000)}\n` +
            `transmitter:\n${transmitter.stderr().slice(-2000)}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 100));
      const names = await readdir(runs).catch(() => [] as string[]);
      runDir = names[0] === undefined ? undefined : path.join(runs, names[0]);
      const csv =
        runDir === undefined
          ? ''
          : await readFile(path.join(runDir, 'images-02-websocket.csv'), 'utf8').catch(() => '');
      if (csv.split('\n').filter(Boolean).length >= 4) break;
    }
    killed.child.kill('SIGKILL');
    await killed.exited;
    // An hour of silence, as if the receiver had stayed down that long.
    const anHourAgo = new Date(Date.now() - 3_600_000);
    for (const name of await readdir(runDir!)) await utimes(path.join(runDir!, name), anHourAgo, anHourAgo);
    const restarted = await startReadyReceiver(env);
    services.push(restarted);
    expect(restarted.stderr()).toMatch(
      /"msg":"completed a run its receiver never ended: its open section is marked incomplete"/,
    );
    const report = JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as RunReport;
    expect(report.stopReason).toBe(
      'the receiver stopped before the run ended (completed when a receiver started again)',
    );
    expect(report.sections.map((s) => [s.transport, s.ok])).toEqual([
      ['tcp', true],
      ['websocket', false],
    ]);
    expect(report.sections[0]!.okCount).toBe(100);
    expect(report.sections[1]!.okCount).toBeGreaterThanOrEqual(3);
    expect(report.sections[1]!.okCount + report.sections[1]!.lostCount).toBe(100);
    expect(await readFile(path.join(outputDir, 'output.log'), 'utf8')).toContain(
      'Result: INCOMPLETE: the receiver stopped before the run ended',
    );
  }, 90_000);
});
