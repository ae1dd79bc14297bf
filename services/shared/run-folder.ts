import { randomBytes } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import {
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  type FileHandle,
} from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { encodeFrameHeader, decodeFrameHeader } from '../core/wire/frame.js';
import { renderHtmlReport, type HtmlReportLibraries } from '../core/report/html-report.js';
import { buildRunReport, renderResultsJson, type RunInfo, type RunReport } from '../core/report/report.js';
import {
  renderImageLine,
  renderOutputLogEnd,
  renderOutputLogHeader,
  renderSectionFooter,
  renderSectionHeading,
} from '../core/report/text/output-log.js';
import type { SectionPlan, SectionResult } from '../core/model/section.js';
import { SectionRecorder, type SectionSink } from '../core/model/recorder.js';
import type { WarmupOutcome } from '../core/model/warmup.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import {
  abandonedRunReason,
  type HeartbeatLimits,
  type RunWriter,
  runFolderStamp,
  sameProcessSpace,
  writerGone,
} from '../core/model/run-writer.js';
import { AsciiLines } from './ascii-lines.js';
import { makeDirectories } from './directories.js';
import { CREATE_NEW_FILE, describeWriteFailure, writeFileAtomic } from './files.js';
import { liveProcessStartTicks, ownWriter } from './process-identity.js';

// Where a run's results go, written as they are made: each run in a folder of its own under
// OUTPUT_DIR/runs/, output.log and each section's per-image CSV appended as images arrive,
// results.json rewritten (whole) when each section starts and ends, report.html at the end. The
// files at the top of OUTPUT_DIR are links through `latest`, switched in one rename when a run
// ends: a reader sees the previous run's set or the new one, never a mix. A receiver killed in a
// section leaves the finished sections whole and the open one's records so far, which
// {@link completeRun} turns into a run marked incomplete. While a run is open its folder names its
// writer (WRITER_FILE, touched every few seconds), so that another receiver can tell a run whose
// receiver died from one being written ({@link completeAbandonedRuns}).
//
// Nothing is written through a link the receiver did not make. OUTPUT_DIR itself may be a link
// (the user chose it), but below it every folder is made here or must be a real folder of this
// process's user that others cannot write (a `runs` planted in a shared OUTPUT_DIR is refused);
// the run's folder is made exclusively (a new one every run, so nothing was planted in it), and
// its files are created with O_EXCL|O_NOFOLLOW.

/** The files a run writes, by fixed names: nothing from the network names a path. */
export const OUTPUT_FILES = { log: 'output.log', results: 'results.json', report: 'report.html' } as const;
/** Where run folders go, under OUTPUT_DIR. */
export const RUNS_FOLDER = 'runs';
/** The link in OUTPUT_DIR to the last run that ended. */
export const LATEST_LINK = 'latest';
/** results.json's stopReason while its run is open: a run left so never ended (its receiver died). */
export const RUN_IN_PROGRESS = 'in progress: the run has not ended';
/** A run folder's name under runs/, as {@link RunFolder.create} makes it: its start time (UTC) and 3 random bytes. */
export const RUN_FOLDER_NAME = /^\d{8}T\d{6}Z-[0-9a-f]{6}$/;
/** In an open run's folder: who writes it (a RunWriter), its mtime the heartbeat; removed when the run ends. */
export const WRITER_FILE = '.writer.json';
/** In a run folder being completed after its writer died: the writer file, renamed by the receiver completing it. */
const CLAIM_FILE = '.completing.json';
/** How often a run's writer touches its file. */
const HEARTBEAT_INTERVAL_MS = 2000;
/** The per-image CSV's header line. */
export const IMAGES_CSV_HEADER = 'image,status,one_way_ns,round_trip_ns,due_lag_ns';

/** Bytes buffered before a write goes out; a timer sends less every {@link FLUSH_INTERVAL_MS}. */
const FLUSH_BYTES = 256 * 1024;
/** Most time buffered records wait before they go to the kernel: what a killed receiver can lose. */
const FLUSH_INTERVAL_MS = 500;

/**
 * An append-only text file written in the background: lines are buffered and go out in order,
 * a chunk at a time, off the caller's path. The first failure is kept with the path and the
 * system's reason; later writes are dropped and {@link flush} throws it.
 */
export class AppendFile {
  private chain: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  /** Where lines are written, as bytes: full chunks go out as they fill, the rest on the timer. */
  readonly lines: AsciiLines;
  failure: Error | undefined;

  private constructor(
    readonly filePath: string,
    private readonly handle: FileHandle,
  ) {
    this.lines = new AsciiLines((chunk) => this.send(chunk), FLUSH_BYTES);
    this.timer = setInterval(() => this.lines.flush(), FLUSH_INTERVAL_MS).unref();
  }

  /** Creates `filePath` (it must not exist: nothing is written through a link planted in its place). */
  static async create(filePath: string): Promise<AppendFile> {
    try {
      return new AppendFile(filePath, await open(filePath, CREATE_NEW_FILE, 0o644));
    } catch (err) {
      throw writeFailure(filePath, err);
    }
  }

  /**
   * Opens an existing file of this run's to append to (a run being completed): a regular file, never through a link.
   */
  static async reopen(filePath: string): Promise<AppendFile> {
    let handle: FileHandle | undefined;
    try {
      handle = await open(filePath, APPEND_NO_FOLLOW);
      if (!(await handle.stat()).isFile()) throw new ItbError(ErrorCode.write, 'not a regular file');
      return new AppendFile(filePath, handle);
    } catch (err) {
      await handle?.close();
      throw writeFailure(filePath, err);
    }
  }

  /** Appends `text` (with its own line ends). */
  write(text: string): void {
    this.lines.text(text);
  }

  /** Everything written so far on disk (synced): throws the first failure. */
  async flush(): Promise<void> {
    this.lines.flush();
    this.chain = this.chain.then(() =>
      this.failure === undefined ? this.handle.datasync().catch((err: unknown) => this.fail(err)) : undefined,
    );
    await this.chain;
    if (this.failure !== undefined) throw this.failure;
  }

  /** Flushes and closes; throws the first failure (the file is closed either way). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    try {
      await this.flush();
    } finally {
      await this.handle.close().catch(() => undefined);
    }
  }

  private send(chunk: Buffer): void {
    if (this.failure !== undefined) return;
    this.chain = this.chain.then(async () => {
      if (this.failure !== undefined) return;
      await this.handle.write(chunk).catch((err: unknown) => this.fail(err));
    });
  }

  private fail(err: unknown): void {
    this.failure ??= writeFailure(this.filePath, err);
  }
}

/** What results.json says while a run is open: the report so far and the section in progress. */
interface OpenSnapshot {
  openSection?: { plan: SectionPlan; imagesFile: string; warmedUp: WarmupOutcome | null };
}

/** A section's files while it is open: its CSV, and the sink the recorder writes both files through. */
export interface OpenSectionFiles {
  imagesFile: string;
  sink: SectionSink;
}

/** The run folders this process writes (every receiver in it): a sweep never completes one of them. */
const writtenHere = new Set<string>();

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
    const imagesFile =
      `images-${String(this.sectionNumber).padStart(2, '0')}-${plan.transport}` +
      (this.info.repeat > 1 ? `-repeat${plan.repeat}` : '') +
      `.csv`;
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
    await writeAtomicNamed(path.join(this.dir, OUTPUT_FILES.results), renderResultsJson(report));
    await writeAtomicNamed(path.join(this.dir, OUTPUT_FILES.report), renderHtmlReport([report], libraries));
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
    await writeAtomicNamed(path.join(this.dir, OUTPUT_FILES.results), renderResultsJson(snapshot));
  }
}

// writeFileAtomic names the file and the reason already (ITB_ERR_WRITE).
async function writeAtomicNamed(target: string, text: string): Promise<void> {
  await writeFileAtomic(target, text);
}

/** Appending to an existing file only, never through a link. */
const APPEND_NO_FOLLOW = constants.O_WRONLY | constants.O_APPEND | (constants.O_NOFOLLOW ?? 0);

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
  const problem = await foreignFolder(dir);
  if (problem !== undefined)
    throw writeFailure(
      dir,
      new Error(`${problem}, which this receiver did not make: remove it, or use an OUTPUT_DIR only you can write`),
    );
}

// Why `dir` is not a folder of this process's own (undefined when it is).
async function foreignFolder(dir: string): Promise<string | undefined> {
  const stats = await lstat(dir).catch(() => undefined);
  if (stats === undefined) return 'it cannot be examined';
  if (stats.isSymbolicLink()) return `it is a symbolic link (to ${await readlink(dir).catch(() => '?')})`;
  if (!stats.isDirectory()) return 'it is not a folder';
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid)
    return `it is owned by uid ${stats.uid}, not by uid ${uid} (this process)`;
  // Others may write it only with the sticky bit, where no one can rename or remove what is not theirs.
  if ((stats.mode & 0o002) !== 0 && (stats.mode & 0o1000) === 0) return 'others can write in it';
  return undefined;
}

/** ITB_ERR_WRITE naming `target` and the system's reason. */
function writeFailure(target: string, err: unknown): ItbError {
  return new ItbError(ErrorCode.write, describeWriteFailure(target, err), { cause: err });
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

/** True when `dir` holds a run whose results.json says it never ended (its receiver died). */
export async function unfinishedRun(dir: string): Promise<boolean> {
  const text = await readFile(path.join(dir, OUTPUT_FILES.results), 'utf8').catch(() => undefined);
  if (text === undefined) return false;
  try {
    return (JSON.parse(text) as RunReport).stopReason === RUN_IN_PROGRESS;
  } catch {
    return false;
  }
}

/** When anything in run folder `dir` was last written (ms since the epoch): its files are appended as a run goes. */
export async function lastWriteMs(dir: string): Promise<number> {
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

/**
 * The run folders under `baseDir`, newest last (their names start with the start time): only real
 * folders in a `runs` of this process's own, so a run is never completed through planted links.
 */
export async function runFolders(baseDir: string): Promise<string[]> {
  const runsDir = path.join(baseDir, RUNS_FOLDER);
  if ((await foreignFolder(runsDir)) !== undefined) return [];
  const entries = await readdir(runsDir, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => path.join(runsDir, name));
}

/**
 * Completes a run whose receiver died (`reason` says how): the sections that ended stay as they
 * are; the one open is rebuilt from its per-image CSV (each image that arrived, its verdict, its
 * one-way time and round trip) and fails with `reason`, the images not in it counted lost; then
 * the summary, results.json and report.html are written and `latest` points at the run. Returns
 * the report, or undefined when `dir` holds no unfinished run.
 */
export async function completeRun(
  baseDir: string,
  dir: string,
  reason: string,
  libraries: HtmlReportLibraries,
): Promise<RunReport | undefined> {
  if (!(await unfinishedRun(dir))) return undefined;
  const snapshot = JSON.parse(await readFile(path.join(dir, OUTPUT_FILES.results), 'utf8')) as RunReport & OpenSnapshot;
  const sections = [...snapshot.sections];
  const log = await AppendFile.reopen(path.join(dir, OUTPUT_FILES.log));
  const open = snapshot.openSection;
  if (open !== undefined) {
    const result = await rebuildSection(path.join(dir, open.imagesFile), open.plan, open.warmedUp, reason, log);
    const recorded = { ...result, imagesFile: open.imagesFile };
    log.write(`\n${renderSectionFooter(recorded)}\n\n`);
    sections.push(recorded);
  }
  const report = buildRunReport(snapshot.run, sections, reason);
  log.write(renderOutputLogEnd(report));
  await log.close();
  await writeAtomicNamed(path.join(dir, OUTPUT_FILES.results), renderResultsJson(report));
  await writeAtomicNamed(path.join(dir, OUTPUT_FILES.report), renderHtmlReport([report], libraries));
  await pointLatestAt(baseDir, dir);
  // Ended now: it names no writer, and no sweep looks at it again.
  await rm(path.join(dir, WRITER_FILE), { force: true });
  await rm(path.join(dir, CLAIM_FILE), { force: true });
  return report;
}

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
      if ((await foreignFolder(base)) === undefined) bases.push(base);
    }
  const found: AbandonedRun[] = [];
  for (const baseDir of bases)
    for (const dir of await runFolders(baseDir)) {
      if (writtenHere.has(dir)) continue;
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
  const writer = parseWriter(await readFile(writerPath, 'utf8').catch(() => ''));
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

// A writer file's content; one that cannot be read names no process, and is judged by its heartbeat alone.
function parseWriter(text: string): RunWriter {
  let parsed: Partial<Record<keyof RunWriter, unknown>> = {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null) parsed = value;
  } catch {
    // Judged by its heartbeat.
  }
  const textOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  return {
    pid: typeof parsed.pid === 'number' && Number.isSafeInteger(parsed.pid) ? parsed.pid : 0,
    startTicks: textOrNull(parsed.startTicks),
    bootId: textOrNull(parsed.bootId),
    pidNamespace: textOrNull(parsed.pidNamespace),
    hostname: textOrNull(parsed.hostname) ?? 'an unknown host',
  };
}

// The open section's record from its CSV: each line replayed through a recorder (so the figures
// are computed as for any section), the lost ones appended to the CSV and output.log. The span
// (first stamp to last arrival) is not in the CSV: the section's MB/s and total are unknown.
async function rebuildSection(
  csvPath: string,
  plan: SectionPlan,
  warmedUp: WarmupOutcome | null,
  reason: string,
  log: AppendFile,
): Promise<SectionResult> {
  const csv = await AppendFile.reopen(csvPath);
  const twoClocks = plan.clock?.applied === true;
  // The images in the CSV are replayed for the figures only; what the recorder adds is the lost.
  const recorder = new SectionRecorder(
    { ...plan, clock: null },
    {
      arrived() {},
      recorded(image, status) {
        if (status !== 'lost') return;
        csv.write(`${image},lost,,,\n`);
        log.write(`${renderImageLine(image, null, status, twoClocks)}\n`);
      },
    },
  );
  const first = warmedUp?.images;
  let arrived = 0;
  if (warmedUp !== null && first !== undefined) {
    recorder.beginRecording(warmedUp, 0n);
    const lines = createInterface({ input: createReadStream(csvPath), crlfDelay: Infinity });
    for await (const line of lines) {
      const [imageText, status, oneWay, rtt, lag] = line.split(',');
      const image = Number(imageText);
      if (
        !Number.isInteger(image) ||
        image < 1 ||
        (status !== 'ok' && status !== 'corrupt') ||
        oneWay === undefined ||
        oneWay === ''
      )
        continue;
      const seq = first + image - 1;
      const header = decodeFrameHeader(
        encodeFrameHeader({
          sectionId: plan.sectionId,
          seq,
          sizeBytes: plan.imageSizeBytes,
          checksum: 0n,
          sentAtNs: 0n,
        }),
        plan.imageSizeBytes,
      );
      recorder.record(header, BigInt(Math.round(Number(oneWay))));
      recorder.verified(seq, status === 'ok');
      arrived++;
      if (rtt !== undefined && rtt !== '')
        recorder.roundTrips(
          Float64Array.of(image, Number(rtt), lag === undefined || lag === '' ? Number.NaN : Number(lag)),
        );
    }
  }
  // Under DURATION what was sent is known only to the transmitter: at least every image its file names.
  const result = recorder.result(`${reason}; got ${arrived} images (those in its per-image file)`, {
    imagesSent: recorder.highestRecordedImage,
  });
  await csv.close();
  return {
    ...result,
    clock: plan.clock,
    totalMs: null,
    throughputMBps: null,
    imagesPerSecond: null,
    throughputIndicative: true,
  };
}
