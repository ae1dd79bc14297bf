import { MIN_STABLE_IMAGES, MIN_STABLE_SPAN_MS, type SectionResult } from '../../model/section.js';
import type { LatencySummary } from '../../model/stats.js';
import { MIN_STABLE_REPEATS, STABLE_SPREAD_SHARE } from '../report.js';
import { TIMING_DEFINITIONS } from '../wording.js';
import type { TransportInRun } from './views.js';

// The summary table's columns: what each shows, its hint, and whether lower is better.

/** A numeric column of the summary table. */
export interface Column {
  header: string;
  hint: string;
  digits: number;
  /** Lower is better (latency, time, CPU); false when higher is; null when a change is not good or bad. */
  lowerIsBetter: boolean | null;
  value: (r: TransportInRun) => number | null;
  /** Min–max across completed repeats, shown on hover. */
  spread?: (r: TransportInRun) => { min: number; max: number } | null;
  /** True when the figure is only indicative: it is shown as "~value". */
  indicative?: (r: TransportInRun) => boolean;
}

// The header's hint quotes the definition output.log prints, so the two never drift apart.
const ROUND_TRIP_HINT =
  TIMING_DEFINITIONS.find((d) => d.startsWith('Round trip')) ?? 'round trip: stamp → ack processed';

/** The columns every summary table has, in order. */
export const COLUMNS: readonly Column[] = [
  {
    header: 'OK',
    hint: 'intact images, all repeats',
    digits: 0,
    lowerIsBetter: false,
    value: (r) => r.summary.okCount,
  },
  {
    header: 'Lost',
    hint: 'images that never arrived, all repeats',
    digits: 0,
    lowerIsBetter: true,
    value: (r) => r.summary.lostCount,
  },
  {
    header: 'Corrupt',
    hint: 'images with a checksum or size mismatch, all repeats',
    digits: 0,
    lowerIsBetter: true,
    value: (r) => r.summary.corruptCount,
  },
  {
    header: 'p50 ms',
    hint: 'median transmission time',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.p50Ms ?? null,
    spread: (r) => r.summary.spread.p50Ms,
  },
  {
    header: 'p90 ms',
    hint: '90th percentile',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.p90Ms ?? null,
  },
  {
    header: 'p99 ms',
    hint: '99th percentile',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.p99Ms ?? null,
    spread: (r) => r.summary.spread.p99Ms,
  },
  {
    header: 'p99.9 ms',
    hint: '99.9th percentile',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.p999Ms ?? null,
  },
  {
    header: 'max ms',
    hint: 'slowest intact image',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.maxMs ?? null,
  },
  {
    header: 'RTT p50 ms',
    hint: `median round trip. ${ROUND_TRIP_HINT}`,
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.rtt?.p50Ms ?? null,
    spread: (r) => r.summary.spread.rttP50Ms,
  },
  {
    header: 'RTT p99 ms',
    hint: `99th percentile round trip. ${ROUND_TRIP_HINT}`,
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.rtt?.p99Ms ?? null,
  },
  {
    header: 'Total ms',
    hint: 'arrival of the last image − send start of the first',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.totalMs ?? null,
    spread: (r) => r.summary.spread.totalMs,
  },
  {
    header: 'MB/s',
    hint:
      `10⁶ intact bytes per second of total transfer time; ~ marks an indicative figure (fewer ` +
      `than ${MIN_STABLE_REPEATS} completed repeats within ±${STABLE_SPREAD_SHARE * 100} % of their median, or a ` +
      `section under ${MIN_STABLE_IMAGES} images or ${MIN_STABLE_SPAN_MS} ms)`,
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.median?.throughputMBps ?? null,
    spread: (r) => r.summary.spread.throughputMBps,
    indicative: (r) => r.summary.throughputIndicative,
  },
  {
    header: 'images/s',
    hint: 'intact images per second of total transfer time',
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.median?.imagesPerSecond ?? null,
    indicative: (r) => r.summary.throughputIndicative,
  },
  {
    header: 'Connect ms',
    hint: 'cold start: time a new connection took to connect, before its warm-up (median of the repeats)',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.summary.coldStart.connectMs,
  },
  {
    header: 'First image ms',
    hint: 'cold start: one-way time of the first image on a new connection, before its warm-up (median of the repeats)',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.summary.coldStart.firstImageMs,
  },
  {
    header: 'TX CPU ms/img',
    hint: 'transmitter CPU (user + system) per image',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.cost.transmitter?.cpuMsPerImage ?? null,
  },
  {
    header: 'RX CPU ms/img',
    hint: 'receiver CPU (user + system) per image',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.cost.receiver?.cpuMsPerImage ?? null,
  },
  {
    header: 'RX hashing %',
    hint:
      'share of the receiver’s busy time spent verifying images (after their acks, on the thread that stamps ' +
      'arrivals): with the window full, images behind it wait this share of the time, in their one-way times; – ' +
      'with VERIFY=false',
    digits: 0,
    lowerIsBetter: true,
    value: (r) => (r.median?.verifyBusyShare == null ? null : r.median.verifyBusyShare * 100),
  },
];

/** Across two clocks: the bound on the one-way figures' clock error. */
export const CLOCK_COLUMN: Column = {
  header: 'Clock ± ms',
  hint:
    'two hosts, two clocks: every one-way figure (p50 … max, First image) is within ± this of the truth, the ' +
    'bound on the clock offset estimated before the section, widened by its drift until the end. The round trip ' +
    '(RTT) is on the transmitter clock alone and needs no offset.',
  digits: 3,
  lowerIsBetter: true,
  value: (r) => r.median?.oneWayClockErrorMs ?? null,
};

/** With a broker: the broker's CPU per image. */
export const BROKER_COLUMN: Column = {
  header: 'Broker CPU ms/img',
  hint:
    'CPU (user + system) per image of the server the transport goes through: Redis from its own counters, ' +
    'another broker on this host from /proc',
  digits: 3,
  lowerIsBetter: true,
  value: (r) => r.median?.cost.broker?.cpuMsPerImage ?? null,
};

// Its hint quotes output.log's definition, as the round trip's does.
const BROKER_SPLIT_HINT =
  TIMING_DEFINITIONS.find((d) => d.startsWith('Through a broker')) ?? 'one-way time split at the broker stamp';

/** Through a broker that stamps each message (JetStream, Redis streams): the median one-way split at that stamp. */
export const BROKER_SPLIT_COLUMNS: readonly Column[] = [
  {
    header: 'To broker p50 ms',
    hint: `median time from the stamp to the broker's own stamp. ${BROKER_SPLIT_HINT}`,
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.brokerSplit?.toBroker.p50Ms ?? null,
  },
  {
    header: 'From broker p50 ms',
    hint: `median time from the broker's stamp to the last byte in hand (in the broker and out). ${BROKER_SPLIT_HINT}`,
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.brokerSplit?.fromBroker.p50Ms ?? null,
  },
  {
    header: 'Broker split ± ms',
    hint: 'each part of the split is within ± this of the truth: half the stamp step plus the clock mapping error',
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.brokerSplit?.clockBoundMs ?? null,
  },
];

/**
 * Under RATE, a section's frame ages (from each frame's due time, the headline), from its frameAge or, in files written
 * before it, the same distribution in openLoop.latencyFromDue; null in a closed loop.
 */
export function frameAgeOf(section: SectionResult | undefined): LatencySummary | null {
  return section?.frameAge ?? section?.openLoop?.latencyFromDue ?? null;
}

const FRAME_AGE_HINT =
  'RATE: a frame’s age at arrival, counted from its due time: its time on the link plus any wait before it was ' +
  'handed to the link (coordinated omission corrected)';
const ON_THE_LINK_HINT =
  'RATE: time on the link, from the stamp taken as the frame was handed to the link to its last byte in hand (no ' +
  'wait before it)';

/** Under RATE, in place of the one-way columns: the frame age first, then the time on the link beside it. */
export const FRAME_AGE_COLUMNS: readonly Column[] = [
  ...(
    [
      ['p50', 'median', (l: LatencySummary) => l.p50Ms],
      ['p90', '90th percentile', (l: LatencySummary) => l.p90Ms],
      ['p99', '99th percentile', (l: LatencySummary) => l.p99Ms],
      ['p99.9', '99.9th percentile', (l: LatencySummary) => l.p999Ms],
      ['max', 'oldest intact frame', (l: LatencySummary) => l.maxMs],
    ] as const
  ).map(
    ([figure, what, pick]): Column => ({
      header: `Frame age ${figure} ms`,
      hint: `${what}. ${FRAME_AGE_HINT}`,
      digits: 3,
      lowerIsBetter: true,
      value: (r) => {
        const age = frameAgeOf(r.median);
        return age === null ? null : pick(age);
      },
    }),
  ),
  {
    header: 'On the link p50 ms',
    hint: `median. ${ON_THE_LINK_HINT}`,
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.p50Ms ?? null,
    spread: (r) => r.summary.spread.p50Ms,
  },
  {
    header: 'On the link p99 ms',
    hint: `99th percentile. ${ON_THE_LINK_HINT}`,
    digits: 3,
    lowerIsBetter: true,
    value: (r) => r.median?.latency?.p99Ms ?? null,
    spread: (r) => r.summary.spread.p99Ms,
  },
];

/** Under RATE: the rates achieved. */
export const OPEN_LOOP_COLUMNS: readonly Column[] = [
  {
    header: 'Sent/s',
    hint: 'RATE: images per second actually sent, first send to last',
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.drawn?.openLoop?.achievedRatePerSecond ?? null,
  },
  {
    header: 'Delivered/s',
    hint: 'RATE: images per second that arrived, first arrival to last',
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.drawn?.openLoop?.deliveredRatePerSecond ?? null,
  },
];

/** With CLIENTS: the clients' fairness. */
export const CLIENT_COLUMNS: readonly Column[] = [
  {
    header: 'Slowest client MB/s',
    hint: 'CLIENTS: the slowest client’s throughput over its own first stamp to last ack',
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.drawn?.clientFairness?.slowestMBps ?? null,
  },
  {
    header: 'Fastest client MB/s',
    hint: 'CLIENTS: the fastest client’s throughput over its own first stamp to last ack',
    digits: 1,
    lowerIsBetter: false,
    value: (r) => r.drawn?.clientFairness?.fastestMBps ?? null,
  },
  {
    header: 'Jain',
    hint:
      'CLIENTS: Jain’s fairness index over the clients’ throughputs: 1 when all are served alike, 1/clients when ' +
      'one has it all',
    digits: 3,
    lowerIsBetter: false,
    value: (r) => r.drawn?.clientFairness?.jainIndex ?? null,
  },
];
