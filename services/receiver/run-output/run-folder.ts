import { randomBytes } from 'node:crypto';
import { mkdir, open, readlink, rename, rm, symlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { renderHtmlReport, type HtmlReportLibraries } from '../../core/report/html-report.js';
import { buildRunReport, renderResultsJson, type RunInfo, type RunReport } from '../../core/report/report.js';
import {
  IMAGES_CSV_HEADER,
  imagesFileName,
  LATEST_LINK,
  OUTPUT_FILES,
  RUN_IN_PROGRESS,
  RUNS_FOLDER,
  WRITER_FILE,
} from '../../core/report/run-files.js';
import {
  renderOutputLogEnd,
  renderOutputLogHeader,
  renderSectionFooter,
  renderSectionHeading,
} from '../../core/report/text/output-log.js';
import type { SectionPlan, SectionResult } from '../../core/model/section.js';
import type { SectionSink } from '../../core/model/recorder.js';
import type { WarmupOutcome } from '../../core/model/warmup.js';
import { runFolderStamp } from '../../core/model/run-writer.js';
import { makeDirectories } from '../../shared/directories.js';
import { CREATE_NEW_FILE, writeFailure, writeFileAtomic } from '../../shared/files.js';
import { ownWriter } from '../../shared/process-identity.js';
import { foreignFolderProblem } from '../../shared/run-folders.js';
import { AppendFile } from './append-file.js';

// Where a run's results go, written as they are made: each run in a folder of its own under
// OUTPUT_DIR/runs/, output.log and each section's per-image CSV appended as images arrive,
// results.json rewritten (whole) when each section starts and ends, report.html at the end. The
// files at the top of OUTPUT_DIR are links through `latest`, switched in one rename when a run
// ends: a reader sees the previous run's set or the new one, never a mix. A receiver killed in a
// section leaves the finished sections whole and the open one's records so far, which
// completeRun (./run-completion.ts) turns into a run marked incomplete. While a run is open its
// folder names its writer (WRITER_FILE, touched every few seconds), so that another receiver can
// tell a run whose receiver died from one being written (./abandoned-runs.ts).
//
// Nothing is written through a link the receiver did not make. OUTPUT_DIR itself may be a link
// (the user chose it), but below it every folder is made here or must be a real folder of this
// process's user that others cannot write (a `runs` planted in a shared OUTPUT_DIR is refused);
// the run's folder is made exclusively (a new one every run, so nothing was planted in it), and
// its files are created with O_EXCL|O_NOFOLLOW.

/** How often a run's writer touches its file. */
const HEARTBEAT_INTERVAL_MS = 2000;

/** What results.json says while a run is open: the report so far and the section in progress. */
export interface OpenSnapshot {
  openSection?: { plan: SectionPlan; imagesFile: string; warmedUp: WarmupOutcome | null };
}

/** A section's files while it is open: its CSV, and the sink the recorder writes both files through. */
export interface OpenSectionFiles {
  imagesFile: string;
  sink: SectionSink;
}

/** The run folders this process writes (every receiver in it): a sweep never completes one of them. */
const writtenHere = new Set<string>();

/** True when this process writes run folder `dir` (a run open here): a sweep leaves it alone. */
export function writtenByThisProcess(dir: string): boolean {
  return writtenHere.has(dir);
}

/** A run folder's writer file, held open while the run is: touched every {@link HEARTBEAT_INTERVAL_MS}. */
class WriterMark {
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly filePath: string,
    private readonly handle: FileHandle,
  ) {
    // A failed touch (a full disk takes none; a removed folder) only ages the heartbeat.
    this.timer = setInterval(() => {
      const now = new Date();
      this.handle.utimes(now, now).catch(() => undefined);
    }, HEARTBEAT_INTERVAL_MS).unref();
  }

  /** Creates `filePath` (new, never through a link) naming this process. */
  static async create(filePath: string): Promise<WriterMark> {
    let handle: FileHandle | undefined;
    try {
      handle = await open(filePath, CREATE_NEW_FILE, 0o644);
      await handle.writeFile(`${JSON.stringify(await ownWriter())}\n`);
      return new WriterMark(filePath, handle);
    } catch (err) {
      await handle?.close().catch(() => undefined);
      throw writeFailure(filePath, err);
    }
  }

  /** Stops the heartbeat; `remove`: the run ended, so its folder names no writer any more. */
  async release(remove: boolean): Promise<void> {
    clearInterval(this.timer);
    await this.handle.close().catch(() => undefined);
    if (remove) await rm(this.filePath, { force: true });
  }
}

/** One run's folder: see the module comment. */
export class RunFolder {
  private readonly sections: SectionResult[] = [];
  private open: { plan: SectionPlan; csv: AppendFile; imagesFile: string; warmedUp: WarmupOutcome | null } | undefined;
  private sectionNumber = 0;
  /**
   * RECEIVERS > 1, the first receiver: a section ended whose output.log figures wait for every receiver's (its
   * fan-out), which the transmitter sends next.
   */
  private awaitingFanOut: SectionResult | undefined;

  private constructor(
    /** OUTPUT_DIR (or a receiver's own folder in it): where `latest` and the top-level links are. */
    readonly baseDir: string,
    /** This run's folder. */
    readonly dir: string,
    private readonly info: RunInfo,
    private readonly log: AppendFile,
    private readonly writer: WriterMark,
  ) {}

  /**
   * Creates the run's folder (`runs/<start time>-<id>` in `baseDir`) and its output.log with the
   * header. `outputDir` is OUTPUT_DIR, which `baseDir` is or is in (a second receiver's
   * `receiver-<k>`): every folder below it must be this process's own (see the module comment).
   */
  static async create(baseDir: string, info: RunInfo, outputDir = baseDir): Promise<RunFolder> {
    try {
      await makeDirectories(outputDir);
    } catch (err) {
      throw writeFailure(outputDir, err);
    }
    const below = path.relative(outputDir, baseDir);
    if (below.startsWith('..') || path.isAbsolute(below))
      throw writeFailure(baseDir, new Error(`not inside OUTPUT_DIR ${outputDir}`));
    let runsDir = outputDir;
    for (const name of [...(below === '' ? [] : below.split(path.sep)), RUNS_FOLDER]) {
      runsDir = path.join(runsDir, name);
      await ownFolder(runsDir);
    }
    const dir = path.join(runsDir, `${runFolderStamp(info.startedAt)}-${randomBytes(3).toString('hex')}`);
    try {
      await mkdir(dir);
    } catch (err) {
      throw writeFailure(dir, err);
    }
    // Before anything in it says the run is open: a sweep of this process never takes it for abandoned.
    writtenHere.add(dir);
    const writer = await WriterMark.create(path.join(dir, WRITER_FILE));
    const log = await AppendFile.create(path.join(dir, OUTPUT_FILES.log)).catch(async (err: unknown) => {
      await writer.release(false);
      throw err;
    });
    log.write(`${renderOutputLogHeader(info)}\n\n`);
    const folder = new RunFolder(baseDir, dir, info, log, writer);
    await folder.writeSnapshot();
    return folder;
  }

  /** The folder's name under runs/. */
  get name(): string {
    return path.basename(this.dir);
  }

  /** Opens a section's files: its heading in output.log, its CSV; results.json names it as in progress. */
  async openSection(plan: SectionPlan): Promise<OpenSectionFiles> {
    this.writeAwaitedFooter();
    this.sectionNumber++;
    const imagesFile = imagesFileName(this.sectionNumber, plan.transport, plan.repeat, this.info.repeat);
    const csv = await AppendFile.create(path.join(this.dir, imagesFile));
    csv.write(`${IMAGES_CSV_HEADER}\n`);
    this.log.write(`${renderSectionHeading(plan, this.info.repeat)}\n`);
    this.open = { plan, csv, imagesFile, warmedUp: null };
    await this.writeSnapshot();
    const log = this.log;
    const twoClocks = plan.clock?.applied === true;
    return {
      imagesFile,
      sink: {
        arrived(image, oneWayNs, intact) {
          log.lines.imageLine(image, oneWayNs, intact ? 'ok' : 'corrupt', twoClocks);
        },
        recorded(image, status, oneWayNs, rttNs, dueLagNs) {
          csv.lines.csvLine(image, status, oneWayNs, rttNs, dueLagNs);
          if (status === 'lost' || status === 'superseded') log.lines.imageLine(image, null, status, twoClocks);
        },
      },
    };
  }

  /** The open section's warm-up is over: results.json says so (a completed run uses it). */
  async measuring(warmedUp: WarmupOutcome): Promise<void> {
    if (this.open === undefined) return;
    this.open.warmedUp = warmedUp;
    await this.writeSnapshot();
  }

  /**
   * A section is over (`result` from its recorder, whose sink wrote through this folder; or a
   * section that never opened): its figures in output.log, its CSV closed, results.json rewritten.
   * Every file is on disk when this returns; a failed write throws, naming the path and reason.
   */
  async endSection(result: SectionResult): Promise<SectionResult> {
    this.writeAwaitedFooter();
    const open = this.open;
    this.open = undefined;
    const recorded: SectionResult =
      open !== undefined && open.plan.sectionId === result.sectionId
        ? { ...result, imagesFile: open.imagesFile }
        : result;
    if (open === undefined || open.plan.sectionId !== result.sectionId)
      this.log.write(`${renderSectionHeading(result, this.info.repeat)}\n`);
    // The first of several receivers: its figures go with every receiver's (and fail when another's did), once the
    // fan-out comes.
    if (recorded.receivers > 1 && recorded.receiverIndex === 0 && recorded.fanOut === null)
      this.awaitingFanOut = recorded;
    else this.log.write(`${renderSectionFooter(recorded)}\n\n`);
    this.sections.push(recorded);
    await open?.csv.close();
    await this.log.flush();
    await this.writeSnapshot();
    return recorded;
  }

  /** Replaces a recorded section's result (RECEIVERS > 1: every receiver's figures added); results.json follows. */
  async replaceSection(result: SectionResult): Promise<void> {
    const index = this.sections.findIndex((s) => s.sectionId === result.sectionId);
    if (index < 0) return;
    this.sections[index] = { ...result, imagesFile: this.sections[index]!.imagesFile };
    if (this.awaitingFanOut?.sectionId === result.sectionId) {
      this.awaitingFanOut = this.sections[index];
      this.writeAwaitedFooter();
    }
    await this.writeSnapshot();
  }

  // The footer of a section that waited for its fan-out, as it stands now (without one when none came).
  private writeAwaitedFooter(): void {
    if (this.awaitingFanOut === undefined) return;
    this.log.write(`${renderSectionFooter(this.awaitingFanOut)}\n\n`);
    this.awaitingFanOut = undefined;
  }

  /** The report so far (the sections ended). */
  report(stopReason: string | null): RunReport {
    return buildRunReport(this.info, this.sections, stopReason);
  }

  /**
   * Ends the run: the summary in output.log, results.json and report.html whole, then the
   * top-level links switched to this run. A failed write throws, naming the path and reason, and
   * leaves the links on the previous run.
   */
  async finish(report: RunReport, libraries: HtmlReportLibraries): Promise<void> {
    this.writeAwaitedFooter();
    await this.open?.csv.close().catch(() => undefined);
    this.open = undefined;
    this.log.write(renderOutputLogEnd(report));
    await this.log.close();
    await writeFileAtomic(path.join(this.dir, OUTPUT_FILES.results), renderResultsJson(report));
    await writeFileAtomic(path.join(this.dir, OUTPUT_FILES.report), renderHtmlReport([report], libraries));
    await pointLatestAt(this.baseDir, this.dir);
    await this.writer.release(true);
    writtenHere.delete(this.dir);
  }

  /**
   * Closes the files without ending the run (the receiver is going away without a word, or its end could not be
   * written). This process never completes it; a receiver after it does.
   */
  async abandon(): Promise<void> {
    this.writeAwaitedFooter();
    await this.open?.csv.close().catch(() => undefined);
    await this.log.close().catch(() => undefined);
    await this.writer.release(false);
  }

  private async writeSnapshot(): Promise<void> {
    const snapshot: RunReport & OpenSnapshot = { ...buildRunReport(this.info, this.sections, RUN_IN_PROGRESS) };
    if (this.open !== undefined)
      snapshot.openSection = { plan: this.open.plan, imagesFile: this.open.imagesFile, warmedUp: this.open.warmedUp };
    await writeFileAtomic(path.join(this.dir, OUTPUT_FILES.results), renderResultsJson(snapshot));
  }
}

/**
 * Makes folder `dir` (its parent exists), or accepts the one there when it is a real folder (not a
 * link) of this process's user that others cannot write: what was planted at the name is refused
 * with ITB_ERR_WRITE naming it and why.
 */
async function ownFolder(dir: string): Promise<void> {
  try {
    await mkdir(dir);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw writeFailure(dir, err);
  }
  const problem = await foreignFolderProblem(dir);
  if (problem !== undefined)
    throw writeFailure(
      dir,
      new Error(`${problem}, which this receiver did not make: remove it, or use an OUTPUT_DIR only you can write`),
    );
}

/**
 * Switches OUTPUT_DIR's `latest` link to `runDir` in one rename, and makes output.log,
 * results.json and report.html at the top links through it (once; a file left there by an older
 * version is replaced by its link).
 */
export async function pointLatestAt(baseDir: string, runDir: string): Promise<void> {
  const temporary = path.join(baseDir, `.${LATEST_LINK}.${randomBytes(6).toString('hex')}`);
  try {
    await symlink(path.relative(baseDir, runDir), temporary);
    await rename(temporary, path.join(baseDir, LATEST_LINK));
  } catch (err) {
    await rm(temporary, { force: true });
    throw writeFailure(path.join(baseDir, LATEST_LINK), err);
  }
  for (const file of Object.values(OUTPUT_FILES)) {
    const top = path.join(baseDir, file);
    const target = path.join(LATEST_LINK, file);
    const current = await readlink(top).catch(() => undefined);
    if (current === target) continue;
    const linkTemporary = `${top}.${randomBytes(6).toString('hex')}.link`;
    try {
      await symlink(target, linkTemporary);
      await rename(linkTemporary, top);
    } catch (err) {
      await rm(linkTemporary, { force: true });
      throw writeFailure(top, err);
    }
  }
}
