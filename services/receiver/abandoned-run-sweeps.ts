import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../core/config/config.js';
import { errorMessage } from '../core/errors.js';
import { reportLibraries } from '../shared/report-assets.js';
import { completeAbandonedRuns } from './run-output/abandoned-runs.js';

// A run a receiver died in (killed, out of memory) is completed by the next receiver that sees it: its finished
// sections as they were, the open one from its per-image file, marked incomplete (./run-output/abandoned-runs.ts). This
// says when a receiver looks: at its start (an older receiver's runs too), before each run, and every few seconds
// between runs (a receiver sharing OUTPUT_DIR may die while this one runs). One sweep at a time.

/**
 * How much longer than the watchdog's limit a run folder that names no writer (an older receiver's) must have been
 * silent before a starting receiver completes it.
 */
const ABANDONED_RUN_GRACE_MS = 60_000;

/**
 * A run's writer that cannot be looked at is gone once its heartbeat, touched every 2 s, is this old: far beyond any
 * pause of a live receiver's event loop. Shorter for one of this host name in another pid namespace (this container
 * before a restart), so that a restarted container ends its run before a transmitter can come back.
 */
const WRITER_STALE_MS = { restartedMs: 10_000, elsewhereMs: 30_000 } as const;

/** Between runs, how often OUTPUT_DIR is looked at for runs whose receiver died. */
const ABANDONED_RUN_SWEEP_INTERVAL_MS = 5000;

/** The receiver's sweeps of OUTPUT_DIR for runs whose receiver died: see the module comment. */
export class AbandonedRunSweeps {
  // The sweep under way, its end, and whether the one at start is over.
  private sweeping: Promise<void> | undefined;
  private lastSweepEndedMs = 0;
  private startSweepDone = false;

  constructor(
    private readonly config: Readonly<Config>,
    private readonly log: Logger,
    /** The watchdog's limit: a folder naming no writer is looked at once silent this long and a grace more. */
    private readonly idleLimitMs: number,
    /** True while this receiver has a run in progress: no sweep between runs then. */
    private readonly runInProgress: () => boolean,
  ) {}

  /** True until the sweep at start is over: the receiver is not ready before. */
  get findingAtStart(): boolean {
    return !this.startSweepDone;
  }

  /**
   * Completes the runs a receiver died in (`atStart`: an older receiver's runs too); never one this process writes, nor
   * one whose writer may be alive (see core/model/run-writer.ts). A second caller waits for the sweep going.
   */
  complete(atStart = false): Promise<void> {
    if (this.sweeping !== undefined) return this.sweeping;
    const sweep = this.sweepOnce(atStart).finally(() => {
      this.lastSweepEndedMs = Date.now();
      if (atStart) this.startSweepDone = true;
      if (this.sweeping === sweep) this.sweeping = undefined;
    });
    this.sweeping = sweep;
    return sweep;
  }

  /** Called every second: between runs, sweeps every few seconds. */
  lookBetweenRuns(): void {
    if (this.runInProgress() || this.sweeping !== undefined || !this.startSweepDone) return;
    if (Date.now() - this.lastSweepEndedMs < ABANDONED_RUN_SWEEP_INTERVAL_MS) return;
    void this.complete();
  }

  // complete's work; never throws (what fails is logged).
  private async sweepOnce(atStart: boolean): Promise<void> {
    const { config, log } = this;
    const found = await completeAbandonedRuns(path.resolve(config.outputDir), {
      heartbeat: WRITER_STALE_MS,
      unnamedQuietMs: atStart ? this.idleLimitMs + ABANDONED_RUN_GRACE_MS : undefined,
      libraries: reportLibraries,
    }).catch((err: unknown) => {
      log.error({ outputDir: config.outputDir, err: errorMessage(err) }, 'could not look for abandoned runs');
      return [];
    });
    for (const run of found) {
      const runFolder = path.relative(path.resolve(config.outputDir), run.dir);
      if (run.error !== undefined)
        log.error({ runFolder, err: run.error }, 'could not complete a run its receiver never ended');
      else if (run.report !== undefined)
        log.warn(
          { runFolder, reason: run.reason, sections: run.report.sections.length },
          'completed a run its receiver never ended: its open section is marked incomplete',
        );
    }
  }
}
