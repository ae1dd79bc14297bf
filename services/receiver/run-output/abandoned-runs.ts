import { lstat, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { HtmlReportLibraries } from '../../core/report/html-report.js';
import type { RunReport } from '../../core/report/report.js';
import { CLAIM_FILE, OUTPUT_FILES, WRITER_FILE } from '../../core/report/run-files.js';
import { errorMessage } from '../../core/errors.js';
import {
  abandonedRunReason,
  type HeartbeatLimits,
  parseRunWriter,
  type RunWriter,
  sameProcessSpace,
  writerGone,
} from '../../core/model/run-writer.js';
import { liveProcessStartTicks, ownWriter } from '../../shared/process-identity.js';
import { foreignFolderProblem, runFolders } from '../../shared/run-folders.js';
import { completeRun, unfinishedRun } from './run-completion.js';
import { writtenByThisProcess } from './run-folder.js';

// A receiver starting on an OUTPUT_DIR completes the runs other receivers left open when they died (SIGKILL, out of
// memory), so a run's files never stay half-written: it tells a dead writer from a live one by the writer file its
// folder names (core/model/run-writer.ts judges), and claims a run before completing it, so that of several receivers
// sweeping at once only one does.

/** How {@link completeAbandonedRuns} judges run folders. */
export interface AbandonedRunSweep {
  /** How old a writer's heartbeat may grow (one in this process's space is looked at instead). */
  heartbeat: HeartbeatLimits;
  /**
   * A folder that names no writer (written by a receiver before writers were named) is abandoned once nothing has been
   * written to it this long; undefined: such folders are not looked at (each costs a stat of every file).
   */
  unnamedQuietMs: number | undefined;
  /** The report's libraries, read only when a run is completed. */
  libraries: () => HtmlReportLibraries;
}

/** One abandoned run a sweep found: the report it completed, or why it could not. */
export interface AbandonedRun {
  /** Its folder, and where `latest` for it is (OUTPUT_DIR, or a second receiver's `receiver-<k>` in it). */
  dir: string;
  baseDir: string;
  /** Its stopReason: why its receiver is taken for gone. */
  reason: string;
  report?: RunReport;
  error?: string;
}

/** A second receiver's folder in OUTPUT_DIR (RECEIVERS > 1), which has runs of its own. */
const RECEIVER_FOLDER = /^receiver-\d+$/;

/**
 * Completes (see {@link completeRun}) every run under OUTPUT_DIR (its `runs/` and each `receiver-<k>/runs/`) whose
 * writer is gone: never one written by this process, nor one whose writer may be alive. Of several receivers sweeping
 * at once, one completes a run: it takes the writer file first (a rename only one can make).
 */
export async function completeAbandonedRuns(outputDir: string, sweep: AbandonedRunSweep): Promise<AbandonedRun[]> {
  const self = await ownWriter();
  const entries = await readdir(outputDir, { withFileTypes: true }).catch(() => []);
  const bases = [outputDir];
  for (const entry of entries)
    if (entry.isDirectory() && RECEIVER_FOLDER.test(entry.name)) {
      const base = path.join(outputDir, entry.name);
      if ((await foreignFolderProblem(base)) === undefined) bases.push(base);
    }
  const found: AbandonedRun[] = [];
  for (const baseDir of bases)
    for (const dir of await runFolders(baseDir)) {
      if (writtenByThisProcess(dir)) continue;
      const reason = await abandonedBecause(dir, self, sweep);
      if (reason === undefined) continue;
      try {
        const report = await completeRun(baseDir, dir, reason, sweep.libraries());
        // undefined: it had ended after all (its writer file outlived its end); it names no writer now.
        if (report === undefined) await rm(path.join(dir, CLAIM_FILE), { force: true });
        found.push(report === undefined ? { dir, baseDir, reason } : { dir, baseDir, reason, report });
      } catch (err) {
        // Left claimed: a later sweep would append to what this one wrote. A receiver started later tries again.
        found.push({ dir, baseDir, reason, error: errorMessage(err) });
      }
    }
  return found;
}

// The stopReason of run folder `dir` when its writer is gone and this process has claimed it; undefined otherwise.
async function abandonedBecause(dir: string, self: RunWriter, sweep: AbandonedRunSweep): Promise<string | undefined> {
  const writerPath = path.join(dir, WRITER_FILE);
  const mark = await lstat(writerPath).catch(() => undefined);
  if (mark === undefined) {
    if (sweep.unnamedQuietMs === undefined) return undefined;
    // An ended run has its report; only a run that never ended is worth reading.
    if ((await lstat(path.join(dir, OUTPUT_FILES.report)).catch(() => undefined)) !== undefined) return undefined;
    const quietMs = Date.now() - (await lastWriteMs(dir));
    if (quietMs < sweep.unnamedQuietMs || !(await unfinishedRun(dir))) return undefined;
    return abandonedRunReason(`nothing was written to its folder for ${Math.round(quietMs / 1000)} s`);
  }
  if (!mark.isFile()) return undefined;
  const writer = parseRunWriter(await readFile(writerPath, 'utf8').catch(() => ''));
  const why = writerGone({
    writer,
    self,
    processNowStartTicks: sameProcessSpace(writer, self) ? await liveProcessStartTicks(writer.pid) : undefined,
    quietMs: Date.now() - mark.mtimeMs,
    limits: sweep.heartbeat,
  });
  if (why === undefined) return undefined;
  // The claim: of receivers sweeping at once, the one whose rename finds the file completes the run.
  try {
    await rename(writerPath, path.join(dir, CLAIM_FILE));
  } catch {
    return undefined;
  }
  return abandonedRunReason(why);
}

/** When anything in run folder `dir` was last written (ms since the epoch): its files are appended as a run goes. */
async function lastWriteMs(dir: string): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const times = await Promise.all(
    names.map((name) =>
      stat(path.join(dir, name)).then(
        (s) => s.mtimeMs,
        () => 0,
      ),
    ),
  );
  return Math.max(0, ...times);
}
