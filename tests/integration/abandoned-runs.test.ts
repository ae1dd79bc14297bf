import { type ChildProcess, spawn } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, readlink, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunWriter } from '../../services/core/model/run-writer.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import type { RunReport } from '../../services/core/report/report.js';
import { ownWriter } from '../../services/shared/process-identity.js';
import { reportLibraries } from '../../services/shared/report-assets.js';
import { WRITER_FILE } from '../../services/core/report/run-files.js';
import { type AbandonedRun, completeAbandonedRuns } from '../../services/receiver/run-output/abandoned-runs.js';
import { RunFolder } from '../../services/receiver/run-output/run-folder.js';
import { fixturePlan, fixtureReport, NO_WARMUP } from '../helpers/fixtures.js';

// The sweep for runs whose receiver died: a run is ended when its writer's process is gone (at once, in this process's
// space) or its heartbeat is stale (anywhere), never while its writer is alive, never one this process writes, and by
// one receiver of several sweeping at once.

let outputDir: string;
const children: ChildProcess[] = [];
beforeEach(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-abandoned-'));
});
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await rm(outputDir, { recursive: true, force: true });
});

const sweep = (options: { staleAfterMs?: number; unnamedQuietMs?: number } = {}): Promise<AbandonedRun[]> =>
  completeAbandonedRuns(outputDir, {
    heartbeat: { restartedMs: options.staleAfterMs ?? 10_000, elsewhereMs: options.staleAfterMs ?? 30_000 },
    unnamedQuietMs: options.unnamedQuietMs,
    libraries: reportLibraries,
  });

const anHourAgo = (): Date => new Date(Date.now() - 3_600_000);

/**
 * A run folder as a receiver killed in its first section leaves it (two of three images in), written by this process;
 * and a copy of it named `copy` (not this process's: its writer is what `writer` says).
 */
async function abandonedRun(writer?: RunWriter): Promise<{ own: RunFolder; copy: string }> {
  const own = await RunFolder.create(outputDir, fixtureReport([]).run);
  const plan = fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, imageCount: 3 });
  const files = await own.openSection(plan);
  await own.measuring(NO_WARMUP);
  const recorder = new SectionRecorder(plan, files.sink);
  recorder.beginRecording(NO_WARMUP, 0n);
  for (const seq of [0, 1]) {
    recorder.record({ sectionId: plan.sectionId, seq, sizeBytes: plan.imageSizeBytes, checksum: 0n, sentAtNs: 0n }, 1n);
    recorder.verified(seq, true);
  }
  // Their round trips came: each is on its CSV line, as a receiver writes it while the section goes.
  recorder.roundTrips(Float64Array.of(1, 2_000_000, Number.NaN, 2, 2_000_000, Number.NaN));
  await own.abandon();
  const copy = path.join(outputDir, 'runs', `${path.basename(own.dir).slice(0, 16)}-c0ffee`);
  await cp(own.dir, copy, { recursive: true });
  if (writer !== undefined) await writeFile(path.join(copy, WRITER_FILE), JSON.stringify(writer));
  return { own, copy };
}

/** A child process that stays until killed. */
function sleeper(): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  children.push(child);
  return child;
}

/** Start ticks of `pid` from /proc (field 22 of its stat). */
async function startTicksOf(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

async function resultsOf(dir: string): Promise<RunReport> {
  return JSON.parse(await readFile(path.join(dir, 'results.json'), 'utf8')) as RunReport;
}

describe('completeAbandonedRuns', () => {
  it(
    "ends a run whose writer's process is gone from this space: the open section rebuilt, latest on it, no writer " +
      'named; never the folder this process writes, however quiet',
    async () => {
      const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
      await new Promise((resolve) => dead.on('exit', resolve));
      const self = await ownWriter();
      const { own, copy } = await abandonedRun({ ...self, pid: dead.pid!, startTicks: '1' });
      for (const dir of [own.dir, copy]) await utimes(path.join(dir, WRITER_FILE), anHourAgo(), anHourAgo());

      const found = await sweep({ staleAfterMs: 0, unnamedQuietMs: 0 });
      expect(found.map((run) => [run.dir, run.error])).toEqual([[copy, undefined]]);
      const report = await resultsOf(copy);
      expect(report.stopReason).toBe(
        `the receiver stopped before the run ended (its receiver, process ${dead.pid} on ${os.hostname()}, is ` +
          'gone); completed by the next receiver on its OUTPUT_DIR',
      );
      expect(report.sections.map((s) => [s.transport, s.okCount, s.lostCount, s.ok])).toEqual([['tcp', 2, 1, false]]);
      expect(await readlink(path.join(outputDir, 'latest'))).toBe(path.relative(outputDir, copy));
      expect((await readdir(copy)).sort()).toEqual(['images-01-tcp.csv', 'output.log', 'report.html', 'results.json']);
      // This process's own run stays as it was: open, its writer named.
      expect((await resultsOf(own.dir)).stopReason).toBe('in progress: the run has not ended');
      expect(await readdir(own.dir)).toContain(WRITER_FILE);
    },
  );

  it(
    'leaves a run whose writer is alive in this space, however stale its heartbeat, and ends it once that ' +
      'process is gone',
    async () => {
      const writer = sleeper();
      const self = await ownWriter();
      const { copy } = await abandonedRun({ ...self, pid: writer.pid!, startTicks: await startTicksOf(writer.pid!) });
      await utimes(path.join(copy, WRITER_FILE), anHourAgo(), anHourAgo());
      expect(await sweep({ staleAfterMs: 0 })).toEqual([]);
      expect((await resultsOf(copy)).stopReason).toBe('in progress: the run has not ended');

      writer.kill('SIGKILL');
      await new Promise((resolve) => writer.on('exit', resolve));
      expect((await sweep()).map((run) => run.dir)).toEqual([copy]);
      expect((await resultsOf(copy)).stopReason).toMatch(/is gone\)/);
    },
  );

  it('judges a writer of another host or container by its heartbeat', async () => {
    const elsewhere: RunWriter = {
      pid: 1,
      startTicks: '1',
      bootId: 'another-boot',
      pidNamespace: 'pid:[1]',
      hostname: 'there',
    };
    const { copy } = await abandonedRun(elsewhere);
    expect(await sweep()).toEqual([]);
    await utimes(path.join(copy, WRITER_FILE), anHourAgo(), anHourAgo());
    expect((await sweep()).map((run) => run.dir)).toEqual([copy]);
    expect((await resultsOf(copy)).stopReason).toMatch(
      /^the receiver stopped before the run ended \(its receiver, process 1 on there, has not touched it for 3600 s\)/,
    );
  });

  it("ends a run that names no writer (an older receiver's) only when asked to, and once it is quiet", async () => {
    const { copy } = await abandonedRun();
    await rm(path.join(copy, WRITER_FILE));
    expect(await sweep({ unnamedQuietMs: 60_000 })).toEqual([]);
    for (const name of await readdir(copy)) await utimes(path.join(copy, name), anHourAgo(), anHourAgo());
    expect(await sweep()).toEqual([]);
    expect((await sweep({ unnamedQuietMs: 60_000 })).map((run) => run.dir)).toEqual([copy]);
    expect((await resultsOf(copy)).stopReason).toMatch(/\(nothing was written to its folder for 3600 s\)/);
  });

  it('of receivers sweeping at once, one ends the run', async () => {
    const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await new Promise((resolve) => dead.on('exit', resolve));
    const { copy } = await abandonedRun({ ...(await ownWriter()), pid: dead.pid!, startTicks: '1' });
    const sweeps = await Promise.all([sweep(), sweep(), sweep()]);
    expect(sweeps.flat().map((run) => [run.dir, run.report !== undefined])).toEqual([[copy, true]]);
    const log = await readFile(path.join(copy, 'output.log'), 'utf8');
    expect(log.match(/^Result: /gm)).toHaveLength(1);
  });
});
