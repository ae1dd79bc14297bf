import { formatSize } from '../config/size.js';
import { describeWarmup, type WarmupPlan } from '../model/warmup.js';
import type { RunReport } from './report.js';
import { runSucceeded } from './report.js';
import { resultsShapeProblem } from './results-shape.js';
import { sectionTitle } from './wording.js';
import { runImages, runImagesPhrase, type SentFields } from './images-sent.js';

// One line per kept run for the receiver's GET /runs: what a results.json says about its run in a
// few fields (start, settings, verdict, each transport's headline MB/s). Pure: the receiver reads
// the files (services/receiver/runs-routes.ts). A file that is unreadable, corrupt or partial
// gives a line that says so, never an exception.

/**
 * The section fields a headline reads (its verdict, its MB/s, under DURATION what it sent): the rest of each section
 * need not be kept.
 */
export const HEADLINE_SECTION_FIELDS = ['ok', 'throughputMBps', 'transport', 'label', 'imageCount'] as const;

/**
 * Where a kept run stands: ended (by its transmitter or not), open in this receiver now, never
 * ended (its receiver stopped in it), or its results.json cannot be used.
 */
export type RunState = 'finished' | 'in-progress' | 'not-ended' | 'unreadable';

/** One transport of a run: its display name and its median repeat's MB/s. */
export interface TransportHeadline {
  transport: string;
  /** The display name (the report's label), "(baseline)" added for the baseline. */
  title: string;
  /** The median completed repeat's MB/s; null when no repeat completed. */
  throughputMBps: number | null;
  /** The MB/s is indicative (shown with ~): see TransportSummary.throughputIndicative. */
  indicative: boolean;
  ok: boolean;
}

/** A kept run as GET /runs lists it. */
export interface RunHeadline {
  /** Its folder's name under OUTPUT_DIR/runs/. */
  folder: string;
  state: RunState;
  /** Why its results.json cannot be used (state "unreadable"); null otherwise. */
  problem: string | null;
  startedAt: string | null;
  /** The run's settings, each as a short phrase ("3 images of 533.0 KiB", "window 1", ...). */
  settings: string[];
  transports: TransportHeadline[];
  /** Every image intact, or what failed; null while the run has not ended. */
  verdict: { ok: boolean; text: string } | null;
}

/**
 * What reading one results.json gave: its parsed value (sections cut down), or why it could not be read
 * (services/receiver/run-output/results-reader.ts reads it).
 */
export type ReadOutcome = { ok: true; value: unknown } | { ok: false; problem: string };

/** What a headline needs beyond the file: the run open in this receiver, and results.json's stopReason while open. */
export interface HeadlineContext {
  openFolder: string | undefined;
  unendedStopReason: string;
}

const unreadable = (folder: string, problem: string): RunHeadline => ({
  folder,
  state: 'unreadable',
  problem,
  startedAt: null,
  settings: [],
  transports: [],
  verdict: null,
});

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The run's fields a headline needs that are missing or of the wrong type (imageCount is null under DURATION). */
function missingRunFields(run: Record<string, unknown>): string[] {
  const numbers = ['imageCount', 'imageSizeBytes', 'window', 'repeat'];
  const byDuration = isNumber((run.config as { durationMs?: unknown } | null | undefined)?.durationMs);
  return [
    ...(typeof run.startedAt === 'string' ? [] : ['startedAt']),
    ...numbers.filter((name) => !isNumber(run[name]) && !(name === 'imageCount' && byDuration && run[name] === null)),
    ...(Array.isArray(run.transports) ? [] : ['transports']),
    ...(typeof run.warmup === 'object' && run.warmup !== null ? [] : ['warmup']),
  ];
}

/**
 * The run's settings as short phrases, in the order they matter for a comparison; under DURATION what its ended
 * `sections` sent (none while the run goes on: "for 20s" alone).
 */
export function settingsOf(run: RunReport['run'], sections: readonly SentFields[]): string[] {
  const config: Partial<RunReport['run']['config']> = run.config ?? {};
  const settings = [
    runImagesPhrase(runImages(run, sections), formatSize(run.imageSizeBytes)),
    `window ${run.window}`,
    `repeat ${run.repeat}`,
    `warm-up ${describeWarmup(run.warmup as WarmupPlan)}`,
    isNumber(config.ratePerSecond) ? `RATE ${config.ratePerSecond}/s` : 'closed loop',
  ];
  if (isNumber(config.clients) && config.clients > 1) settings.push(`${config.clients} clients`);
  if (isNumber(run.receivers) && run.receivers > 1) settings.push(`${run.receivers} receivers`);
  if (config.verify === false) settings.push('VERIFY=false');
  return settings;
}

/** The sections' fields runImages reads, from a file's: a section without them is left out. */
function sentFieldsOf(sections: readonly unknown[]): SentFields[] {
  return sections.flatMap((s) => {
    const { transport, label, imageCount } = (typeof s === 'object' && s !== null ? s : {}) as Partial<SentFields>;
    return typeof transport === 'string' && isNumber(imageCount)
      ? [{ transport, label: typeof label === 'string' ? label : transport, imageCount }]
      : [];
  });
}

/** Every image intact, or the counts lost and corrupt, the first failure and why the run stopped. */
function verdictOf(report: RunReport): { ok: boolean; text: string } {
  if (runSucceeded(report)) return { ok: true, text: 'every image intact' };
  const lost = report.transports.reduce((n, t) => n + (isNumber(t.lostCount) ? t.lostCount : 0), 0);
  const corrupt = report.transports.reduce((n, t) => n + (isNumber(t.corruptCount) ? t.corruptCount : 0), 0);
  const failure = report.transports.find((t) => typeof t.failure === 'string')?.failure;
  const parts = [
    `${lost.toLocaleString('en-US')} lost, ${corrupt.toLocaleString('en-US')} corrupt`,
    ...(failure === undefined ? [] : [failure]),
    ...(typeof report.stopReason === 'string' && report.stopReason !== '' ? [report.stopReason] : []),
    ...(report.sections.length === 0 ? ['no section ran'] : []),
  ];
  return { ok: false, text: `FAILED: ${parts.join('; ')}` };
}

function transportHeadline(report: RunReport, summary: RunReport['transports'][number]): TransportHeadline {
  const median = summary.medianSection === null ? undefined : report.sections[summary.medianSection];
  const label = typeof summary.label === 'string' ? summary.label : String(summary.transport);
  return {
    transport: String(summary.transport),
    title: sectionTitle({ label, baseline: summary.baseline === true }),
    throughputMBps: isNumber(median?.throughputMBps) ? median.throughputMBps : null,
    indicative: summary.throughputIndicative !== false,
    ok: summary.ok === true,
  };
}

/**
 * The headline of the run in `folder` from what reading its results.json gave: its state, start,
 * settings, verdict and each transport's MB/s; a file that is not a usable results.json gives an
 * "unreadable" line saying why. Never throws.
 */
export function headlineOf(folder: string, read: ReadOutcome, context: HeadlineContext): RunHeadline {
  if (!read.ok) return unreadable(folder, read.problem);
  const shapeProblem = resultsShapeProblem(read.value);
  if (shapeProblem !== null) return unreadable(folder, shapeProblem);
  const report = read.value as RunReport;
  const missing = missingRunFields(report.run as unknown as Record<string, unknown>);
  if (missing.length > 0) return unreadable(folder, `partial: run.${missing.join(', run.')} missing`);
  if (report.transports.some((t) => typeof t !== 'object' || t === null))
    return unreadable(folder, 'partial: a transport summary is not an object');
  try {
    const unended = report.stopReason === context.unendedStopReason;
    const state: RunState = !unended ? 'finished' : folder === context.openFolder ? 'in-progress' : 'not-ended';
    return {
      folder,
      state,
      problem: null,
      startedAt: report.run.startedAt,
      settings: settingsOf(report.run, unended ? [] : sentFieldsOf(report.sections)),
      transports: report.transports.map((summary) => transportHeadline(report, summary)),
      verdict: unended ? null : verdictOf(report),
    };
  } catch (err) {
    return unreadable(folder, `partial: ${err instanceof Error ? err.message : String(err)}`);
  }
}
