import { OVERLOAD_RATE_SHARE } from '../../model/section.js';
import type { LatencySummary } from '../../model/stats.js';
import { sectionTitle } from '../wording.js';
import { fixed, ms, range, renderTable } from './format.js';
import { formatSize } from '../../config/size.js';
import type { CommandLaneResult } from '../../model/command-lane.js';
import type { SummaryFigures } from './summary-figures.js';

// The summary tables that only some settings bring, each undefined when no transport of the run has its figures:
// RECEIVERS > 1 (fan-out), CLIENTS > 1 (fairness), RATE (open loop, deadline), COMMAND_RATE (command lane) and
// REPEAT > 1 (spread).

/** The receivers' table (RECEIVERS > 1): "all" and each receiver, per transport. */
export function fanOutBlock({ report, figureOf }: SummaryFigures): string | undefined {
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
  if (fanOutRows.length === 0) return undefined;
  return (
    `Receivers (every image to each; "all": every receiver's images as one distribution` +
    (fanOutClocks
      ? '; clock ±: the one-way clock error bound of a receiver on another kernel, "all" the largest'
      : '') +
    `):\n` +
    renderTable(
      ['Transport', 'receiver', 'OK', 'Lost', 'p50 ms', 'p99 ms', ...(fanOutClocks ? ['clock ± ms'] : []), 'MB/s'],
      fanOutRows,
      false,
    )
  );
}

/** The clients' table (CLIENTS > 1): how evenly the clients were served, per transport. */
export function fairnessBlock({ report, figureOf }: SummaryFigures): string | undefined {
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
  if (fairnessRows.length === 0) return undefined;
  return (
    `Clients (CLIENTS connections, each with its own window; each client's MB/s over its own first stamp to last ` +
    `ack; Jain's index 1 = all served alike):\n${renderTable(
      ['Transport', 'clients', 'images each', 'slowest MB/s', 'fastest MB/s', 'Jain'],
      fairnessRows,
      false,
    )}`
  );
}

/** The open loop's table (RATE): the rate offered, sent and delivered, send lag and RTT from due, per transport. */
export function openLoopBlock({ report, figureOf }: SummaryFigures): string | undefined {
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
  if (openRows.length === 0) return undefined;
  return (
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
    )}`
  );
}

/** The deadline's table (RATE): late, very late and undelivered frames, gaps and jitter, per transport. */
export function deadlineBlock({ report, figureOf }: SummaryFigures): string | undefined {
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
  if (deadlineRows.length === 0) return undefined;
  return (
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
    )}`
  );
}

/** The command lane's table (COMMAND_RATE), one row per transport with a lane; undefined when none has one. */
export function commandLaneBlock({ report, figureOf }: SummaryFigures): string | undefined {
  const lanes = report.transports.map((t) => [t, figureOf(t, 'commands')] as const);
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

/** The spread's table (REPEAT > 1): each figure's min–max across the completed repeats, per transport. */
export function spreadBlock({ report }: SummaryFigures): string {
  const spreadRows = report.transports.map((t) => [
    sectionTitle(t),
    `${t.completedRepeats}/${t.repeats}`,
    range(t.spread.throughputMBps, 1),
    range(t.spread.p50Ms, 3),
    range(t.spread.p99Ms, 3),
    range(t.spread.rttP50Ms, 3),
    range(t.spread.totalMs, 3),
  ]);
  return (
    `Spread across completed repeats (min–max):\n` +
    renderTable(['Transport', 'Completed', 'MB/s', 'p50 ms', 'p99 ms', 'RTT p50 ms', 'Total ms'], spreadRows, false)
  );
}
