import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../core/config/config.js';
import { errorMessage } from '../core/errors.js';
import type { SectionPlan, SectionResult } from '../core/model/section.js';
import { type RunInfo, type RunReport, runSucceeded } from '../core/report/report.js';
import { runImagesSoFar } from '../core/report/images-sent.js';
import { renderSummary } from '../core/report/text/summary-tables.js';
import type { SectionCredential } from '../core/wire/auth.js';
import type { ProgressResponse, RunAnnouncement, RunFinish, SectionEnd } from '../core/control/control-protocol.js';
import { reportLibraries } from '../shared/report-assets.js';
import { RunFolder } from './run-output/run-folder.js';
import { transportByName } from '../transports/index.js';
import { connectionsPerSection, type Doorkeeper } from './door.js';
import type { Listeners } from './listeners.js';
import type { RunSession } from './session.js';
import { AbandonedRunSweeps } from './abandoned-run-sweeps.js';
import { type ProfileRefusal, SectionProfiles } from './section-profiles.js';

// What a run is on the receiver beyond its records (RunSession keeps those): its folder, written as
// it goes; the door and the listener of its open section; and its end, the same three ways (the
// transmitter finishes it, the watchdog finds the transmitter gone, the receiver shuts down).

/** Extra time the watchdog allows beyond the transmitter's own longest wait before declaring it gone. */
const WATCHDOG_GRACE_MS = 5000;

/** The run in progress: when this receiver accepted it (its own clock) and the transmitter's address as it saw it. */
interface RunHolder {
  startedAt: string;
  peer: string;
}

/** Why a second POST /runs is refused: the run in progress, and how long a silent one can still hold the receiver. */
function runInProgress(holder: RunHolder | undefined, idleLimitMs: number): string {
  const who = holder === undefined ? '' : `: started ${holder.startedAt} by ${holder.peer}`;
  return (
    `a run is in progress${who}; it keeps its files; wait for it to end (or for the receiver's ` +
    `watchdog, ${idleLimitMs / 1000} s after the transmitter goes silent: the longer of IMAGE_TIMEOUT_MS and ` +
    `CONNECT_TIMEOUT_MS, plus 5 s)`
  );
}

/**
 * GET /progress's counts of a run: the images recorded so far (intact or corrupt; `openRecorded` of its open section)
 * and the images it sends in all, as far as known.
 */
function runCounts(
  run: RunInfo,
  sections: readonly SectionResult[],
  openRecorded: number,
): { recorded: number; imageCount: number } {
  return {
    recorded: sections.reduce((sum, section) => sum + section.okCount + section.corruptCount, 0) + openRecorded,
    imageCount: runImagesSoFar(run, sections, openRecorded),
  };
}

/** The open section's door and the listener that prepared for it: opened for one section, closed before the next. */
class DataSectionDoor {
  // The transport whose section the door is open for, so its listener can release what it prepared.
  private transport: string | undefined;

  constructor(
    private readonly doorkeeper: Doorkeeper,
    private readonly listeners: Listeners,
    private readonly log: Logger,
  ) {}

  /**
   * Opens the door to the section's one link, after its listener prepared what it needs; returns why not when it
   * cannot. `transmitterHost` is where the section's control request came from.
   */
  async open(plan: SectionPlan, credential: SectionCredential, transmitterHost: string): Promise<string | undefined> {
    // The door is open before a listener that dials the transmitter (websocket-push) admits its own connection.
    // Each client holds one link's connections.
    this.doorkeeper.openSection(
      plan.transport,
      credential,
      plan.clients * connectionsPerSection(transportByName(plan.transport), plan.window),
    );
    try {
      await this.listeners.openSection(plan.transport, {
        credential,
        window: plan.window,
        transmitterHost,
        receiverIndex: plan.receiverIndex,
      });
    } catch (err) {
      this.doorkeeper.closeSection();
      return `receiver's ${plan.transport} listener could not prepare the section: ${errorMessage(err)}`;
    }
    this.transport = plan.transport;
    return undefined;
  }

  /** Shuts the door on the section's links and lets its listener release what it prepared. */
  async close(): Promise<void> {
    this.doorkeeper.closeSection();
    const transport = this.transport;
    this.transport = undefined;
    if (transport !== undefined)
      await this.listeners
        .closeSection(transport)
        .catch((err: unknown) => this.log.warn({ transport, err: errorMessage(err) }, 'section not released'));
  }
}

/** A run's folder, sections and end; the control routes, the watchdog and close() act on runs through it. */
export interface RunKeeper {
  /** The run's folder while one is in progress. */
  readonly folder: RunFolder | undefined;
  /** Why a second POST /runs is refused while a run is in progress. */
  inProgressRefusal(): string;
  /** Starts a run and its folder for the transmitter at `peer`; throws (the run not started) when its folder fails. */
  startRun(announcement: RunAnnouncement, peer: string): Promise<void>;
  /** Opens a section, its door admitting `credential`; returns why it is refused (recorded as failed) if it is. */
  openSection(plan: SectionPlan, credential: SectionCredential, transmitterHost: string): Promise<string | undefined>;
  /** Ends the open section with the transmitter's side of it; its result as recorded in the run's files. */
  endSection(end: SectionEnd): Promise<SectionResult | undefined>;
  /** PROFILE=1: the transmitter's CPU profile of open section `sectionId`, gzipped, into the run's folder. */
  transmitterProfile(sectionId: number, gzipped: Buffer): Promise<ProfileRefusal | undefined>;
  /** Ends the run in progress (`stopReason` null: the transmitter finished it); undefined when none is. */
  endRun(stopReason: string | null): Promise<RunFinish | undefined>;
  /**
   * Resolves once no run's end is being written: `run-end` goes out (the session's observers) before report.html is
   * written, so GET / waits on this rather than serve the previous run's report, or the live page again.
   */
  filesWritten(): Promise<void>;
  /** GET /progress's answer. */
  progress(): ProgressResponse;
  /**
   * Completes the runs a receiver died in, found in OUTPUT_DIR: at start (`atStart`: an older receiver's runs too),
   * before each run, and between runs (lookForAbandonedRuns). Resolves once no sweep is under way.
   */
  completeAbandonedRuns(atStart?: boolean): Promise<void>;
  /** True until the sweep at start is over: the receiver is not ready before. */
  readonly findingAbandonedRuns: boolean;
  /** Called every second: between runs, looks for abandoned runs every few seconds. */
  lookForAbandonedRuns(): void;
  /** Ends the run in progress when its transmitter has gone silent too long. */
  checkTransmitterAlive(): void;
}

/** The run keeper of a receiver's session, listeners and doorkeeper. */
export function buildRunKeeper(
  config: Readonly<Config>,
  log: Logger,
  session: RunSession,
  listeners: Listeners,
  doorkeeper: Doorkeeper,
): RunKeeper {
  // GET /progress's counts of the run in progress, or of the last one once it ended.
  let lastRunCounts = { recorded: 0, imageCount: 0 };
  // The open run's folder: its files are written as the run goes.
  let folder: RunFolder | undefined;
  const door = new DataSectionDoor(doorkeeper, listeners, log);
  // The transmitter never stays silent longer than its longest wait (a connect, or an ack).
  const idleLimitMs = Math.max(config.imageTimeoutMs, config.connectTimeoutMs) + WATCHDOG_GRACE_MS;
  // Who holds the run in progress, named to a second transmitter when it is refused.
  let runHolder: RunHolder | undefined;
  // The end being written (its summary, results.json, report.html), until it settles.
  let ending: Promise<unknown> | undefined;
  const sweeps = new AbandonedRunSweeps(config, log, idleLimitMs, () => session.inProgress);
  const profiles = new SectionProfiles(config.profile, log);

  // Opens the section `plan` after closing the one before; returns why it is refused (its listener
  // is down, its images too large, its door cannot open), when it is: it is recorded as failed then.
  async function openSection(
    plan: SectionPlan,
    credential: SectionCredential,
    transmitterHost: string,
  ): Promise<string | undefined> {
    await door.close();
    const status = listeners.status()[plan.transport];
    const refusal = !status?.ready
      ? `receiver's ${plan.transport} listener is not available: ${status?.error ?? 'not in its TRANSPORTS'}`
      : plan.imageSizeBytes > config.maxImageBytes
        ? `images of ${plan.imageSizeBytes} bytes are over the receiver's MAX_IMAGE_SIZE ` +
          `(${config.maxImageBytes} bytes)`
        : await door.open(plan, credential, transmitterHost);
    // A refused section stays in the report as failed, with the reason: never silently missing.
    // A section still open (its end never came) is recorded as failed, with the count it got.
    await recordSection(await session.endOpenSection('a new section opened before this one ended'));
    if (refusal !== undefined) await recordSection(session.openSection(plan, refusal));
    else await openInFiles(plan, session, folder, profiles);
    return refusal;
  }

  // GET /progress's counts: the run in progress's, or the last one's once it ended.
  function progress(): ProgressResponse {
    const progress = session.progress();
    // Between runs the last run's counts stay: its end can fall between two readings of a sampler.
    if (progress === undefined) return { inProgress: false, transport: null, ...lastRunCounts };
    lastRunCounts = runCounts(progress.info, progress.sections, progress.open?.recorded ?? 0);
    return { inProgress: true, transport: progress.open?.transport ?? null, ...lastRunCounts };
  }

  // Starts a run's folder; a run whose folder cannot be made does not start (the reason names the path).
  // `peer` is the transmitter's address, named to a second one when it is refused.
  async function startRun(announcement: RunAnnouncement, peer: string): Promise<void> {
    session.start(announcement);
    // A run left by a receiver that died is ended before this one, so `latest` goes to this one last.
    await sweeps.complete();
    try {
      folder = await RunFolder.create(
        path.resolve(session.outputDir(config.outputDir)),
        session.runInfo!,
        path.resolve(config.outputDir),
      );
    } catch (err) {
      folder = undefined;
      await session.finish('its files could not be written');
      throw err;
    }
    runHolder = { startedAt: new Date().toISOString(), peer };
  }

  // A section's result into its run's files (output.log, results.json), CPU profiles named; returns it as recorded.
  async function recordSection(result: SectionResult | undefined): Promise<SectionResult | undefined> {
    const profiled = await withCpuProfiles(result, session, profiles);
    return profiled === undefined || folder === undefined ? profiled : folder.endSection(profiled);
  }

  // Ends the run in progress: its open section (if any) fails with `stopReason`, then the summary,
  // results.json and report.html go into the run's folder and OUTPUT_DIR's links switch to it.
  // A failed write throws naming the path and the reason; the previous run's files stay linked.
  // The end is kept while it is written, for filesWritten().
  function endRun(stopReason: string | null): Promise<RunFinish | undefined> {
    const ended = writeRunEnd(stopReason);
    const settled = ended.then(
      () => undefined,
      () => undefined,
    );
    ending = settled;
    void settled.then(() => {
      if (ending === settled) ending = undefined;
    });
    return ended;
  }

  // endRun's work.
  async function writeRunEnd(stopReason: string | null): Promise<RunFinish | undefined> {
    await door.close();
    if (stopReason !== null) await recordSection(await session.endOpenSection(stopReason));
    const report = await session.finish(stopReason).finally(() => profiles.discard());
    if (report !== undefined) lastRunCounts = runCounts(report.run, report.sections, 0);
    const runFolder = folder;
    folder = undefined;
    if (report === undefined || runFolder === undefined) return undefined;
    return finishRunFiles(runFolder, report, stopReason, session, log);
  }

  // Ends a run whose transmitter has been silent longer than it ever waits (checked every second).
  function checkTransmitterAlive(): void {
    if (!session.inProgress || Date.now() - session.lastActivityMs <= idleLimitMs) return;
    const reason =
      `transmitter went away: no frame or control request for ` +
      Math.round((Date.now() - session.lastActivityMs) / 1000) +
      ` s`;
    endRun(reason).catch((err: unknown) => log.error({ err: errorMessage(err) }, 'could not write the output files'));
  }

  return {
    get folder() {
      return folder;
    },
    inProgressRefusal: () => runInProgress(runHolder, idleLimitMs),
    startRun,
    openSection,
    async endSection(end) {
      await door.close();
      return recordSection(await session.endSection(end));
    },
    transmitterProfile: (sectionId, gzipped) => profiles.transmitterProfile(sectionId, gzipped),
    endRun,
    async filesWritten() {
      await ending;
    },
    progress,
    completeAbandonedRuns: (atStart) => sweeps.complete(atStart),
    get findingAbandonedRuns() {
      return sweeps.findingAtStart;
    },
    lookForAbandonedRuns: () => sweeps.lookBetweenRuns(),
    checkTransmitterAlive,
  };
}

/**
 * Opens section `plan` in the session and in `folder` (its CSV, output.log's heading) when there is one; its CPU
 * profile (PROFILE=1) starts then.
 */
async function openInFiles(
  plan: SectionPlan,
  session: RunSession,
  folder: RunFolder | undefined,
  profiles: SectionProfiles,
): Promise<void> {
  session.openSection(plan, undefined, await folder?.openSection(plan));
  if (folder !== undefined) await profiles.opened(plan, session.runInfo?.repeat ?? 1, folder.dir);
}

/**
 * `result` with its CPU profiles named (PROFILE=1), in the session's record too: a fan-out and the run's report are
 * made from that. Undefined for no result.
 */
async function withCpuProfiles(
  result: SectionResult | undefined,
  session: RunSession,
  profiles: SectionProfiles,
): Promise<SectionResult | undefined> {
  if (result === undefined) return undefined;
  const profiled = await profiles.ended(result);
  if (profiled !== result) session.replaceSection(profiled);
  return profiled;
}

/**
 * Writes the run's end into `runFolder` (summary, results.json, report.html, OUTPUT_DIR's links) and logs it; the
 * transmitter's answer, failed with the reason when the files could not be written (the previous run stays linked).
 */
async function finishRunFiles(
  runFolder: RunFolder,
  report: RunReport,
  stopReason: string | null,
  session: RunSession,
  log: Logger,
): Promise<RunFinish> {
  const outputDir = runFolder.baseDir;
  const finish: RunFinish = {
    summary: renderSummary(report),
    succeeded: runSucceeded(report),
    runFolder: path.relative(outputDir, runFolder.dir),
  };
  try {
    await runFolder.finish(report, reportLibraries());
  } catch (err) {
    // The run's figures still reach the transmitter; OUTPUT_DIR's links stay on the previous run.
    await runFolder.abandon();
    const filesNotWritten = errorMessage(err);
    log.error(
      { outputDir, runFolder: runFolder.name, err: filesNotWritten, stopReason },
      'output files not written; the previous run stays the latest',
    );
    return { ...finish, succeeded: false, filesNotWritten };
  }
  if (stopReason === null)
    log.info(
      {
        outputDir,
        runFolder: runFolder.name,
        strayFrames: session.strayFrames,
        rejectedInputs: session.rejectedInputs,
      },
      'run finished; output files written',
    );
  else
    log.warn(
      {
        outputDir,
        runFolder: runFolder.name,
        stopReason,
        strayFrames: session.strayFrames,
        rejectedInputs: session.rejectedInputs,
      },
      'run ended incomplete; output files written',
    );
  return finish;
}
