import type { ClockOffset } from '../model/clock.js';
import type { PublicConfig } from '../config/config.js';
import type { SideCost } from '../model/cost.js';
import {
  COMPARABLE_RUN_IMAGES,
  MIN_STABLE_IMAGES,
  MIN_STABLE_SPAN_MS,
  OVERLOAD_RATE_SHARE,
  type ClientFairness,
  type ColdStart,
  type FanOut,
  type ImageRecord,
  type OpenLoopFigures,
  type SectionPlan,
  type SectionResult,
} from '../model/section.js';
import { formatDurationMs } from '../config/duration.js';
import { formatSize } from '../config/size.js';
import { medianOf, MIN_SAMPLES_FOR, rangeOf, type LatencySummary, type Range } from '../model/stats.js';
import { describeWarmup, describeWarmupOutcome, type WarmupPlan } from '../model/warmup.js';

// One report object per run, rendered several ways: output.log text, the summary tables printed
// at the end, and results.json. Renderers are pure functions of the report.

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

/** The timing definitions, printed in output.log's header exactly as measured. */
export const TIMING_DEFINITIONS = [
  'WINDOW = the number of images stamped and not yet acknowledged. An image is stamped when the window admits ' +
    'it; any wait for library or kernel backpressure is inside its time.',
  'Transmission time of image i = receiver monotonic clock when the last byte of image i is in hand − ' +
    'transmitter monotonic clock when image i was stamped.',
  'Round trip of image i = transmitter monotonic clock when the ack of image i is processed − when image i was ' +
    'stamped.',
  'Across two kernels (two hosts, two clocks), stamps are moved onto the receiver clock by the offset estimated ' +
    'before each section: every one-way time then reads ± x ms, the bound on its clock error (the uncertainty of ' +
    'the offset, widened by its drift until the end of the section), and the round trip beside it, on the ' +
    'transmitter clock alone, is the clock-free figure.',
  `RATE (open loop) = image i of a section is due at its start + i ÷ RATE, whatever the acks do; one due while ` +
    `WINDOW are unacknowledged waits for a slot and goes late. Figures from due time add the stamp − due time of ` +
    `each image, that wait included: coordinated omission corrected, as wrk2 does. A section is OVERLOADED when ` +
    `its images went out or arrived at under ${OVERLOAD_RATE_SHARE * 100} % of RATE; its MB/s is the load it ` +
    `delivered, not a capacity.`,
  'Total transfer time of a transport = arrival of its last image − stamp of its first (warm-up images excluded).',
  'The receiver acknowledges an image as soon as it is in hand and hashes it afterwards, on the same thread: no ' +
    'image waits for its own hash, but bytes that arrive during a hash are stamped after it, so when the receiver ' +
    'is busy (a full window) one-way times, round trips and MB/s include waiting behind the hashing of earlier ' +
    'images. Each section gives the share of the receiver thread busy time spent hashing; VERIFY=false measures ' +
    'without it.',
  'Cold start = a new connection: the time its connect took, and the first image sent on it (one-way and round ' +
    'trip), before any warm-up; apart from the steady figures.',
  `MB/s marked ~ is indicative: one section cannot say how far its MB/s moves from run to run ` +
    `(docs/measurement.md, Warm-up and sample size: how far it moved here), so the MB/s of a summary is unmarked ` +
    `only when REPEAT gave at least ${MIN_STABLE_REPEATS} completed repeats within ±${STABLE_SPREAD_SHARE * 100} % ` +
    `of their median; a section under ${MIN_STABLE_IMAGES} images or ${MIN_STABLE_SPAN_MS} ms is marked whatever ` +
    `the repeats.`,
] as const;

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

/** "Node v20.20.2", with the flags the process ran with after it ("Node v20.20.2 --no-concurrent-marking"). */
export function nodeDescription(host: Pick<HostFacts, 'nodeVersion' | 'nodeFlags'>): string {
  return ['Node', host.nodeVersion, ...(host.nodeFlags ?? [])].join(' ');
}

/** Facts about a run that do not depend on any transport. */
export interface RunInfo {
  startedAt: string;
  imageDescription: string;
  imageSizeBytes: number;
  imageCount: number;
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

/** A run's report from its facts and sections: the one builder both services use. */
export function buildRunReport(
  run: RunInfo,
  sections: readonly SectionResult[],
  stopReason: string | null,
  finishedAt: Date = new Date(),
): RunReport {
  return {
    schemaVersion: RESULTS_SCHEMA_VERSION,
    run,
    finishedAt: finishedAt.toISOString(),
    stopReason,
    sections: [...sections],
    transports: summarizeTransports(sections, run.transports),
  };
}

const ms = (value: number | null | undefined): string =>
  value === null || value === undefined ? '-' : value.toFixed(3);
const fixed = (value: number | null | undefined, digits: number): string =>
  value === null || value === undefined ? '-' : value.toFixed(digits);
const mib = (bytes: number | undefined): string => (bytes === undefined ? '-' : (bytes / 1024 / 1024).toFixed(1));
const percent = (share: number | undefined): string => (share === undefined ? '-' : `${(share * 100).toFixed(0)}%`);
const range = (r: Range | null, digits: number): string =>
  r === null ? '-' : `${r.min.toFixed(digits)}–${r.max.toFixed(digits)}`;
const signedMs = (ns: number): string => {
  const magnitude = (Math.abs(ns) / 1e6).toFixed(3);
  return magnitude === '0.000' ? magnitude : `${ns > 0 ? '+' : '−'}${magnitude}`;
};

/** Title of a section: its label, "(baseline)" for the floor the others are compared against. */
export function sectionTitle(section: Pick<SectionResult, 'label' | 'baseline'>): string {
  return section.baseline ? `${section.label} (baseline)` : section.label;
}

/** True when every section of the run delivered every image intact. */
export function runSucceeded(report: Pick<RunReport, 'sections'> & Partial<Pick<RunReport, 'stopReason'>>): boolean {
  return !report.stopReason && report.sections.length > 0 && report.sections.every((s) => s.ok);
}

/** Renders rows as a text table: first column left-aligned, numbers right-aligned, last column free text. */
export function renderTable(header: readonly string[], rows: readonly string[][], freeLastColumn = true): string {
  const widths = header.map((h, col) => Math.max(h.length, ...rows.map((r) => r[col]!.length)));
  const last = header.length - 1;
  const format = (cells: readonly string[]): string =>
    cells
      .map((cell, col) =>
        col === last && freeLastColumn ? cell : col === 0 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!),
      )
      .join('  ')
      .trimEnd();
  const rule = widths.map((w, col) => '-'.repeat(col === last && freeLastColumn ? header[col]!.length : w));
  return [format(header), format(rule), ...rows.map(format)].join('\n');
}

/**
 * What hashing took from the receiver's one thread, the one that stamps arrivals: it runs after
 * each ack, but a stamp can still wait behind it (verifier.ts), so the line says by how much.
 */
function verificationText(section: SectionResult): string {
  const share =
    section.verifyBusyShare == null
      ? ''
      : `: ${percent(section.verifyBusyShare)} of its busy time in the span, which images queued behind it wait ` +
        `for when the window is full`;
  const longest =
    section.verifyLongestRunMs == null ? '' : ` (longest run ${section.verifyLongestRunMs.toFixed(3)} ms)`;
  return (
    `${(section.verifyMs ?? 0).toFixed(1)} ms hashing the recorded images, each after its ack, on the receiver ` +
    `thread that stamps arrivals${share}; ` +
    `bytes that arrive during a hash are stamped after it${longest}; VERIFY=false measures without`
  );
}

function costLine(side: string, cost: SideCost | null): string {
  if (cost === null) return `${side}: not measured`;
  const loop = cost.eventLoopUtilization === null ? '' : `, event loop ${percent(cost.eventLoopUtilization)} busy`;
  const memory =
    cost.eventLoopUtilization === null
      ? `RSS ${mib(cost.peakRssBytes)} MiB (larger of its two readings)`
      : `peak RSS ${mib(cost.peakRssBytes)} MiB`;
  return (
    `${side}: CPU ${cost.cpuMs.toFixed(1)} ms (user ${cost.cpuUserMs.toFixed(1)}, ` +
    `system ${cost.cpuSystemMs.toFixed(1)}), ${cost.cpuMsPerImage.toFixed(3)} ms/image, ${memory}${loop}`
  );
}

/** "p50 …, p90 …, p99 …, p99.9 …, max …, mean … ± … ms" of a distribution. */
function distributionLine(l: LatencySummary): string {
  const withheld = percentileWithheld(l)
    ? `; ${l.count} time${l.count === 1 ? '' : 's'}, too few for the percentiles shown as -`
    : '';
  return (
    `p50 ${ms(l.p50Ms)}, p90 ${ms(l.p90Ms)}, p99 ${ms(l.p99Ms)}, p99.9 ${ms(l.p999Ms)}, max ${ms(l.maxMs)}, ` +
    `mean ${ms(l.meanMs)} ± ${ms(l.stdDevMs)} ms (sample sd)${withheld}`
  );
}

/** "12.3 MB/s, 45.6 images/s", marked indicative (~) when the recorded span is too short for a stable figure. */
function throughputText(section: SectionResult): string {
  const figures = `${fixed(section.throughputMBps, 1)} MB/s, ${fixed(section.imagesPerSecond, 1)} images/s`;
  if (!section.throughputIndicative) return figures;
  return (
    `~${figures} (indicative: ${section.okCount} image${section.okCount === 1 ? '' : 's'} ` +
    `over ${ms(section.totalMs)} ms; under ${MIN_STABLE_IMAGES} images or ${MIN_STABLE_SPAN_MS} ms a section's ` +
    `MB/s is indicative whatever its repeats: raise IMAGE_COUNT)`
  );
}

/** "10 clients, each its own window: 17–23 images each, slowest 12.3 MB/s, …". */
function fairnessText(f: ClientFairness): string {
  return (
    `${f.clients} connections, each with its own window: ${f.fewestImages}–${f.mostImages} images each; ` +
    `slowest ${fixed(f.slowestMBps, 1)} MB/s, fastest ${fixed(f.fastestMBps, 1)} MB/s (each over its own first ` +
    `stamp to last ack); Jain's fairness index ${fixed(f.jainIndex, 3)} (1 = all served alike)`
  );
}

/** "3, a copy each: aggregate of 60 intact, p50 …, p99 …; receiver 1: 20 intact, p50 …, … MB/s; …". */
function fanOutText(f: FanOut): string {
  const { aggregate: a } = f;
  const receivers = f.perReceiver.map(
    (r) =>
      `receiver ${r.receiver + 1}: ${r.ok ? '' : 'FAILED, '}${r.okCount} intact` +
      (r.lostCount > 0 ? `, ${r.lostCount} lost` : '') +
      (r.corruptCount > 0 ? `, ${r.corruptCount} corrupt` : '') +
      `, p50 ${ms(r.latency?.p50Ms)}, p99 ${ms(r.latency?.p99Ms)} ms${clockErrorText(r)}` +
      `, ${fixed(r.throughputMBps, 1)} MB/s`,
  );
  const how = f.mode === 'copies' ? 'a copy each' : 'one send reaching all';
  return (
    `${f.perReceiver.length}, ${how}: aggregate of ${a.okCount} intact` +
    (a.lostCount > 0 ? `, ${a.lostCount} lost` : '') +
    (a.corruptCount > 0 ? `, ${a.corruptCount} corrupt` : '') +
    `, p50 ${ms(a.latency?.p50Ms)}, p99 ${ms(a.latency?.p99Ms)} ms` +
    (a.oneWayClockErrorMs == null ? '' : ` ± up to ${ms(a.oneWayClockErrorMs)} ms`) +
    `, RTT p50 ${ms(a.rtt?.p50Ms)} ms; ${receivers.join('; ')}`
  );
}

/** "100 images/s", with up to 3 decimals for fractional rates. */
function rateText(ratePerSecond: number): string {
  return `${Number(ratePerSecond.toFixed(3)).toLocaleString('en-US')} images/s`;
}

/** "RATE 100 images/s offered, sent at 99.9 and delivered at 99.9 images/s: kept up" (or OVERLOADED). */
function openLoopText(open: OpenLoopFigures): string {
  const rates =
    `RATE ${rateText(open.ratePerSecond)} offered, sent at ${fixed(open.achievedRatePerSecond, 1)} and delivered at ` +
    fixed(open.deliveredRatePerSecond, 1) +
    ` images/s`;
  return open.overloaded
    ? `${rates}: OVERLOADED (under ${OVERLOAD_RATE_SHARE * 100} % of RATE; images waited for a window slot and ` +
        `went late: see the send lag and the times from due)`
    : `${rates}: kept up`;
}

/** "15.8 of 16 images in flight on average …": the window's occupancy by Little's law, and what it does not show. */
function windowText(section: Pick<SectionResult, 'littleRatio' | 'meanInFlight' | 'clients' | 'window'>): string {
  const capacity = section.clients * section.window;
  const inFlight = section.meanInFlight ?? (section.littleRatio ?? 0) * capacity;
  const of = section.clients > 1 ? `CLIENTS × WINDOW = ${capacity}` : `WINDOW = ${capacity}`;
  return (
    `${inFlight.toFixed(2)} images in flight on average of ${of} (` +
    (100 * (section.littleRatio ?? 0)).toFixed(1) +
    ` % full, by Little's law from the round trips; it shows the window stayed full, not that the times are right)`
  );
}

/** " ± 0.150 ms" after a one-way time that crossed two clocks; '' on one clock. */
function clockErrorText(section: Pick<SectionResult, 'oneWayClockErrorMs'>): string {
  return section.oneWayClockErrorMs == null ? '' : ` ± ${ms(section.oneWayClockErrorMs)} ms`;
}

function coldStartText(cold: ColdStart, clockError = ''): string {
  return (
    `connect ${ms(cold.connectMs)} ms, first image ${ms(cold.firstImageMs)} ms${clockError} ` +
    `one-way, ${ms(cold.firstImageRttMs)} ms round trip`
  );
}

/** output.log's heading of a section, written when it opens. */
export function renderSectionHeading(plan: SectionPlan, repeats: number): string {
  const repeatNote = repeats > 1 ? `, repeat ${plan.repeat}/${repeats}` : '';
  const what =
    plan.durationMs == null ? `${plan.imageCount} images transfer` : `images for ${formatDurationMs(plan.durationMs)}`;
  return (
    `=== ${sectionTitle(plan)} performance test: ${what} (${formatSize(plan.imageSizeBytes)} each, ` +
    `window ${plan.window}` +
    (plan.clients > 1 ? `, ${plan.clients} clients` : '') +
    (plan.ratePerSecond === null ? '' : `, RATE ${rateText(plan.ratePerSecond)}`) +
    `${repeatNote}) ===`
  );
}

/**
 * output.log's line for one recorded image, written as it arrives (in arrival order). Across two
 * clocks (`twoClocks`) its one-way time carries the section's error bound, given below its lines.
 */
export function renderImageLine(
  image: number,
  oneWayNs: number | null,
  status: ImageRecord['status'],
  twoClocks: boolean,
): string {
  if (oneWayNs === null) return `Image ${image}: LOST (never arrived)`;
  const beside = twoClocks ? ' (two clocks: ± the bound below)' : '';
  return status === 'corrupt'
    ? `Image ${image} transmission time: ${msOfNs(oneWayNs)} ms${beside} (CORRUPT: checksum or size mismatch)`
    : `Image ${image} transmission time: ${msOfNs(oneWayNs)} ms${beside}`;
}

/**
 * Whole nanoseconds as ms with three decimals (rounded to the µs, half away from zero), in
 * integer arithmetic: it runs for every image as it arrives, at less than half toFixed's cost.
 */
export function msOfNs(ns: number): string {
  const us = Math.round(Math.abs(ns) / 1000);
  const fraction = us % 1000;
  return (
    `${ns < 0 && us > 0 ? '-' : ''}${(us - fraction) / 1000}.` +
    (fraction < 10 ? '00' : fraction < 100 ? '0' : '') +
    `${fraction}`
  );
}

/** output.log's lines of a section after its images: its figures, written when it ends. */
export function renderSectionFooter(section: SectionResult): string {
  const lines: string[] = [];
  const clockError = clockErrorText(section);
  if (section.imagesFile !== null) lines.push(`Per-image records: ${section.imagesFile}`);
  lines.push(
    section.totalMs === null
      ? 'Total transfer time: - (no image arrived)'
      : `Total transfer time: ${ms(section.totalMs)} ms`,
  );
  if (section.latency !== null) {
    lines.push(
      `Latency` +
        (clockError === '' ? '' : ` (one-way across two clocks: each figure${clockError})`) +
        `: ${distributionLine(section.latency)}`,
    );
    lines.push(
      `Throughput` +
        (section.openLoop === null ? '' : ' (delivered at the offered RATE: the load, not a capacity)') +
        `: ${throughputText(section)}`,
    );
  }
  if (section.rtt !== null) {
    lines.push(`Round trip${clockError === '' ? '' : ' (one clock: no offset)'}: ${distributionLine(section.rtt)}`);
    if (section.littleRatio !== null) lines.push(`Window: ${windowText(section)}`);
  }
  if (section.clientFairness !== null) lines.push(`Clients: ${fairnessText(section.clientFairness)}`);
  if (section.fanOut !== null) lines.push(`Receivers: ${fanOutText(section.fanOut)}`);
  const open = section.openLoop;
  if (open !== null) {
    lines.push(`Open loop: ${openLoopText(open)}`);
    if (open.sendLag !== null) lines.push(`Send lag (stamp − due): ${distributionLine(open.sendLag)}`);
    if (open.latencyFromDue !== null)
      lines.push(
        `Latency from due time` +
          (clockError === '' ? '' : ` (across two clocks: each figure${clockError})`) +
          `: ${distributionLine(open.latencyFromDue)}`,
      );
    if (open.rttFromDue !== null) lines.push(`Round trip from due time: ${distributionLine(open.rttFromDue)}`);
  }
  lines.push(`Warm-up: ${describeWarmupOutcome(section.warmedUp)}`);
  lines.push(`Cold start (new connection, before the warm-up): ${coldStartText(section.coldStart, clockError)}`);
  lines.push(`Cost, ${costLine('transmitter', section.cost.transmitter)}`);
  lines.push(`Cost, ${costLine('receiver', section.cost.receiver)}`);
  if (section.cost.broker !== null) lines.push(`Cost, ${costLine('broker', section.cost.broker)}`);
  if (section.verifyMs !== null) lines.push(`Verification: ${verificationText(section)}`);
  const anomalies = [
    section.duplicateCount > 0 ? `${section.duplicateCount} duplicate frames` : '',
    section.outOfOrderCount > 0
      ? `${section.outOfOrderCount} arrived out of order` +
        (section.clients > 1 ? ` (interleaved across ${section.clients} clients: expected)` : '')
      : '',
    section.strayCount > 0 ? `${section.strayCount} stray frames` : '',
  ].filter(Boolean);
  if (anomalies.length > 0) lines.push(`Anomalies: ${anomalies.join(', ')}`);
  lines.push(`Clock: ${clockText(section)}`);
  if (section.failure !== null) lines.push(`FAILED: ${section.failure}`);
  return lines.join('\n');
}

/** Below the tables where a MB/s shows ~. */
const INDICATIVE_NOTE =
  `~ indicative: fewer than ${MIN_STABLE_REPEATS} completed repeats, or their MB/s beyond ` +
  `±${STABLE_SPREAD_SHARE * 100} % of the median (or a section under ${MIN_STABLE_IMAGES} images ` +
  `or ${MIN_STABLE_SPAN_MS} ms): run with REPEAT=${MIN_STABLE_REPEATS} or more for a figure its repeats vouch ` +
  `for.`;

/** Below the tables where a percentile shows '-' for want of images. */
const TOO_FEW_NOTE =
  `p90, p99 and p99.9 show - below ${MIN_SAMPLES_FOR.p90}, ${MIN_SAMPLES_FOR.p99} and ` +
  MIN_SAMPLES_FOR.p999.toLocaleString('en-US') +
  ` images: with fewer, the percentile is the max itself; raise IMAGE_COUNT.`;

/** Below the tables when a section's percentiles come from a short run. */
export const SHORT_RUN_NOTE =
  `Short run: fewer than ` +
  COMPARABLE_RUN_IMAGES.toLocaleString('en-US') +
  ` images per section, so even the p50 is not comparable with another run's: from one process pair to the next ` +
  `it moves by more than transports differ (docs/measurement.md, Warm-up and sample size). Compare runs of ` +
  `IMAGE_COUNT=${COMPARABLE_RUN_IMAGES} or more with REPEAT=${MIN_STABLE_REPEATS}.`;

/** True when a transport's figures come from a section too short to compare (see SHORT_RUN_NOTE). */
export function shortRun(section: Pick<SectionResult, 'imageCount'> | undefined): boolean {
  return section !== undefined && section.imageCount < COMPARABLE_RUN_IMAGES;
}

/** True when the distribution has times but too few for one of its percentiles. */
function percentileWithheld(l: LatencySummary | null): boolean {
  return l !== null && (l.p90Ms === null || l.p99Ms === null || l.p999Ms === null);
}

/** Sections of `transport` that were OVERLOADED under RATE. */
function overloadedRepeats(sections: readonly SectionResult[], transport: string): number {
  return sections.filter((s) => s.transport === transport && s.openLoop?.overloaded === true).length;
}

/**
 * The Result cell: ok (with any warm-up not steady, any repeat OVERLOADED under RATE), or FAILED with the first
 * failure.
 */
function resultText(t: TransportSummary, overloaded: number): string {
  if (!t.ok) return `FAILED${t.failure ? `: ${t.failure}` : ''}`;
  const notes = [
    t.notSteadyRepeats > 0 ? `warm-up NOT STEADY in ${t.notSteadyRepeats} of ${t.repeats}` : '',
    overloaded > 0
      ? `OVERLOADED at RATE${t.repeats > 1 ? ` in ${overloaded} of ${t.repeats}` : ''} (see Open loop)`
      : '',
  ].filter(Boolean);
  return ['ok', ...notes].join(', ');
}

/** The summary tables: latency, round trip and throughput per transport, cost per side, and spread across repeats. */
export function renderSummary(report: Pick<RunReport, 'sections' | 'transports'>): string {
  const median = (t: TransportSummary): SectionResult | undefined =>
    t.medianSection === null ? undefined : report.sections[t.medianSection];
  // Across two clocks: a column with each transport's bound on its one-way figures' clock error.
  const twoClocks = report.transports.some((t) => median(t)?.oneWayClockErrorMs != null);
  const latencyRows = report.transports.map((t) => {
    const s = median(t);
    const l = s?.latency ?? null;
    return [
      sectionTitle(t),
      String(t.okCount),
      String(t.lostCount),
      String(t.corruptCount),
      ms(l?.p50Ms),
      ms(l?.p90Ms),
      ms(l?.p99Ms),
      ms(l?.p999Ms),
      ms(l?.maxMs),
      l === null ? '-' : `${ms(l.meanMs)} ± ${ms(l.stdDevMs)}`,
      ...(twoClocks ? [s?.oneWayClockErrorMs == null ? '-' : `± ${ms(s.oneWayClockErrorMs)}`] : []),
      ms(s?.rtt?.p50Ms),
      ms(s?.rtt?.p99Ms),
      ms(s?.totalMs),
      `${s !== undefined && t.throughputIndicative ? '~' : ''}${fixed(s?.throughputMBps, 1)}`,
      `${s !== undefined && t.throughputIndicative ? '~' : ''}${fixed(s?.imagesPerSecond, 1)}`,
      resultText(t, overloadedRepeats(report.sections, t.transport)),
    ];
  });
  const coldRows = report.transports.map((t) => [
    sectionTitle(t),
    ms(t.coldStart.connectMs),
    ms(t.coldStart.firstImageMs),
    ms(t.coldStart.firstImageRttMs),
  ]);
  const indicative = report.transports.some((t) => median(t) !== undefined && t.throughputIndicative);
  const withBroker = report.transports.some((t) => median(t)?.cost.broker);
  const costRows = report.transports.map((t) => {
    const c = median(t)?.cost;
    const tx = c?.transmitter ?? undefined;
    const rx = c?.receiver ?? undefined;
    const broker = c?.broker ?? undefined;
    return [
      sectionTitle(t),
      fixed(tx?.cpuMsPerImage, 3),
      fixed(rx?.cpuMsPerImage, 3),
      ...(withBroker ? [fixed(broker?.cpuMsPerImage, 3)] : []),
      fixed(tx?.cpuMs, 1),
      fixed(rx?.cpuMs, 1),
      mib(tx?.peakRssBytes),
      mib(rx?.peakRssBytes),
      percent(tx?.eventLoopUtilization ?? undefined),
      percent(rx?.eventLoopUtilization ?? undefined),
    ];
  });
  const repeats = Math.max(0, ...report.transports.map((t) => t.repeats));
  // A figure of the median section, else of the transport's first (a failed one has no median).
  const figureOf = <K extends 'openLoop' | 'clientFairness' | 'fanOut'>(
    t: TransportSummary,
    key: K,
  ): SectionResult[K] | undefined =>
    median(t)?.[key] ?? report.sections.find((s) => s.transport === t.transport)?.[key];
  const openRows = report.transports.flatMap((t) => {
    const open = figureOf(t, 'openLoop');
    if (!open) return [];
    const load = open.overloaded ? 'OVERLOADED' : 'kept up';
    return [
      [
        sectionTitle(t),
        fixed(open.ratePerSecond, 1),
        fixed(open.achievedRatePerSecond, 1),
        fixed(open.deliveredRatePerSecond, 1),
        ms(open.sendLag?.p99Ms),
        ms(open.latencyFromDue?.p50Ms),
        ms(open.latencyFromDue?.p99Ms),
        ms(open.rttFromDue?.p50Ms),
        ms(open.rttFromDue?.p99Ms),
        load,
      ],
    ];
  });
  const openLoop = openRows.length > 0;
  const tooFew = report.transports.some(
    (t) => percentileWithheld(median(t)?.latency ?? null) || percentileWithheld(median(t)?.rtt ?? null),
  );
  const short = report.transports.some((t) => shortRun(median(t)));
  const blocks = [
    `Times in ms; one-way: p50 … mean ± sample sd` +
      (twoClocks ? ", across two clocks: each within clock ± of the truth (the offset's bound)" : '') +
      (`; RTT: round trip, stamp → ack processed${twoClocks ? ', on one clock (no offset)' : ''}:\n${renderTable(
        [
          'Transport',
          'OK',
          'Lost',
          'Corrupt',
          'p50 ms',
          'p90 ms',
          'p99 ms',
          'p99.9 ms',
          'max ms',
          'mean ± sd ms',
          ...(twoClocks ? ['clock ± ms'] : []),
          'RTT p50',
          'RTT p99',
          'Total ms',
          ...(openLoop ? ['MB/s at RATE', 'images/s at RATE'] : ['MB/s', 'images/s']),
          'Result',
        ],
        latencyRows,
      )}${tooFew ? `\n${TOO_FEW_NOTE}` : ''}${short ? `\n${SHORT_RUN_NOTE}` : ''}` +
        (indicative ? `\n${INDICATIVE_NOTE}` : '') +
        (openLoop
          ? '\nAt RATE: MB/s and images/s are what was delivered at the offered load (RATE × size when it kept up), ' +
            "not the transport's capacity: the closed loop measures that."
          : '')),
    `Cold start, a new connection before its warm-up (median of the repeats; not part of the figures above):\n` +
      renderTable(['Transport', 'connect ms', 'first image ms', 'first image RTT ms'], coldRows, false),
    `Cost per side (TX transmitter, RX receiver` +
      (withBroker ? ', broker: the server the transport goes through, from its own counters' : '') +
      `; CPU = user + system from the first recorded image to the last ack):\n${renderTable(
        [
          'Transport',
          'TX CPU ms/img',
          'RX CPU ms/img',
          ...(withBroker ? ['Broker CPU ms/img'] : []),
          'TX CPU ms',
          'RX CPU ms',
          'TX peak RSS MiB',
          'RX peak RSS MiB',
          'TX loop busy',
          'RX loop busy',
        ],
        costRows,
        false,
      )}`,
  ];
  const fairnessRows = report.transports.flatMap((t) => {
    const f = figureOf(t, 'clientFairness');
    if (!f) return [];
    return [
      [
        sectionTitle(t),
        String(f.clients),
        `${f.fewestImages}–${f.mostImages}`,
        fixed(f.slowestMBps, 1),
        fixed(f.fastestMBps, 1),
        fixed(f.jainIndex, 3),
      ],
    ];
  });
  // Receivers on other kernels than the transmitter's: each one's clock error bound, "all" the largest.
  const fanOutClocks = report.transports.some((t) => figureOf(t, 'fanOut')?.aggregate.oneWayClockErrorMs != null);
  const fanOutRows = report.transports.flatMap((t) => {
    const f = figureOf(t, 'fanOut');
    if (!f) return [];
    const row = (
      who: string,
      figures: {
        okCount: number;
        lostCount: number;
        latency: LatencySummary | null;
        oneWayClockErrorMs?: number | null;
      },
      mbps: string,
    ): string[] => [
      sectionTitle(t),
      who,
      String(figures.okCount),
      String(figures.lostCount),
      ms(figures.latency?.p50Ms),
      ms(figures.latency?.p99Ms),
      ...(fanOutClocks ? [figures.oneWayClockErrorMs == null ? '-' : `± ${ms(figures.oneWayClockErrorMs)}`] : []),
      mbps,
    ];
    return [
      row(`all (${f.mode === 'copies' ? 'copies' : 'one send'})`, f.aggregate, '-'),
      ...f.perReceiver.map((r) => row(String(r.receiver + 1), r, fixed(r.throughputMBps, 1))),
    ];
  });
  if (fanOutRows.length > 0) {
    blocks.push(
      `Receivers (every image to each; "all": every receiver's images as one distribution` +
        (fanOutClocks
          ? '; clock ±: the one-way clock error bound of a receiver on another kernel, "all" the largest'
          : '') +
        `):\n` +
        renderTable(
          ['Transport', 'receiver', 'OK', 'Lost', 'p50 ms', 'p99 ms', ...(fanOutClocks ? ['clock ± ms'] : []), 'MB/s'],
          fanOutRows,
          false,
        ),
    );
  }
  if (fairnessRows.length > 0) {
    blocks.push(
      `Clients (CLIENTS connections, each with its own window; each client's MB/s over its own first stamp to last ` +
        `ack; Jain's index 1 = all served alike):\n${renderTable(
          ['Transport', 'clients', 'images each', 'slowest MB/s', 'fastest MB/s', 'Jain'],
          fairnessRows,
          false,
        )}`,
    );
  }
  if (openRows.length > 0) {
    blocks.push(
      `Open loop (RATE offered; sent/s and delivered/s achieved; "from due": counted from each image's due time, a ` +
        `wait for a window slot included: coordinated omission corrected; OVERLOADED: sent or delivered ` +
        `under ${OVERLOAD_RATE_SHARE * 100} % of RATE):\n${renderTable(
          [
            'Transport',
            'RATE/s',
            'sent/s',
            'delivered/s',
            'send lag p99',
            'from due p50',
            'from due p99',
            'RTT from due p50',
            'RTT from due p99',
            'Load',
          ],
          openRows,
        )}`,
    );
  }
  if (repeats > 1) {
    const spreadRows = report.transports.map((t) => [
      sectionTitle(t),
      `${t.completedRepeats}/${t.repeats}`,
      range(t.spread.throughputMBps, 1),
      range(t.spread.p50Ms, 3),
      range(t.spread.p99Ms, 3),
      range(t.spread.rttP50Ms, 3),
      range(t.spread.totalMs, 3),
    ]);
    blocks[0] =
      `Median of the completed repeats (every image intact) per transport, by total transfer time; ` +
      `OK/Lost/Corrupt count every repeat.\n${blocks[0]}`;
    blocks.push(
      `Spread across completed repeats (min–max):\n` +
        renderTable(
          ['Transport', 'Completed', 'MB/s', 'p50 ms', 'p99 ms', 'RTT p50 ms', 'Total ms'],
          spreadRows,
          false,
        ),
    );
  }
  return blocks.join('\n\n');
}

/** Who took part: one transmitter with its clients, one receiver. */
export function peersText(run: Pick<RunInfo, 'config' | 'receivers'>): string {
  const clients = run.config.clients ?? 1;
  const receivers = run.receivers ?? 1;
  return (
    `one transmitter` +
    (clients > 1
      ? ` with ${clients} clients (connections) per transport, each with its own window`
      : ', one connection per transport') +
    `; ${receivers > 1 ? `${receivers} receivers, every image to each` : 'one receiver'}`
  );
}

function hostLine(side: string, host: HostFacts): string {
  return (
    `${side} host: ${host.hostname} (${host.cpuModel}, ${host.cores} cores, ${formatSize(host.totalMemoryBytes)}` +
    `, ${host.platform} ${host.kernel}, ${nodeDescription(host)})`
  );
}

/** A section's clock offset estimates, and whether its one-way times were moved by them. */
function clockText(s: SectionResult): string {
  if (s.clock === null) return 'offset not estimated';
  const offset = (o: ClockOffset): string => `${signedMs(o.offsetNs)} ± ${(o.uncertaintyNs / 1e6).toFixed(3)} ms`;
  const estimates = s.clockAfter ? `${offset(s.clock)} before, ${offset(s.clockAfter)} after` : offset(s.clock);
  const use = s.clock.applied ? `applied: one-way times ± ${ms(s.oneWayClockErrorMs)} ms` : 'same kernel, not applied';
  return `receiver − transmitter ${estimates} (${use})`;
}

/** output.log's header, written when the run starts. */
export function renderOutputLogHeader(run: RunInfo): string {
  const libraries = Object.entries(run.hosts.receiver.libraries)
    .map(([name, version]) => `${name} ${version}`)
    .join(', ');
  return [
    'image-transfer-bench results',
    `Date: ${run.startedAt}`,
    hostLine('Transmitter', run.hosts.transmitter),
    hostLine('Receiver', run.hosts.receiver),
    `Libraries: ${libraries}`,
    `Image: ${run.imageDescription}`,
    run.config.durationMs === undefined
      ? `Images per transport: ${run.imageCount} (${formatSize(run.imageSizeBytes)} each); window ${run.window}; ` +
        `repeat ${run.repeat}`
      : `Each transport sends for ` +
        formatDurationMs(run.config.durationMs) +
        ` (DURATION; ${formatSize(run.imageSizeBytes)} images); window ${run.window}; repeat ${run.repeat}`,
    `Peers: ${peersText(run)}`,
    `Link: ${run.config.link ?? 'not recorded'}`,
    `Send schedule: ` +
      (run.config.ratePerSecond === undefined
        ? 'closed loop (the next image goes as soon as the window has room)'
        : `open loop at RATE ${rateText(run.config.ratePerSecond)} (WINDOW bounds the images in flight; latency ` +
          `also counted from each image's due time)`),
    `Warm-up of each section, on its connection before the recorded images: ${describeWarmup(run.warmup)}`,
    `Transports: ${run.transports.join(', ')}` +
      (run.repeat > 1 ? ' (interleaved, the order rotated each repeat: A B C, B C A, C A B, …)' : ''),
    'Definitions:',
    ...TIMING_DEFINITIONS.map((d) => `  ${d}`),
    ...(run.arrivalNotes.length > 0
      ? ['Arrivals handed over in batches:', ...run.arrivalNotes.map((n) => `  ${n}.`)]
      : []),
    'Times are milliseconds; percentiles come from an HDR histogram (3 significant digits), max, mean and ' +
      'sample sd (n − 1) exact from the times as they came.',
    `A percentile is shown only where the sample supports it: p90 from ${MIN_SAMPLES_FOR.p90} times, p99 ` +
      `from ${MIN_SAMPLES_FOR.p99}, p99.9 from ` +
      MIN_SAMPLES_FOR.p999.toLocaleString('en-US') +
      ` (with fewer, the nearest-rank percentile is the max itself); - otherwise.`,
    'MB/s counts 10^6 bytes of intact images per second of total transfer time.',
    run.config.verify === false
      ? 'Integrity: NOT VERIFIED (VERIFY=false, to measure what verification costs): a corrupt image would count ' +
        'as intact.'
      : 'Integrity: every image verified by the receiver (size and xxHash64 checksum), after its ack, on the ' +
        'thread that stamps arrivals (see Verification in each section).',
    'Per-image lines are written as the images arrive (in arrival order; the lost ones when the section ends); ' +
      "each section's CSV (named below it) holds every image with its round trip.",
    'Clock offset, receiver − transmitter, estimated before each section and again after its last ack (lowest ' +
      'of 8 round trips over the control endpoint; ± half that round trip): in each section.',
  ].join('\n');
}

/** output.log's end: the summary and the verdict, written when the run ends. */
export function renderOutputLogEnd(report: RunReport): string {
  const overloaded = report.sections.filter((s) => s.openLoop?.overloaded === true).length;
  const verdict = runSucceeded(report)
    ? overloaded === 0
      ? 'Result: every transport delivered every image intact.'
      : `Result: every transport delivered every image intact; ${overloaded} ` +
        `section${overloaded === 1 ? ' was' : 's were'} OVERLOADED at RATE (see Open loop): their times from due, ` +
        `not their MB/s, say what the load cost.`
    : report.stopReason
      ? `Result: INCOMPLETE: ${report.stopReason}. Sections not listed above did not run.`
      : 'Result: FAILED: at least one transport lost, corrupted or failed to deliver images (see above).';
  return `=== Summary (finished ${report.finishedAt}) ===\n${renderSummary(report)}\n\n${verdict}\n`;
}

/**
 * output.log of a whole report at once, without per-image lines (the receiver streams those as
 * images arrive): header, each section's heading and figures, the summary.
 */
export function renderOutputLog(report: RunReport): string {
  const repeats = report.run.repeat;
  return [
    renderOutputLogHeader(report.run),
    ...report.sections.map((s) => `${renderSectionHeading(s, repeats)}\n${renderSectionFooter(s)}`),
    renderOutputLogEnd(report),
  ].join('\n\n');
}

/**
 * results.json: the same report, for tools: summaries, distributions and per-second series (the per-image records are
 * in each section's CSV).
 */
export function renderResultsJson(report: RunReport): string {
  return JSON.stringify(report, null, 2) + '\n';
}
