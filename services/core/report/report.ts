import type { PublicConfig } from '../config/config.js';
import { COMPARABLE_RUN_IMAGES, type ColdStart, type SectionResult } from '../model/section.js';
import { medianOf, rangeOf, type LatencySummary, type Range } from '../model/stats.js';
import type { WarmupPlan } from '../model/warmup.js';
import { plannedImageCount } from './images-sent.js';

// One report object per run, rendered several ways: output.log text (text/output-log.ts), the
// summary tables printed at the end (text/summary-tables.ts), results.json (below) and report.html
// (html-report.ts). Renderers are pure functions of the report.

/**
 * Version of results.json's shape (services/core/report/results.schema.json); bump it when a field changes meaning or
 * goes away.
 */
export const RESULTS_SCHEMA_VERSION = 7;

/** Fewest completed repeats whose spread can show a transport's MB/s to be more than indicative. */
export const MIN_STABLE_REPEATS = 3;
/**
 * Widest half-range (max − min) ÷ 2 of the completed repeats' MB/s, as a share of their median,
 * for that median to be shown unmarked (without ~). One section cannot say how far its MB/s would
 * move: five interleaved repeats of the default transports on the 2-core build machine spread by
 * ±17–42 % at 100 images and still ±7–46 % at 1,000, so no image count makes a lone figure stable
 * there; the repeats' own spread is the measure. ±10 % keeps a 20 % gap between two transports
 * from being noise.
 */
export const STABLE_SPREAD_SHARE = 0.1;

/** Facts about one side's machine and software. */
export interface HostFacts {
  hostname: string;
  cpuModel: string;
  cores: number;
  totalMemoryBytes: number;
  platform: string;
  kernel: string;
  nodeVersion: string;
  /**
   * Node and V8 flags the process ran with (process.execArgv): they change what GC and the JIT cost. Absent in files
   * written before it was recorded.
   */
  nodeFlags?: string[];
  /** Kernel boot id: two sides with the same one share one monotonic clock. Null when unknown. */
  bootId: string | null;
  /** Versions of the libraries under test, by package name. */
  libraries: Record<string, string>;
}

/** Facts about a run that do not depend on any transport. */
export interface RunInfo {
  startedAt: string;
  imageDescription: string;
  imageSizeBytes: number;
  /**
   * IMAGE_COUNT: recorded images per section; null under DURATION, where each section's imageCount is what it sent
   * (images-sent.ts). Files written before hold IMAGE_COUNT's unused default there.
   */
  imageCount: number | null;
  window: number;
  warmup: WarmupPlan;
  repeat: number;
  transports: readonly string[];
  /** How some transports' libraries hand over arrivals (several at once), from the transport table. */
  arrivalNotes: readonly string[];
  /** The transmitter's validated configuration. */
  config: PublicConfig;
  /** RECEIVERS: receivers the run sent every image to, and this report's receiver among them (from 0). */
  receivers: number;
  receiverIndex: number;
  hosts: { transmitter: HostFacts; receiver: HostFacts };
}

/** One transport across its repeats: the median section and how much the repeats spread. */
export interface TransportSummary {
  transport: string;
  label: string;
  baseline: boolean;
  /** True when every repeat delivered every image intact. */
  ok: boolean;
  /** The first failure among the repeats, if any. */
  failure: string | null;
  repeats: number;
  /** Repeats that delivered every image intact: the median and the spread are taken over these only. */
  completedRepeats: number;
  /** Index in `sections` of the median completed repeat by total transfer time; null if none completed. */
  medianSection: number | null;
  okCount: number;
  lostCount: number;
  corruptCount: number;
  /** Images written over before they were read (a latest-frame key), across its sections; absent in older files. */
  supersededCount?: number;
  /** Min and max across completed repeats; null when none produced the figure. */
  spread: {
    totalMs: Range | null;
    throughputMBps: Range | null;
    p50Ms: Range | null;
    p99Ms: Range | null;
    rttP50Ms: Range | null;
  };
  /** Median of each cold-start figure across every repeat that produced it. */
  coldStart: ColdStart;
  /** Repeats whose warm-up reached its cap before the round trips were steady. */
  notSteadyRepeats: number;
  /**
   * True unless at least {@link MIN_STABLE_REPEATS} repeats completed, their MB/s lie within
   * ±{@link STABLE_SPREAD_SHARE} of the median's, and the median section's own span was long enough
   * (SectionResult.throughputIndicative): the median MB/s and images/s are then shown as ~.
   */
  throughputIndicative: boolean;
}

/** A whole run: its facts, every section in run order, and one summary per transport. */
export interface RunReport {
  schemaVersion: typeof RESULTS_SCHEMA_VERSION;
  run: RunInfo;
  finishedAt: string;
  /**
   * Why the run ended before the transmitter finished it (transmitter gone, receiver shut down); null when it was
   * finished.
   */
  stopReason: string | null;
  sections: SectionResult[];
  transports: TransportSummary[];
}

/**
 * Groups sections by transport (in the order of `order`): totals across repeats, and over the
 * completed repeats only (every image intact) the median repeat by total transfer time (the lower
 * one of an even count) and the spread, so a failed repeat's partial figures never pass as a result.
 */
export function summarizeTransports(sections: readonly SectionResult[], order: readonly string[]): TransportSummary[] {
  return order.flatMap((transport) => {
    const indexes = sections.flatMap((s, i) => (s.transport === transport ? [i] : []));
    const own = indexes.map((i) => sections[i]!);
    const first = own[0];
    if (first === undefined) return [];
    const completed = indexes
      .filter((i) => sections[i]!.ok && sections[i]!.totalMs !== null)
      .sort((a, b) => sections[a]!.totalMs! - sections[b]!.totalMs!);
    const pick = (f: (s: SectionResult) => number | null | undefined): Range | null => {
      const values = completed.flatMap((i) => {
        const value = f(sections[i]!);
        return value === null || value === undefined ? [] : [value];
      });
      return rangeOf(values) ?? null;
    };
    const medianSection = completed.length > 0 ? completed[Math.floor((completed.length - 1) / 2)]! : null;
    return [
      {
        transport,
        label: first.label,
        baseline: first.baseline,
        ok: own.every((s) => s.ok),
        failure: own.find((s) => s.failure !== null)?.failure ?? null,
        repeats: own.length,
        completedRepeats: completed.length,
        medianSection,
        okCount: own.reduce((n, s) => n + s.okCount, 0),
        lostCount: own.reduce((n, s) => n + s.lostCount, 0),
        corruptCount: own.reduce((n, s) => n + s.corruptCount, 0),
        supersededCount: own.reduce((n, s) => n + (s.supersededCount ?? 0), 0),
        spread: {
          totalMs: pick((s) => s.totalMs),
          throughputMBps: pick((s) => s.throughputMBps),
          p50Ms: pick((s) => s.latency?.p50Ms),
          p99Ms: pick((s) => s.latency?.p99Ms),
          rttP50Ms: pick((s) => s.rtt?.p50Ms),
        },
        coldStart: {
          connectMs: medianOf(own.flatMap((s) => s.coldStart.connectMs ?? [])) ?? null,
          firstImageMs: medianOf(own.flatMap((s) => s.coldStart.firstImageMs ?? [])) ?? null,
          firstImageRttMs: medianOf(own.flatMap((s) => s.coldStart.firstImageRttMs ?? [])) ?? null,
        },
        notSteadyRepeats: own.filter((s) => s.warmedUp?.steady === false).length,
        throughputIndicative: !throughputStable(
          medianSection === null ? undefined : sections[medianSection],
          pick((s) => s.throughputMBps),
          completed.length,
        ),
      },
    ];
  });
}

/** True when the completed repeats show the median section's MB/s to be stable (see {@link STABLE_SPREAD_SHARE}). */
export function throughputStable(
  median: Pick<SectionResult, 'throughputMBps' | 'throughputIndicative'> | undefined,
  spread: Range | null,
  completedRepeats: number,
): boolean {
  if (
    median === undefined ||
    median.throughputIndicative ||
    median.throughputMBps === null ||
    spread === null ||
    completedRepeats < MIN_STABLE_REPEATS
  )
    return false;
  return (spread.max - spread.min) / 2 <= STABLE_SPREAD_SHARE * median.throughputMBps;
}

/**
 * A run's report from its facts and sections: the one builder both services use. Under DURATION its imageCount is
 * null whatever `run` held: there is no count before the sections end (each section's is what it sent).
 */
export function buildRunReport(
  run: RunInfo,
  sections: readonly SectionResult[],
  stopReason: string | null,
  finishedAt: Date = new Date(),
): RunReport {
  return {
    schemaVersion: RESULTS_SCHEMA_VERSION,
    run: { ...run, imageCount: plannedImageCount(run.imageCount, run.config.durationMs) },
    finishedAt: finishedAt.toISOString(),
    stopReason,
    sections: [...sections],
    transports: summarizeTransports(sections, run.transports),
  };
}

/** True when every section of the run delivered every image intact. */
export function runSucceeded(report: Pick<RunReport, 'sections'> & Partial<Pick<RunReport, 'stopReason'>>): boolean {
  return !report.stopReason && report.sections.length > 0 && report.sections.every((s) => s.ok);
}

/** True when a transport's figures come from a section too short to compare (see SHORT_RUN_NOTE). */
export function shortRun(section: Pick<SectionResult, 'imageCount'> | undefined): boolean {
  return section !== undefined && section.imageCount < COMPARABLE_RUN_IMAGES;
}

/** True when the distribution has times but too few for one of its percentiles. */
export function percentileWithheld(l: LatencySummary | null | undefined): boolean {
  return l != null && (l.p90Ms === null || l.p99Ms === null || l.p999Ms === null);
}

/**
 * results.json: the same report, for tools: summaries, distributions and per-second series (the per-image records are
 * in each section's CSV).
 */
export function renderResultsJson(report: RunReport): string {
  return JSON.stringify(report, null, 2) + '\n';
}
