import { MIN_STABLE_IMAGES, MIN_STABLE_SPAN_MS, type SectionResult } from '../../model/section.js';
import { MIN_SAMPLES_FOR } from '../../model/stats.js';
import {
  MIN_STABLE_REPEATS,
  percentileWithheld,
  shortRun,
  STABLE_SPREAD_SHARE,
  type RunReport,
  type TransportSummary,
} from '../report.js';
import { sectionTitle, SHORT_RUN_NOTE } from '../wording.js';
import { fixed, mib, ms, percent, renderTable } from './format.js';
import {
  commandLaneBlock,
  deadlineBlock,
  fairnessBlock,
  fanOutBlock,
  openLoopBlock,
  spreadBlock,
} from './setting-tables.js';
import { summaryFigures, type SummaryFigures } from './summary-figures.js';

// The tables at the end of output.log (and of the services' console): one row per transport. The tables only some
// settings bring are in setting-tables.ts.

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

/** Sections of `transport` that were OVERLOADED under RATE. */
function overloadedRepeats(sections: readonly SectionResult[], transport: string): number {
  return sections.filter((s) => s.transport === transport && s.openLoop?.overloaded === true).length;
}

/** Sections of `transport` whose late and undelivered frames were over DEADLINE_MISS_PERCENT under RATE. */
function missedDeadlineRepeats(sections: readonly SectionResult[], transport: string): number {
  return sections.filter((s) => s.transport === transport && s.openLoop?.deadline?.overDeadline === true).length;
}

/**
 * The Result cell: ok (with any warm-up not steady, any repeat OVERLOADED under RATE), or FAILED with the first
 * failure.
 */
function resultText(t: TransportSummary, overloaded: number, missedDeadline: number): string {
  if (!t.ok) return `FAILED${t.failure ? `: ${t.failure}` : ''}`;
  const notes = [
    t.notSteadyRepeats > 0 ? `warm-up NOT STEADY in ${t.notSteadyRepeats} of ${t.repeats}` : '',
    overloaded > 0
      ? `OVERLOADED at RATE${t.repeats > 1 ? ` in ${overloaded} of ${t.repeats}` : ''} (see Open loop)`
      : '',
    missedDeadline > 0
      ? `MISSED DEADLINE${t.repeats > 1 ? ` in ${missedDeadline} of ${t.repeats}` : ''} (see Deadline and jitter)`
      : '',
  ].filter(Boolean);
  return ['ok', ...notes].join(', ');
}

/** The summary tables: latency, round trip and throughput per transport, cost per side, and spread across repeats. */
export function renderSummary(report: Pick<RunReport, 'sections' | 'transports'>): string {
  const figures = summaryFigures(report);
  const blocks = [latencyBlock(figures), coldStartBlock(figures), costBlock(figures)];
  for (const block of [
    fanOutBlock(figures),
    fairnessBlock(figures),
    openLoopBlock(figures),
    deadlineBlock(figures),
    commandLaneBlock(figures),
  ])
    if (block !== undefined) blocks.push(block);
  const repeats = Math.max(0, ...report.transports.map((t) => t.repeats));
  if (repeats > 1) {
    blocks[0] =
      `Median of the completed repeats (every image intact) per transport, by total transfer time; ` +
      `OK/Lost/Corrupt count every repeat.\n${blocks[0]}`;
    blocks.push(spreadBlock(figures));
  }
  return blocks.join('\n\n');
}

/** Which optional columns the latency table has: each only when some transport has its figure. */
interface LatencyColumns {
  /** Across two clocks: a column with each transport's bound on its one-way figures' clock error. */
  twoClocks: boolean;
  /** A latest-frame key's images written over before they were read: a column of their own, never among the lost. */
  superseding: boolean;
  /** Under RATE the headline is each frame's age from its due time, the time on the link beside it. */
  openLoop: boolean;
}

/** The latency table's rows: one per transport, its median section's figures. */
function latencyRows({ report, median }: SummaryFigures, columns: LatencyColumns): string[][] {
  const { twoClocks, superseding, openLoop } = columns;
  return report.transports.map((t) => {
    const s = median(t);
    const l = (openLoop ? s?.frameAge : s?.latency) ?? null;
    return [
      sectionTitle(t),
      String(t.okCount),
      String(t.lostCount),
      String(t.corruptCount),
      ...(superseding ? [String(t.supersededCount ?? 0)] : []),
      ms(l?.p50Ms),
      ms(l?.p90Ms),
      ms(l?.p99Ms),
      ms(l?.p999Ms),
      ms(l?.maxMs),
      l === null ? '-' : `${ms(l.meanMs)} ± ${ms(l.stdDevMs)}`,
      ...(openLoop ? [ms(s?.latency?.p50Ms), ms(s?.latency?.p99Ms)] : []),
      ...(twoClocks ? [s?.oneWayClockErrorMs == null ? '-' : `± ${ms(s.oneWayClockErrorMs)}`] : []),
      ms(s?.rtt?.p50Ms),
      ms(s?.rtt?.p99Ms),
      ms(s?.totalMs),
      `${s !== undefined && t.throughputIndicative ? '~' : ''}${fixed(s?.throughputMBps, 1)}`,
      `${s !== undefined && t.throughputIndicative ? '~' : ''}${fixed(s?.imagesPerSecond, 1)}`,
      resultText(
        t,
        overloadedRepeats(report.sections, t.transport),
        missedDeadlineRepeats(report.sections, t.transport),
      ),
    ];
  });
}

/** The first table: one-way (or, under RATE, frame age) and round-trip times, counts and throughput, with its notes. */
function latencyBlock(figures: SummaryFigures): string {
  const { report, median } = figures;
  const columns: LatencyColumns = {
    twoClocks: report.transports.some((t) => median(t)?.oneWayClockErrorMs != null),
    superseding: report.transports.some((t) => (t.supersededCount ?? 0) > 0),
    openLoop:
      report.transports.some((t) => median(t)?.openLoop != null) || report.sections.some((s) => s.openLoop !== null),
  };
  const { twoClocks, superseding, openLoop } = columns;
  const indicative = report.transports.some((t) => median(t) !== undefined && t.throughputIndicative);
  const tooFew = report.transports.some(
    (t) =>
      percentileWithheld((openLoop ? median(t)?.frameAge : median(t)?.latency) ?? null) ||
      percentileWithheld(median(t)?.rtt ?? null),
  );
  const short = report.transports.some((t) => shortRun(median(t)));
  return (
    (openLoop
      ? "Times in ms; frame age: each frame's age at arrival counted from its due time, p50 … mean ± sample sd; " +
        'link: one-way from the stamp taken as it was handed to the link'
      : `Times in ms; one-way: p50 … mean ± sample sd`) +
    (twoClocks ? ", across two clocks: each within clock ± of the truth (the offset's bound)" : '') +
    (`; RTT: round trip, stamp → ack processed${twoClocks ? ', on one clock (no offset)' : ''}:\n${renderTable(
      [
        'Transport',
        'OK',
        'Lost',
        'Corrupt',
        ...(superseding ? ['Superseded'] : []),
        ...(openLoop
          ? ['age p50', 'age p90', 'age p99', 'age p99.9', 'age max', 'age mean ± sd', 'link p50', 'link p99']
          : ['p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'mean ± sd ms']),
        ...(twoClocks ? ['clock ± ms'] : []),
        'RTT p50',
        'RTT p99',
        'Total ms',
        ...(openLoop ? ['MB/s at RATE', 'images/s at RATE'] : ['MB/s', 'images/s']),
        'Result',
      ],
      latencyRows(figures, columns),
    )}${tooFew ? `\n${TOO_FEW_NOTE}` : ''}${short ? `\n${SHORT_RUN_NOTE}` : ''}` +
      (indicative ? `\n${INDICATIVE_NOTE}` : '') +
      (superseding
        ? '\nSuperseded: images a latest-frame key held and wrote over before the receiver read them; neither ' +
          'delivered nor lost, and not in MB/s or images/s.'
        : '') +
      (openLoop
        ? '\nAt RATE: MB/s and images/s are what was delivered at the offered load (RATE × size when it kept up), ' +
          "not the transport's capacity: the closed loop measures that."
        : ''))
  );
}

/** The cold-start table: a new connection's connect time and first image, before its warm-up. */
function coldStartBlock({ report }: SummaryFigures): string {
  const coldRows = report.transports.map((t) => [
    sectionTitle(t),
    ms(t.coldStart.connectMs),
    ms(t.coldStart.firstImageMs),
    ms(t.coldStart.firstImageRttMs),
  ]);
  return (
    `Cold start, a new connection before its warm-up (median of the repeats; not part of the figures above):\n` +
    renderTable(['Transport', 'connect ms', 'first image ms', 'first image RTT ms'], coldRows, false)
  );
}

/** The cost table: CPU and memory of each side (and the broker's, where there is one) in the median section. */
function costBlock({ report, median }: SummaryFigures): string {
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
  return (
    `Cost per side (TX transmitter, RX receiver` +
    (withBroker ? ', broker: the server the transport goes through, from its own counters or /proc' : '') +
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
    )}`
  );
}
