import readline from 'node:readline';
import cliProgress from 'cli-progress';
import type { SectionResult } from '../core/model/section.js';
import { formatSize } from '../core/config/size.js';
import { formatDurationMs } from '../core/config/duration.js';
import type { RunObserver, SectionProgress } from './app.js';

// The transmitter's live progress. The transmitter only increments SectionProgress counters; this
// display reads them on its own (unref'd) timer, so nothing here runs per image or inside the timed
// path, and a forgotten display never keeps the process alive.

/** Where and how often progress is shown; `now` is injectable so tests drive elapsed time. */
export interface ProgressDisplayOptions {
  stream: NodeJS.WritableStream & { isTTY?: boolean };
  /** True: live bars redrawn in place (a terminal). False: a plain line every plainIntervalMs (logs, CI). */
  tty: boolean;
  plainIntervalMs?: number;
  ttyIntervalMs?: number;
  now?: () => number;
}

/**
 * A run observer that shows progress until stop(), which is safe to call twice. print() writes one
 * whole line (its newline included) above the bars while they are drawn, never inside them.
 */
export type ProgressDisplay = RunObserver & { stop(): void; print(line: string): void };

const DEFAULT_PLAIN_INTERVAL_MS = 5000;
const DEFAULT_TTY_INTERVAL_MS = 200;

// One section as the display knows it: its live counters and, once over, when and how it ended.
interface SectionEntry {
  progress: SectionProgress;
  endedAtMs: number | undefined;
  result: SectionResult | undefined;
}

/** Builds the progress display: cli-progress bars on a terminal, plain periodic lines otherwise. */
export function createProgressDisplay(options: ProgressDisplayOptions): ProgressDisplay {
  const now = options.now ?? Date.now;
  return options.tty
    ? ttyDisplay(options.stream, options.ttyIntervalMs ?? DEFAULT_TTY_INTERVAL_MS, now)
    : plainDisplay(options.stream, options.plainIntervalMs ?? DEFAULT_PLAIN_INTERVAL_MS, now);
}

/** "3 s", "2 min 5 s", "1 h 4 min": a duration in whole units people read at a glance. */
export function formatDurationSeconds(seconds: number): string {
  const whole = Math.max(0, Math.ceil(seconds));
  if (whole < 60) return `${whole} s`;
  if (whole < 3600) return `${Math.floor(whole / 60)} min ${whole % 60} s`;
  return `${Math.floor(whole / 3600)} h ${Math.floor((whole % 3600) / 60)} min`;
}

// Acknowledged MB/s (10^6 bytes) since the first recorded image; undefined before it was sent.
function rateMBps(entry: SectionEntry, nowMs: number): number | undefined {
  const { startedAtMs, acked, imageSizeBytes } = entry.progress;
  if (startedAtMs === undefined) return undefined;
  const elapsedS = ((entry.endedAtMs ?? nowMs) - startedAtMs) / 1000;
  return elapsedS > 0 ? (acked * imageSizeBytes) / 1e6 / elapsedS : undefined;
}

// Seconds left at the acknowledgement rate so far; undefined until one image is acknowledged.
function secondsLeft(entry: SectionEntry, nowMs: number): number | undefined {
  const { startedAtMs, acked, imageCount, durationMs } = entry.progress;
  if (startedAtMs === undefined || acked === 0) return undefined;
  const elapsedS = (nowMs - startedAtMs) / 1000;
  // DURATION: the clock says it, not the count.
  if (durationMs != null) return Math.max(0, durationMs / 1000 - elapsedS);
  return (Math.max(0, imageCount - acked) * elapsedS) / acked;
}

// Where a bar stands: images acknowledged of the count, or under DURATION seconds gone of its seconds.
function barPosition(progress: SectionProgress, nowMs: number): { value: number; total: number } {
  if (progress.durationMs == null) return { value: progress.acked, total: progress.imageCount };
  const elapsedS = progress.startedAtMs === undefined ? 0 : Math.floor((nowMs - progress.startedAtMs) / 1000);
  const total = Math.round(progress.durationMs / 1000);
  return { value: Math.min(total, elapsedS), total };
}

// "12.3 MB/s, about 4 s left" while running; "warming up" before the first recorded image.
function runningDetail(entry: SectionEntry, nowMs: number): string {
  const rate = rateMBps(entry, nowMs);
  if (rate === undefined) return 'warming up';
  const left = secondsLeft(entry, nowMs);
  return (
    `${rate.toFixed(1)} MB/s, ` +
    (left === undefined ? 'time left unknown' : `about ${formatDurationSeconds(left)} left`)
  );
}

// "ok", or "FAILED: " and why: the failure, else what was lost or corrupt.
function verdict(result: SectionResult): string {
  if (result.ok) return 'ok';
  const reason =
    result.failure ??
    `${result.okCount}/${result.imageCount} intact, ${result.lostCount} lost, ${result.corruptCount} corrupt` +
      ((result.supersededCount ?? 0) > 0 ? `, ${result.supersededCount} superseded` : '');
  return `FAILED: ${reason}`;
}

function plainDisplay(stream: NodeJS.WritableStream, intervalMs: number, now: () => number): ProgressDisplay {
  const running = new Set<SectionEntry>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const write = (line: string): void => {
    stream.write(`progress: ${line}\n`);
  };
  const name = ({ label, repeat, repeats }: SectionProgress): string => `${label} ${repeat}/${repeats}`;
  const tick = (): void => {
    const nowMs = now();
    for (const entry of running) {
      const { acked, imageCount, durationMs } = entry.progress;
      write(
        `${name(entry.progress)}: ` +
          (durationMs == null ? `${acked}/${imageCount}` : acked) +
          ` images acknowledged, ${runningDetail(entry, nowMs)}`,
      );
    }
  };

  return {
    sectionStarted(progress) {
      if (stopped) return;
      running.add({ progress, endedAtMs: undefined, result: undefined });
      write(
        `${progress.label} repeat ${progress.repeat}/${progress.repeats} started: ` +
          (progress.durationMs == null
            ? `${progress.imageCount} images`
            : `images for ${formatDurationMs(progress.durationMs)}`) +
          ` of ${formatSize(progress.imageSizeBytes)} each`,
      );
      if (timer === undefined) {
        timer = setInterval(tick, intervalMs);
        timer.unref();
      }
    },
    sectionEnded(progress, result) {
      if (stopped) return;
      for (const entry of running) if (entry.progress === progress) running.delete(entry);
      write(`${name(progress)} done: ${verdict(result)}`);
    },
    stop() {
      stopped = true;
      clearInterval(timer);
      timer = undefined;
      running.clear();
    },
    print(line) {
      stream.write(line);
    },
  };
}

function ttyDisplay(stream: NodeJS.WritableStream, intervalMs: number, now: () => number): ProgressDisplay {
  const multibar = new cliProgress.MultiBar(
    {
      stream,
      // cli-progress schedules its own redraws; this is their period.
      fps: 1000 / intervalMs,
      format: '{label} |{bar}| {value}/{total} | {detail}',
      barsize: 30,
      // Trim bars to the terminal width without switching the terminal's wrapping off, and leave the
      // cursor and signals alone: nothing to restore if the process ends abruptly.
      linewrap: true,
      hideCursor: false,
      gracefulExit: false,
      // Redraw every bar on every frame, not only changed ones: a line printed above the bars
      // (print) takes the first bar's row, and an unchanged bar would otherwise not be drawn again.
      forceRedraw: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const bars = new Map<SectionEntry, cliProgress.SingleBar>();
  let stopped = false;

  const label = ({ label, repeat, repeats }: SectionProgress): string =>
    repeats > 1 ? `${label} repeat ${repeat}/${repeats}` : label;
  const detail = (entry: SectionEntry, nowMs: number): string =>
    entry.result === undefined
      ? runningDetail(entry, nowMs)
      : `${rateMBps(entry, nowMs)?.toFixed(1) ?? '-'} MB/s, ${verdict(entry.result)}`;
  // Copies the counters into the bars; labels are padded to the longest so the bars line up.
  const refresh = (): void => {
    const nowMs = now();
    const width = Math.max(0, ...[...bars.keys()].map((entry) => label(entry.progress).length));
    for (const [entry, bar] of bars) {
      const position = barPosition(entry.progress, nowMs);
      if (bar.getTotal() !== position.total) bar.setTotal(position.total);
      bar.update(position.value, { label: label(entry.progress).padEnd(width), detail: detail(entry, nowMs) });
    }
  };
  // cli-progress keeps a plain (ref'd) setTimeout for its redraws; unref each one it schedules so
  // the display never holds the process open. `timer` is internal to cli-progress 3.x.
  const unrefRedrawTimer = (): void => {
    (multibar as unknown as { timer?: NodeJS.Timeout | null }).timer?.unref?.();
  };
  multibar.on('start', unrefRedrawTimer);
  multibar.on('update-post', unrefRedrawTimer);
  multibar.on('update-pre', refresh);
  // A printed line wider than the terminal wraps onto the rows below the first bar's: clear them
  // all before cli-progress writes the line there (it clears only the first), the bars come below.
  let linesPending = false;
  multibar.on('redraw-pre', () => {
    if (!linesPending) return;
    linesPending = false;
    readline.clearScreenDown(stream);
  });

  return {
    sectionStarted(progress) {
      if (stopped) return;
      const entry: SectionEntry = { progress, endedAtMs: undefined, result: undefined };
      const position = barPosition(progress, now());
      bars.set(
        entry,
        multibar.create(position.total, position.value, { label: label(progress), detail: 'warming up' }),
      );
    },
    sectionEnded(progress, result) {
      if (stopped) return;
      for (const [entry, bar] of bars) {
        if (entry.progress !== progress || entry.result !== undefined) continue;
        entry.endedAtMs = now();
        entry.result = result;
        bar.stop();
      }
      // Redraw now so the verdict shows at once; update-pre copies the counters in.
      multibar.update();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      if (bars.size === 0) return;
      refresh();
      multibar.stop();
    },
    print(line) {
      if (stopped || bars.size === 0) {
        stream.write(line);
        return;
      }
      // MultiBar.log only queues the line for the next redraw; redrawing now writes it where the
      // bars began and draws them below it, at once (a line is never lost at exit).
      linesPending = true;
      multibar.log(line);
      multibar.update();
    },
  };
}
