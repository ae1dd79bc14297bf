import { MIN_STABLE_IMAGES, MIN_STABLE_SPAN_MS, OVERLOAD_RATE_SHARE, type SectionResult } from '../../model/section.js';
import { MIN_SAMPLES_FOR, type LatencySummary } from '../../model/stats.js';
import {
  MIN_STABLE_REPEATS,
  percentileWithheld,
  shortRun,
  STABLE_SPREAD_SHARE,
  type RunReport,
  type TransportSummary,
} from '../report.js';
import { sectionTitle, SHORT_RUN_NOTE } from '../wording.js';
import { fixed, mib, ms, percent, range, renderTable } from './format.js';
import { formatSize } from '../../config/size.js';
import type { CommandLaneResult } from '../../model/command-lane.js';

// The tables at the end of output.log (and of the services' console): one row per transport.

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
  const median = (t: TransportSummary): SectionResult | undefined =>
    t.medianSection === null ? undefined : report.sections[t.medianSection];
  // Across two clocks: a column with each transport's bound on its one-way figures' clock error.
  const twoClocks = report.transports.some((t) => median(t)?.oneWayClockErrorMs != null);
  // A latest-frame key's images written over before they were read: a column of their own, never among the lost.
  const superseding = report.transports.some((t) => (t.supersededCount ?? 0) > 0);
  // Under RATE the headline is each frame's age from its due time, the time on the link beside it.
  const openLoop =
    report.transports.some((t) => median(t)?.openLoop != null) || report.sections.some((s) => s.openLoop !== null);
  const latencyRows = report.transports.map((t) => {
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
  const figureOf = <K extends 'openLoop' | 'clientFairness' | 'fanOut' | 'commands'>(
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
        ms(open.sendLag?.p50Ms),
        ms(open.sendLag?.p99Ms),
        ms(open.sendLag?.maxMs),
        ms(open.rttFromDue?.p50Ms),
        ms(open.rttFromDue?.p99Ms),
        load,
      ],
    ];
  });
  const deadlineRows = report.transports.flatMap((t) => {
    const d = figureOf(t, 'openLoop')?.deadline;
    if (d == null) return [];
    const share = (count: number): string => (d.framesSent === 0 ? '-' : fixed((100 * count) / d.framesSent, 1));
    return [
      [
        sectionTitle(t),
        ms(d.deadlineMs),
        String(d.framesSent),
        String(d.lateCount),
        share(d.lateCount),
        String(d.veryLateCount),
        String(d.undeliveredCount),
        share(d.lateCount + d.undeliveredCount),
        ms(d.longestGapMs),
        ms(d.jitter?.meanMs),
        ms(d.jitter?.stdDevMs),
        ms(d.jitter?.p99Ms),
        ms(d.jitter?.maxMs),
        d.overDeadline ? 'MISSED' : 'met',
      ],
    ];
  });
  const tooFew = report.transports.some(
    (t) =>
      percentileWithheld((openLoop ? median(t)?.frameAge : median(t)?.latency) ?? null) ||
      percentileWithheld(median(t)?.rtt ?? null),
  );
  const short = report.transports.some((t) => shortRun(median(t)));
  const blocks = [
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
        latencyRows,
      )}${tooFew ? `\n${TOO_FEW_NOTE}` : ''}${short ? `\n${SHORT_RUN_NOTE}` : ''}` +
        (indicative ? `\n${INDICATIVE_NOTE}` : '') +
        (superseding
          ? '\nSuperseded: images a latest-frame key held and wrote over before the receiver read them; neither ' +
            'delivered nor lost, and not in MB/s or images/s.'
          : '') +
        (openLoop
          ? '\nAt RATE: MB/s and images/s are what was delivered at the offered load (RATE × size when it kept up), ' +
            "not the transport's capacity: the closed loop measures that."
          : '')),
    `Cold start, a new connection before its warm-up (median of the repeats; not part of the figures above):\n` +
      renderTable(['Transport', 'connect ms', 'first image ms', 'first image RTT ms'], coldRows, false),
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
      `Open loop (RATE offered; sent/s and delivered/s achieved; send lag: stamp − due, a wait for a window slot ` +
        `included; RTT from due: round trip counted from the due time (coordinated omission corrected); ` +
        `OVERLOADED: sent or delivered under ${OVERLOAD_RATE_SHARE * 100} % of RATE):\n${renderTable(
          [
            'Transport',
            'RATE/s',
            'sent/s',
            'delivered/s',
            'send lag p50',
            'send lag p99',
            'send lag max',
            'RTT from due p50',
            'RTT from due p99',
            'Load',
          ],
          openRows,
        )}`,
    );
  }
  if (deadlineRows.length > 0) {
    blocks.push(
      `Deadline and jitter (late: frames older than the deadline at arrival, from their due time; > 3 int: older ` +
        `than three frame intervals; undelivered: never arrived intact; missed %: late and undelivered of those ` +
        `sent, MISSED when over DEADLINE_MISS_PERCENT; gap: time between two consecutive arrivals; jitter: ` +
        `|gap − frame interval|; times in ms):\n${renderTable(
          [
            'Transport',
            'deadline',
            'sent',
            'late',
            'late %',
            '> 3 int',
            'undelivered',
            'missed %',
            'longest gap',
            'jitter mean',
            'jitter sd',
            'jitter p99',
            'jitter max',
            'Verdict',
          ],
          deadlineRows,
        )}`,
    );
  }
  const commandBlock = commandLaneTable(report.transports.map((t) => [t, figureOf(t, 'commands')] as const));
  if (commandBlock !== undefined) blocks.push(commandBlock);
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

/** The command lane's table (COMMAND_RATE), one row per transport with a lane; undefined when none has one. */
function commandLaneTable(
  lanes: readonly (readonly [TransportSummary, CommandLaneResult | undefined])[],
): string | undefined {
  const rows = lanes.flatMap(([t, lane]) => {
    if (lane === undefined) return [];
    if (lane.notRun !== null)
      return [[sectionTitle(t), 'not run', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-']];
    const { alone, beside } = lane;
    return [
      [
        sectionTitle(t),
        lane.interleaves ? 'beside' : 'behind',
        ms(alone.oneWay?.p50Ms),
        ms(alone.oneWay?.p99Ms),
        ms(beside.oneWay?.p50Ms),
        ms(beside.oneWay?.p90Ms),
        ms(beside.oneWay?.p99Ms),
        ms(beside.oneWay?.maxMs),
        ms(beside.rtt?.p50Ms),
        ms(beside.rtt?.p99Ms),
        fixed(lane.delayFactorP50, 1),
        `${alone.unacknowledged + beside.unacknowledged}/${alone.corrupt + beside.corrupt}`,
        pairedCheckText(lane),
      ],
    ];
  });
  const first = lanes.find(([, lane]) => lane !== undefined)?.[1];
  if (first === undefined) return undefined;
  const notRun = lanes.flatMap(([t, lane]) => (lane?.notRun != null ? [`${t.transport}: ${lane.notRun}`] : []));
  return (
    `Command lane (${formatSize(first.sizeBytes)} commands at ${first.ratePerSecond}/s on each transport's link; ` +
    `alone: with no image in flight; beside: while the images flowed; times in ms, one-way unless RTT; ` +
    `× p50: beside's one-way p50 over alone's; lane "behind": a frame is written whole, so a command waits ` +
    `behind the image being written; "beside": its own stream, interleaved; after ack: commands whose one-way ` +
    `time exceeds their own round trip on one clock, of those paired, which fails the section; never in MB/s or ` +
    `images/s):\n` +
    renderTable(
      [
        'Transport',
        'lane',
        'alone p50',
        'alone p99',
        'beside p50',
        'beside p90',
        'beside p99',
        'beside max',
        'RTT p50',
        'RTT p99',
        '× p50',
        'unacked/corrupt',
        'after ack',
      ],
      rows,
      false,
    ) +
    (notRun.length > 0 ? `\nNot run: ${notRun.join('; ')}.` : '')
  );
}

/** "0 of 2100", the commands stamped as arriving after their ack; "-" across two clocks or in older files. */
function pairedCheckText(lane: CommandLaneResult): string {
  const { alone, beside } = lane;
  if (alone.arrivalsAfterAck == null && beside.arrivalsAfterAck == null) return '-';
  const late = (alone.arrivalsAfterAck ?? 0) + (beside.arrivalsAfterAck ?? 0);
  return `${late} of ${(alone.paired ?? 0) + (beside.paired ?? 0)}`;
}
