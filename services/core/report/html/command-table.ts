import { formatSize } from '../../config/size.js';
import type { CommandLaneResult, CommandPhaseResult } from '../../model/command-lane.js';
import type { LatencySummary } from '../../model/stats.js';
import { renderFigureTable, type TableColumn } from './figure-table.js';
import type { RunView, TransportInRun, TransportView } from './views.js';

// The command lane (COMMAND_RATE) per transport: the figures and words of output.log's "Command lane" table.

/**
 * A transport's command lane as drawn: the median completed repeat's, else its last repeat with arrivals, so a lane
 * that failed the section (commands stamped after their acks) still shows why; undefined without a lane.
 */
export function laneOf(r: TransportInRun): CommandLaneResult | undefined {
  return r.drawn?.commands;
}

/** A lane that ran: undefined when there is none, or it did not run on the transport. */
const ran = (r: TransportInRun): CommandLaneResult | undefined => {
  const lane = laneOf(r);
  return lane?.notRun == null ? lane : undefined;
};

/** Commands of both phases stamped as arriving after their ack, and those paired; null across two clocks or before. */
export function arrivalsAfterAck(lane: CommandLaneResult): { late: number; paired: number } | null {
  const { alone, beside } = lane;
  if (alone.arrivalsAfterAck == null && beside.arrivalsAfterAck == null) return null;
  return {
    late: (alone.arrivalsAfterAck ?? 0) + (beside.arrivalsAfterAck ?? 0),
    paired: (alone.paired ?? 0) + (beside.paired ?? 0),
  };
}

function timeColumn(
  phase: 'alone' | 'beside',
  times: 'oneWay' | 'rtt',
  figure: 'p50' | 'p99' | 'max',
  hint: string,
): TableColumn {
  const pick = (l: LatencySummary): number | null =>
    figure === 'p50' ? l.p50Ms : figure === 'p99' ? l.p99Ms : l.maxMs;
  const title = phase === 'alone' ? 'Alone' : times === 'rtt' ? 'RTT' : 'Beside';
  return {
    header: `${title} ${figure} ms`,
    hint,
    digits: 3,
    lowerIsBetter: true,
    value: (r) => {
      const l = ran(r)?.[phase][times];
      return l == null ? null : pick(l);
    },
  };
}

const ALONE = 'one-way time of a command sent alone, with no image in flight';
const BESIDE = 'one-way time of a command sent while the images flowed';
const RTT = 'round trip of a command sent while the images flowed: stamp → ack processed, transmitter clock';

const sum = (of: (p: CommandPhaseResult) => number) => (r: TransportInRun) => {
  const lane = ran(r);
  return lane === undefined ? null : of(lane.alone) + of(lane.beside);
};

/** The command table's columns. */
export const COMMAND_COLUMNS: readonly TableColumn[] = [
  {
    header: 'Lane',
    hint:
      'behind: a frame is written whole, so a command waits behind the image being written; beside: its own ' +
      'stream, interleaved with the images',
    text: (r) => {
      const lane = laneOf(r);
      if (lane === undefined) return null;
      return lane.notRun != null ? 'not run' : lane.interleaves ? 'beside' : 'behind';
    },
  },
  timeColumn('alone', 'oneWay', 'p50', `median ${ALONE}`),
  timeColumn('alone', 'oneWay', 'p99', `99th percentile ${ALONE}`),
  timeColumn('alone', 'oneWay', 'max', `slowest ${ALONE}`),
  timeColumn('beside', 'oneWay', 'p50', `median ${BESIDE}`),
  timeColumn('beside', 'oneWay', 'p99', `99th percentile ${BESIDE}`),
  timeColumn('beside', 'oneWay', 'max', `slowest ${BESIDE}`),
  timeColumn('beside', 'rtt', 'p50', `median ${RTT}`),
  timeColumn('beside', 'rtt', 'p99', `99th percentile ${RTT}`),
  {
    header: '× p50',
    hint: 'beside’s one-way p50 over alone’s: how much the image stream slows a typical command',
    digits: 1,
    lowerIsBetter: true,
    value: (r) => ran(r)?.delayFactorP50 ?? null,
  },
  {
    header: 'Unacked',
    hint: 'commands sent and never acknowledged (lost, or later than the lane’s wait), both phases',
    digits: 0,
    lowerIsBetter: true,
    value: sum((p) => p.unacknowledged),
  },
  {
    header: 'Corrupt',
    hint: 'commands whose bytes failed their checksum, both phases',
    digits: 0,
    lowerIsBetter: true,
    value: sum((p) => p.corrupt),
  },
  {
    header: 'After ack',
    hint:
      'the paired check: on one clock, commands whose one-way time exceeds their own round trip (stamped as ' +
      'arriving after their ack was processed, which only a late arrival stamp can produce), of those paired; any ' +
      'fails the section. – across two clocks',
    text: (r) => {
      const lane = ran(r);
      const check = lane === undefined ? null : arrivalsAfterAck(lane);
      return check === null ? null : `${check.late} of ${check.paired}`;
    },
    bad: (r) => {
      const lane = ran(r);
      return lane !== undefined && (arrivalsAfterAck(lane)?.late ?? 0) > 0;
    },
  },
];

/** The command lane's card (COMMAND_RATE); '' when no section shown had a lane. */
export function renderCommandSection(views: readonly RunView[], transports: readonly TransportView[]): string {
  const rows = transports.filter((t) => t.perRun.some((r) => r !== undefined && laneOf(r) !== undefined));
  const lanes = rows.flatMap((t) => t.perRun.flatMap((r) => (r === undefined ? [] : (laneOf(r) ?? []))));
  const first = lanes[0];
  if (first === undefined) return '';
  const notRun = rows.flatMap((t) => {
    const lane = [...t.perRun]
      .reverse()
      .map((r) => (r === undefined ? undefined : laneOf(r)))
      .find((l) => l !== undefined);
    return lane?.notRun == null ? [] : [`${t.title}: ${lane.notRun}`];
  });
  const failedShown = rows.some((t) => t.perRun.some((r) => r?.median === undefined && r?.drawn?.commands));
  return renderFigureTable({
    className: 'commands',
    title: 'Command lane',
    note:
      `${formatSize(first.sizeBytes)} commands at ${first.ratePerSecond}/s on each transport’s link, timed apart ` +
      `from the images and never in MB/s or images/s. Alone: with no image in flight; beside: while the images ` +
      `flowed; times one-way unless RTT; × p50: beside’s one-way p50 over alone’s; lane “behind”: a frame is ` +
      `written whole, so a command waits behind the image being written; “beside”: its own stream, interleaved. ` +
      `After ack: the paired check, commands stamped as arriving after their own ack was processed, of those ` +
      `paired with their round trip; any fails the section.` +
      (failedShown
        ? ' A transport with no completed repeat shows its last repeat with arrivals: for diagnosis, not a result.'
        : '') +
      (notRun.length > 0 ? ` Not run: ${notRun.join('; ')}.` : ''),
    columns: COMMAND_COLUMNS,
    rows,
    twoRuns: views.length > 1,
  });
}
