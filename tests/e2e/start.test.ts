import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePortsEnv } from '../../scripts/lib/ports.js';
import type { RunReport } from '../../services/core/report/report.js';
import { stopChild } from '../../services/shared/child-process.js';
import { transports } from '../../services/transports/index.js';
import { escapeRegExp } from '../helpers/harness.js';
import {
  runStart as runStartIn,
  spawnStart as spawnStartIn,
  START_ENTRY as entry,
  type StartResult,
} from '../helpers/start-entry.js';

// `npm start`'s entry as a user runs it: real processes, a private redis-server from PATH.
// `npm test` builds dist/ first (its pretest step). The shaped link (NETWORK_*), which needs root and
// network namespaces, is in tests/privileged/shaped-link.test.ts.

let outputDir: string;

beforeAll(async () => {
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run "npm run build" first (npm test does)`);
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-e2e-'));
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

function spawnStart(env: Record<string, string>): ReturnType<typeof spawnStartIn> {
  return spawnStartIn(outputDir, env);
}

function runStart(env: Record<string, string>, timeoutMs?: number): Promise<StartResult> {
  return runStartIn(outputDir, env, timeoutMs);
}

/**
 * The run folders (from `outputDir`, the working directory too) npm start's last line names, the first receiver's
 * first, after checking the line says the receiver stopped and how to look at the files again.
 */
function thisRunsFolders(stdout: string): string[] {
  const lastLine = stdout.trimEnd().split('\n').at(-1) ?? '';
  expect(lastLine).toMatch(
    new RegExp(
      `^Files: output\\.log, results\\.json and report\\.html in ${escapeRegExp(outputDir)} \\(this run's ` +
        `folder: [^)]+\\)\\. npm start has stopped its receiver, so no control port serves them now: open ` +
        `${escapeRegExp(path.join(outputDir, 'report.html'))} in a browser \\(it needs no server\\), or start a ` +
        'receiver on that OUTPUT_DIR to serve every kept run at /runs ' +
        '\\(docs/running\\.md#starting-the-services-by-hand\\)\\.$',
    ),
  );
  const named = /this run's folder: ([^)]+)\)/.exec(lastLine)![1]!;
  const folders = named.split('; ').map((part) => part.replace(/^receiver \d+'s: /, ''));
  // Each a folder this run made under runs/: one each receiver's OUTPUT_DIR holds.
  for (const folder of folders) expect(folder).toMatch(/^(receiver-\d+\/)?runs\/[^/]+$/);
  return folders;
}

describe('npm start entry', () => {
  it('runs every transport with TRANSPORTS=all and IMAGE_COUNT=3 (private Redis and NATS servers), prints the ' +
    'summary and writes output.log', async () => {
    const result = await runStart({ IMAGE_COUNT: '3', TRANSPORTS: 'all', ...(await freePortsEnv()) });
    expect(result.stderr).not.toMatch(/"level":(50|60)/);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        /^Transport\s+OK\s+Lost\s+Corrupt\s+p50 ms\s+p90 ms\s+p99 ms\s+p99\.9 ms\s+max ms\s+mean ± sd /.source +
          /ms\s+RTT p50\s+RTT p99\s+Total ms\s+MB\/s\s+images\/s\s+Result$/.source,
        'm',
      ),
    );
    expect(result.stdout).toMatch(/^Transport\s+TX CPU ms\/img\s+RX CPU ms\/img/m);
    for (const t of transports) {
      const title = escapeRegExp(`${t.label}${t.traits.baseline ? ' (baseline)' : ''}`);
      expect(result.stdout).toMatch(new RegExp(`^${title}\\s+3\\s+0\\s+0\\s.*\\sok$`, 'm'));
    }
    const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
    expect(log.match(/^=== .* performance test: 3 images transfer \(533\.0 KiB each, window 1\) ===$/gm)).toHaveLength(
      transports.length,
    );
    expect(log).toContain('Result: every transport delivered every image intact.');
    expect(existsSync(path.join(outputDir, 'results.json'))).toBe(true);
  }, 120_000);

  it('exits 2 naming every bad variable and leaves the previous output.log as it was', async () => {
    const previous = 'output of an earlier run\n';
    await writeFile(path.join(outputDir, 'output.log'), previous);
    const result = await runStart({ IMAGE_SIZE: 'abc', WINDOW: '0', TRANSPORTS: 'websocket,smoke-signals' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Invalid configuration (3 bad variables)');
    expect(result.stderr).toContain('IMAGE_SIZE="abc"');
    expect(result.stderr).toContain('WINDOW="0"');
    expect(result.stderr).toContain('TRANSPORTS="websocket,smoke-signals"');
    expect(await readFile(path.join(outputDir, 'output.log'), 'utf8')).toBe(previous);
  }, 90_000);

  it('says plainly when there is no Redis, runs the other transports, and exits 1', async () => {
    // An empty PATH: no redis-server to start (the services are started by node's own path).
    const emptyDir = await mkdtemp(path.join(os.tmpdir(), 'itb-no-path-'));
    const result = await runStart({
      IMAGE_COUNT: '2',
      TRANSPORTS: 'redis,tcp',
      PATH: emptyDir,
      ...(await freePortsEnv()),
    });
    await rm(emptyDir, { recursive: true, force: true });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('REDIS_URL is not set and no redis-server could be started');
    expect(result.stdout).toMatch(/^Redis\s+0\s+2\s+0\s.*FAILED: .*REDIS_URL/m);
    expect(result.stdout).toMatch(/^TCP \(baseline\)\s+2\s+0\s+0\s.*\sok$/m);
    // By npm start's last line its receiver has stopped: that line says where the files are, never that a control
    // port serves them.
    expect(result.stdout).not.toContain('also served');
    const [folder] = thisRunsFolders(result.stdout);
    expect(existsSync(path.join(outputDir, folder!, 'report.html'))).toBe(true);
  }, 60_000);
});

describe('npm start when the receiver is killed', () => {
  it('says the receiver was killed by SIGKILL, stops the transmitter, exits non-zero and keeps what the run wrote: ' +
    'the finished section whole, the open one marked incomplete', async () => {
    // RATE paces the run over seconds, so the kill lands inside the second section whatever the machine's load.
    // A folder of its own: the run folders of this file's other tests are not this run's.
    const ownDir = await mkdtemp(path.join(os.tmpdir(), 'itb-e2e-killed-'));
    const started = spawnStart({
      TRANSPORTS: 'tcp,websocket',
      IMAGE_COUNT: '100',
      RATE: '20',
      WARMUP: '0',
      LOG_LEVEL: 'info',
      OUTPUT_DIR: ownDir,
      ...(await freePortsEnv()),
    });
    const exited = new Promise<number | null>((resolve) => started.child.on('exit', (code) => resolve(code)));
    try {
      // Killed once the second section's per-image file holds some records (on disk, as they come).
      const secondCsv = async (): Promise<string | undefined> => {
        const runs = await readdir(path.join(ownDir, 'runs')).catch(() => [] as string[]);
        return runs.length === 1 ? path.join(ownDir, 'runs', runs[0]!, 'images-02-websocket.csv') : undefined;
      };
      let csvLines = 0;
      const deadline = Date.now() + 60_000;
      while (csvLines < 6) {
        if (Date.now() > deadline)
          throw new Error(`the second section's CSV never filled; stderr:\n${started.stderr().slice(-3000)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        const csv = await secondCsv();
        csvLines =
          csv === undefined ? 0 : (await readFile(csv, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
      }
      // The receiver is npm start's child running the receiver's entry.
      const pids = execFileSync('pgrep', ['-P', String(started.child.pid), '-f', 'dist/services/receiver/main\\.js'], {
        encoding: 'utf8',
      })
        .trim()
        .split('\n');
      expect(pids).toHaveLength(1);
      process.kill(Number(pids[0]), 'SIGKILL');
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        exited,
        new Promise<never>(
          (_, reject) =>
            (timer = setTimeout(
              () =>
                reject(
                  new Error(
                    `npm start still running 30 s after its receiver was killed; ` +
                      `stderr:\n${started.stderr().slice(-3000)}`,
                  ),
                ),
              30_000,
            )),
        ),
      ]);
      clearTimeout(timer);
      expect(started.stderr()).toContain('npm start: the receiver was killed by SIGKILL; see its log above.');
      expect(code).not.toBeNull();
      expect(code).not.toBe(0);
      // What the finished section wrote is kept whole; the open one from its records, marked incomplete.
      const report = JSON.parse(await readFile(path.join(ownDir, 'results.json'), 'utf8')) as RunReport;
      expect(report.stopReason).toBe('the receiver was killed by SIGKILL');
      const [first, second] = report.sections;
      expect([first?.transport, first?.ok, first?.okCount]).toEqual(['tcp', true, 100]);
      expect(second?.transport).toBe('websocket');
      expect(second?.ok).toBe(false);
      expect(second?.failure).toMatch(/^the receiver was killed by SIGKILL; got \d+ images/);
      expect(second!.okCount).toBeGreaterThanOrEqual(csvLines - 1);
      expect(second!.okCount + second!.lostCount).toBe(100);
      const log = await readFile(path.join(ownDir, 'output.log'), 'utf8');
      expect(log).toContain('Result: INCOMPLETE: the receiver was killed by SIGKILL');
      // The first section whole and some of the second: output.log and the CSV are flushed apart, so
      // on a loaded machine the kill can fall between the two (seen: 118 lines for 19 CSV records).
      expect(log.match(/^Image \d+ transmission time: /gm)?.length).toBeGreaterThan(100);
    } finally {
      // On a failure above: npm start stops its own services on SIGTERM.
      await stopChild(started.child, 10_000);
      await rm(ownDir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('npm start with RECEIVERS=2', () => {
  it(
    "starts two receivers, sends every image to each; the first writes every receiver's figures, the second its " +
      'own under receiver-2/',
    async () => {
      const result = await runStart({
        RECEIVERS: '2',
        TRANSPORTS: 'tcp,redis-pubsub',
        IMAGE_COUNT: '5',
        WARMUP: '2',
        ...(await freePortsEnv()),
      });
      expect(result.code, result.stderr).toBe(0);
      const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
      expect(log).toContain('Peers: one transmitter, one connection per transport; 2 receivers, every image to each');
      expect(log).toMatch(/^Receivers: 2, a copy each: aggregate of 10 intact/m);
      expect(log).toMatch(/^Receivers: 2, one send reaching all: aggregate of 10 intact/m);
      const second = await readFile(path.join(outputDir, 'receiver-2', 'output.log'), 'utf8');
      expect(second).toContain('Result: every transport delivered every image intact.');
      expect(second).not.toMatch(/^Receivers: /m);
      const folders = thisRunsFolders(result.stdout);
      expect(folders).toHaveLength(2);
      expect(folders[1]).toMatch(/^receiver-2\/runs\//);
      for (const folder of folders) expect(existsSync(path.join(outputDir, folder, 'report.html'))).toBe(true);
    },
  );
});
