import type { ClockOffset } from '../../model/clock.js';
import {
  MIN_STABLE_IMAGES,
  MIN_STABLE_SPAN_MS,
  type ClientFairness,
  type ColdStart,
  type FanOut,
  type ImageRecord,
  type SectionPlan,
  type SectionResult,
} from '../../model/section.js';
import { formatDurationMs } from '../../config/duration.js';
import { formatSize } from '../../config/size.js';
import { MIN_SAMPLES_FOR, type LatencySummary } from '../../model/stats.js';
import { describeWarmup, describeWarmupOutcome } from '../../model/warmup.js';
import { percentileWithheld, runSucceeded, type HostFacts, type RunInfo, type RunReport } from '../report.js';
import type { BrokerSplit } from '../../model/broker-split.js';
import type { CommandLaneResult, CommandPhaseResult } from '../../model/command-lane.js';
import { BROKERS_STAMPING_NOTHING, nodeDescription, peersText, sectionTitle, TIMING_DEFINITIONS } from '../wording.js';
import { fixed, ms, signedMs } from './format.js';
import { renderSummary } from './summary-tables.js';
import { deadlineLines, openLoopText, rateText } from './open-loop-lines.js';
import { costLine, cpuProfilesText, verificationText, windowText } from './section-lines.js';
import { hostLoadRunText, hostLoadSectionText, hostLoadWarnings } from '../host-load-text.js';

// output.log: the header when the run starts, each section's heading, image lines and figures as
// it runs, the summary and verdict at its end.

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

/** A distribution's line, or "-" with the reason when there is none. */
function distributionOrNone(l: LatencySummary | null | undefined): string {
  return l == null ? '- (no intact frame with its round trip)' : distributionLine(l);
}

/** The command lane's lines of a section: how it travelled, then each phase's counts and times. */
function commandLines(lane: CommandLaneResult): string[] {
  const head = `Commands (${formatSize(lane.sizeBytes)} at ${lane.ratePerSecond}/s, not in MB/s or images/s)`;
  if (lane.notRun !== null) return [`${head}: not run: ${lane.notRun}`];
  const phase = (name: string, p: CommandPhaseResult): string[] => [
    `${name}: ${p.sent} sent, ${p.acked} acknowledged, ${p.unacknowledged} not, ${p.corrupt} corrupt` +
      (p.sendLag === null ? '' : `; send lag (sent − due, in no time below) p99 ${ms(p.sendLag.p99Ms)} ms`),
    ...(p.oneWay === null ? [] : [`${name}, one-way: ${distributionLine(p.oneWay)}`]),
    ...(p.rtt === null ? [] : [`${name}, round trip: ${distributionLine(p.rtt)}`]),
    ...(p.arrivalsAfterAck == null
      ? []
      : [
          `${name}, timing check: ${p.arrivalsAfterAck} of ${p.paired ?? 0} paired with their round trip arrived ` +
            `after their ack${p.arrivalsAfterAck > 0 ? ' (FAILED: an arrival stamp came late)' : ''}`,
        ]),
  ];
  return [
    `${head}: ${lane.how}`,
    ...phase('Commands alone (no image in flight)', lane.alone),
    ...phase('Commands beside the images', lane.beside),
    ...(lane.delayFactorP50 === null
      ? []
      : [`Commands beside the images took ${fixed(lane.delayFactorP50, 1)} × their one-way p50 alone`]),
  ];
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
      ((r.supersededCount ?? 0) > 0 ? `, ${r.supersededCount} superseded` : '') +
      `, p50 ${ms(r.latency?.p50Ms)}, p99 ${ms(r.latency?.p99Ms)} ms${clockErrorText(r)}` +
      `, ${fixed(r.throughputMBps, 1)} MB/s`,
  );
  const how = f.mode === 'copies' ? 'a copy each' : 'one send reaching all';
  return (
    `${f.perReceiver.length}, ${how}: aggregate of ${a.okCount} intact` +
    (a.lostCount > 0 ? `, ${a.lostCount} lost` : '') +
    (a.corruptCount > 0 ? `, ${a.corruptCount} corrupt` : '') +
    ((a.supersededCount ?? 0) > 0 ? `, ${a.supersededCount} superseded` : '') +
    `, p50 ${ms(a.latency?.p50Ms)}, p99 ${ms(a.latency?.p99Ms)} ms` +
    (a.oneWayClockErrorMs == null ? '' : ` ± up to ${ms(a.oneWayClockErrorMs)} ms`) +
    `, RTT p50 ${ms(a.rtt?.p50Ms)} ms; ${receivers.join('; ')}`
  );
}

/**
 * "to it p50 …, p90 …, p99 …, max … ms; from it (in it and out) p50 …; stamp step …, each part ± … ms": a section's
 * one-way times split at the broker's stamp, with the parts below 0 and below −bound counted.
 */
export function brokerSplitText(split: BrokerSplit): string {
  const parts = (l: LatencySummary): string =>
    `p50 ${ms(l.p50Ms)}, p90 ${ms(l.p90Ms)}, p99 ${ms(l.p99Ms)}, max ${ms(l.maxMs)}, mean ${ms(l.meanMs)} ms`;
  const below = split.belowZero.toBroker + split.belowZero.fromBroker;
  const step =
    split.resolutionMs >= 0.001 ? `${fixed(split.resolutionMs, 3)} ms` : `${Math.round(split.resolutionMs * 1e6)} ns`;
  return (
    `${split.count} images, to it ${parts(split.toBroker)}; from it (time in it and the way out, one stamp cannot ` +
    `part them) ${parts(split.fromBroker)}; stamp step ${step}, each part ± ${ms(split.clockBoundMs)} ms` +
    (below === 0
      ? ''
      : `; ${split.belowZero.toBroker} to and ${split.belowZero.fromBroker} from below 0 (step or clock error: ` +
        `percentiles count them as 0, min and mean as they came)`) +
    (split.beyondBound === 0
      ? ''
      : `; ${split.beyondBound} parts below −${ms(split.clockBoundMs)} ms: the broker's clock is not the ` +
        `receiver's, the split is off by their offset`)
  );
}

/** output.log's "Through the broker" line of a section; undefined for a transport without a broker. */
function brokerLine(section: SectionResult): string | undefined {
  const split = section.fanOut?.aggregate.brokerSplit ?? section.brokerSplit ?? null;
  if (split !== null) return `Through the broker: ${brokerSplitText(split)}`;
  if (section.brokerNotSplit != null) return `Through the broker: not split: ${section.brokerNotSplit}`;
  if (BROKERS_STAMPING_NOTHING.has(section.transport))
    return 'Through the broker: not split: the broker stamps nothing the receiver can read';
  return undefined;
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
  if (oneWayNs === null)
    return status === 'superseded'
      ? `Image ${image}: superseded (written over before it was read)`
      : `Image ${image}: LOST (never arrived)`;
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
  const cpuProfiles = cpuProfilesText(section);
  if (cpuProfiles !== undefined) lines.push(cpuProfiles);
  lines.push(
    section.totalMs === null
      ? 'Total transfer time: - (no image arrived)'
      : `Total transfer time: ${ms(section.totalMs)} ms`,
  );
  const twoClocksNote = clockError === '' ? '' : ` (one-way across two clocks: each figure${clockError})`;
  const open = section.openLoop;
  // Under RATE a frame's age from its due time leads: the time on the link alone hides a sender that fell behind.
  if (open !== null) lines.push(`Frame age (from due time)${twoClocksNote}: ${distributionOrNone(section.frameAge)}`);
  if (open?.deadline != null) lines.push(...deadlineLines(open.deadline));
  if (section.latency !== null) {
    lines.push(
      (open === null ? 'Latency' : 'Time on the link (from the handover stamp)') +
        `${twoClocksNote}: ${distributionLine(section.latency)}`,
    );
    lines.push(
      `Throughput` +
        (section.openLoop === null ? '' : ' (delivered at the offered RATE: the load, not a capacity)') +
        `: ${throughputText(section)}`,
    );
  }
  const superseded = section.supersededCount ?? 0;
  if (superseded > 0)
    lines.push(
      `Superseded: ${superseded} of ${section.imageCount} images written over before the receiver read them (the ` +
        'key keeps the latest only): neither delivered nor lost, and not in MB/s or images/s',
    );
  if (section.rtt !== null) {
    lines.push(`Round trip${clockError === '' ? '' : ' (one clock: no offset)'}: ${distributionLine(section.rtt)}`);
    if (section.littleRatio !== null) lines.push(`Window: ${windowText(section)}`);
  }
  const broker = brokerLine(section);
  if (broker !== undefined) lines.push(broker);
  if (section.clientFairness !== null) lines.push(`Clients: ${fairnessText(section.clientFairness)}`);
  if (section.fanOut !== null) lines.push(`Receivers: ${fanOutText(section.fanOut)}`);
  if (open !== null) {
    lines.push(`Open loop: ${openLoopText(open)}`);
    if (open.sendLag !== null) lines.push(`Send lag (stamp − due): ${distributionLine(open.sendLag)}`);
    if (open.rttFromDue !== null) lines.push(`Round trip from due time: ${distributionLine(open.rttFromDue)}`);
  }
  if (section.commands !== undefined) lines.push(...commandLines(section.commands));
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
  if (section.hostLoad != null) lines.push(`Host load: ${hostLoadSectionText(section.hostLoad)}`);
  if (section.failure !== null) lines.push(`FAILED: ${section.failure}`);
  return lines.join('\n');
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

/**
 * The host load's lines: over `sections` their range and a warning per figure that says the host was busy
 * (host-load-text.ts); before any section (the header as the run starts), what will be read and where it goes.
 */
export function renderHostLoadLines(sections: readonly SectionResult[]): string[] {
  if (sections.length === 0)
    return [
      "Host load: read on the receiver's host over each section's measured span (1-minute load average, CPUs busy, " +
        "steal, other processes' CPU): results.json's hostLoad, and report.html's header, which warns when the host " +
        'was busy enough to move the times',
    ];
  return [`Host load: ${hostLoadRunText(sections)}`, ...hostLoadWarnings(sections)];
}

/** output.log's header, written when the run starts: its host load line says where the figures go. */
export function renderOutputLogHeader(run: RunInfo): string {
  const libraries = Object.entries(run.hosts.receiver.libraries)
    .map(([name, version]) => `${name} ${version}`)
    .join(', ');
  return [
    'image-transfer-bench results',
    `Date: ${run.startedAt}`,
    hostLine('Transmitter', run.hosts.transmitter),
    hostLine('Receiver', run.hosts.receiver),
    ...renderHostLoadLines([]),
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
        : `open loop at RATE ${rateText(run.config.ratePerSecond)} (WINDOW bounds the images in flight; the ` +
          `headline is each frame's age from its due time` +
          (run.config.deadline == null
            ? ''
            : `; deadline ${ms(run.config.deadline.deadlineMs)} ms, at most ` +
              `${fixed(run.config.deadline.allowedLateShare * 100, 1)} % of frames may miss it`) +
          ')'),
    `Warm-up of each section, on its connection before the recorded images: ${describeWarmup(run.warmup)}`,
    ...(run.config.commandRatePerSecond == null
      ? []
      : [
          `Command lane: ${formatSize(run.config.commandSizeBytes ?? 64)} commands at ` +
            `${run.config.commandRatePerSecond}/s on each section's link, alone after its warm-up, then beside its ` +
            'images; timed and counted apart from the images (COMMAND_RATE, docs/measurement.md)',
        ]),
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
      : 'Integrity: every image verified by the receiver (size and checksum: XXH3-64 over 16 KiB, xxHash64 ' +
        'under), after its ack, on the ' +
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
  const missed = report.sections.filter((s) => s.openLoop?.deadline?.overDeadline === true).length;
  const notes = [
    overloaded === 0
      ? ''
      : `${overloaded} section${overloaded === 1 ? ' was' : 's were'} OVERLOADED at RATE (see Open loop): their ` +
        `frame ages, not their MB/s, say what the load cost`,
    missed === 0
      ? ''
      : `${missed} section${missed === 1 ? '' : 's'} MISSED ${missed === 1 ? 'ITS' : 'THEIR'} DEADLINE (see ` +
        `Deadline and jitter)`,
  ].filter(Boolean);
  const verdict = runSucceeded(report)
    ? `Result: every transport delivered every image intact${notes.length === 0 ? '' : `; ${notes.join('; ')}`}.`
    : report.stopReason
      ? `Result: INCOMPLETE: ${report.stopReason}. Sections not listed above did not run.`
      : 'Result: FAILED: at least one transport lost, corrupted or failed to deliver images (see above).';
  // The header is written before any section ran: the run's host load, and any warning, go with the verdict.
  const hostLoad = report.sections.length === 0 ? [] : renderHostLoadLines(report.sections);
  return (
    `=== Summary (finished ${report.finishedAt}) ===\n${renderSummary(report)}\n\n` +
    [...hostLoad, verdict].join('\n') +
    '\n'
  );
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
