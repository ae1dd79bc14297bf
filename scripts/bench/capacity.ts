import { errorMessage } from '../../services/core/errors.js';
import { formatSize } from '../../services/core/config/size.js';
import type { HostFacts } from '../../services/core/report/report.js';
import { renderTable } from '../../services/core/report/text/format.js';
import { transportByName } from '../../services/transports/index.js';
import type { BenchChart } from '../lib/sweep-page.js';
import {
  CAMERA_RATES,
  CAPACITY_HEADER,
  capacityRow,
  judgeProbe,
  probeFrames,
  summarizeCapacity,
  type CapacityProbe,
  type CapacitySummary,
} from './capacity-model.js';
import { nextRate, searchOutcome, type SearchBounds, type SearchProbe } from './capacity-search.js';
import type { BenchPlan } from './plan.js';
import { ASSET_BYTES, medianSection, rotated, runSuite } from './suite.js';

// The capacity part (issue 50): per transport and image size, the highest RATE at which the sender keeps its schedule
// and at most the allowed share of frames misses the deadline (capacity-model.ts's judgeProbe), found by
// capacity-search.ts (from 60 fps, doubling or halving, then bisecting to within 12.5 %), over rounds that give the
// rate an interval; frame age and jitter at that rate and at the camera rates below it.
//
// Its cost, measured on this 2-core host while others used it (a probe's suite run is about 1.3 s of start and stop
// plus its frames, 3–4 s in all): TCP's search at 533 KiB (60 and 120 fps passing, 240 failing, three bisections) took
// 21 s, its 15 and 30 fps probes (200 frames each) 22 s more; TCP and ZeroMQ over two rounds 143 s, 27 s a search.
// Five default transports over five rounds, the camera probes in the first round only: about 5 × 5 × 27 + 5 × 22 ≈
// 785 s, within a quarter of an hour. Hence the start at 60 fps (not at the floor: 200 frames take 13 s at 15 fps, 7 at
// 30), 2 s probes and the camera rates in one round.

/** The image sizes unless --sizes= names others: the asset's 533 KiB, a camera frame. */
export const DEFAULT_CAPACITY_SIZES: readonly number[] = [ASSET_BYTES];
/** Rounds unless --rounds= says otherwise: the least and most of 5 hold the median with probability 93.75 %. */
export const DEFAULT_CAPACITY_ROUNDS = 5;
/** The allowed share of frames that miss the deadline unless --deadline-miss-percent= says otherwise (percent). */
export const DEFAULT_CAPACITY_MISS_PERCENT = 1;

/**
 * The search: from 60 fps (the highest camera rate: a search that passes it never pays for the slow low rates), down
 * to 15 (the lowest camera rate), up to 60 × 2⁶ (3840 fps, 2 GB/s of 533 KiB frames, past any loopback here), to
 * within 12.5 % (three bisections from a doubling's bracket).
 */
export const CAPACITY_BOUNDS: SearchBounds = {
  startPerSecond: 60,
  floorPerSecond: 15,
  capPerSecond: 3840,
  resolution: 0.125,
};

/**
 * A probe: 2 s of schedule, at least 200 frames (a 1 % share is then 2 frames), after 100 untimed (closed-loop)
 * frames that open the connection and settle its buffers; one section (REPEAT=1), the suite's own WINDOW (1, as
 * `npm start`).
 */
const PROBE = { seconds: 2, minFrames: 200, warmup: 100 };
/** Rounds that also probe the camera rates their search did not (15 and 30 fps are a third of a round's time). */
const CAMERA_PROBE_ROUNDS = 1;

/** One transport and image size: one search per round. */
interface Lane {
  transport: string;
  sizeBytes: number;
}

/** Runs one probe: the suite with `lane`'s transport alone at `ratePerSecond`, judged. */
async function runProbe(
  plan: BenchPlan,
  lane: Lane,
  round: number,
  ratePerSecond: number,
  purpose: CapacityProbe['purpose'],
): Promise<{ probe: CapacityProbe; host: HostFacts | undefined }> {
  const imageCount = probeFrames(ratePerSecond, PROBE.seconds, PROBE.minFrames);
  const env = {
    TRANSPORTS: lane.transport,
    RATE: String(ratePerSecond),
    IMAGE_SIZE: String(lane.sizeBytes),
    IMAGE_COUNT: String(imageCount),
    WARMUP: String(PROBE.warmup),
    REPEAT: '1',
    DEADLINE_MS: String(plan.capacityDeadlineMs ?? 1000 / ratePerSecond),
    DEADLINE_MISS_PERCENT: String(plan.capacityMissPercent),
  };
  const name = `capacity ${lane.transport}, ${formatSize(lane.sizeBytes)}, round ${round}, ${ratePerSecond} fps`;
  const startedAt = Date.now();
  const base = { transport: lane.transport, sizeBytes: lane.sizeBytes, round, ratePerSecond, purpose, imageCount };
  let probe: CapacityProbe;
  let host: HostFacts | undefined;
  try {
    const cell = await runSuite([lane.transport], name, env);
    host = cell.report.run.hosts.receiver;
    const section =
      medianSection(cell.report, lane.transport) ?? cell.report.sections.find((s) => s.transport === lane.transport);
    probe = { ...base, ...judgeProbe(section), seconds: cell.seconds };
  } catch (err) {
    // A run that wrote no results fails this rate only: the search goes on below it.
    probe = {
      ...base,
      verdict: 'failed',
      reason: `FAILED: ${errorMessage(err).split('\n')[0]}`,
      figures: null,
      seconds: (Date.now() - startedAt) / 1000,
    };
  }
  process.stderr.write(`bench:   ${probe.verdict === 'sustained' ? 'sustained' : 'not sustained'}: ${probe.reason}\n`);
  return { probe, host };
}

/**
 * The capacity part: every round, each transport and size's search, one probe at a time in turn (the lanes' order
 * rotated each round, so the host's drift falls on all alike), then (first round) the camera rates below each found
 * rate that its search did not probe; the table, its record and its card on the charts page.
 */
export async function capacity(plan: BenchPlan): Promise<{
  lines: string[];
  probes: CapacityProbe[];
  summary: CapacitySummary[];
  /** The table as printed: its header and rows. */
  table: { header: string[]; rows: string[][] };
  charts: BenchChart[];
  host: HostFacts | undefined;
}> {
  const lanes: Lane[] = plan.capacitySizes.flatMap((sizeBytes) =>
    plan.transportNames.map((transport) => ({ transport, sizeBytes })),
  );
  const probes: CapacityProbe[] = [];
  let host: HostFacts | undefined;
  const probe = async (lane: Lane, round: number, rate: number, purpose: CapacityProbe['purpose']) => {
    const result = await runProbe(plan, lane, round, rate, purpose);
    host ??= result.host;
    probes.push(result.probe);
    return result.probe;
  };
  for (let round = 1; round <= plan.capacityRounds; round++) {
    const order = rotated(lanes, round - 1);
    const searches = new Map<Lane, SearchProbe[]>(order.map((lane) => [lane, []]));
    // One probe per unfinished search in turn, until every search is over.
    for (let stepped = true; stepped; ) {
      stepped = false;
      for (const lane of order) {
        const history = searches.get(lane)!;
        const rate = nextRate(CAPACITY_BOUNDS, history);
        if (rate === null) continue;
        const done = await probe(lane, round, rate, 'search');
        history.push({ ratePerSecond: rate, sustained: done.verdict === 'sustained' });
        stepped = true;
      }
    }
    if (round > CAMERA_PROBE_ROUNDS) continue;
    for (const lane of order) {
      const history = searches.get(lane)!;
      const found = searchOutcome(CAPACITY_BOUNDS, history).sustainedPerSecond ?? 0;
      for (const rate of CAMERA_RATES)
        if (rate < found && !history.some((p) => p.ratePerSecond === rate)) await probe(lane, round, rate, 'camera');
    }
  }
  const summary = summarizeCapacity(CAPACITY_BOUNDS, plan.transportNames, plan.capacitySizes, probes);
  const rows = summary.map((s) =>
    capacityRow(CAPACITY_BOUNDS, s, transportByName(s.transport).label, formatSize(s.sizeBytes)),
  );
  const { startPerSecond: start, floorPerSecond: floor, capPerSecond: cap } = CAPACITY_BOUNDS;
  const deadline =
    plan.capacityDeadlineMs === undefined ? 'one frame interval (1000 ÷ RATE)' : `${plan.capacityDeadlineMs} ms`;
  const rounds = plan.capacityRounds;
  const note =
    `The highest RATE each transport sustains: its section ok, not overloaded, the sender's send lag p99 within the ` +
    `deadline, and at most ${plan.capacityMissPercent} % of frames late (age from the due time over the deadline, ` +
    `${deadline}) or undelivered. Searched from ${start} fps, doubling (up to ${cap}) or halving (down to ${floor}), ` +
    `then bisecting to within ${CAPACITY_BOUNDS.resolution * 100} %; each probe ${PROBE.seconds} s of frames ` +
    `(at least ${PROBE.minFrames}) after ${PROBE.warmup} untimed, the suite's WINDOW, one transport per run; ` +
    `${rounds} round${rounds === 1 ? '' : 's'}, the transports' probes in turn. Sustained fps: the median of the ` +
    `rounds' highest passed rates; interval: the least and most of them under 6 rounds (they hold the median with ` +
    `probability 1 − 2^(1−n)), from 6 the 95 % order-statistics interval of the median. Age p50/p99 (frameAge, ` +
    `ms from the due time) and jitter p99 (|gap − interval| between arrivals, ms): medians over the rounds at each ` +
    `round's own rate, and at the camera rates below the sustained one (@${CAMERA_RATES.join(', @')} fps: age ` +
    `p50/p99 · jitter p99, ms, over every probe at that rate; a rate the search did not probe is probed in the first ` +
    `${CAMERA_PROBE_ROUNDS === 1 ? 'round' : `${CAMERA_PROBE_ROUNDS} rounds`} only). Limited by: what failed at ` +
    `the rate above, per round.`;
  return {
    probes,
    summary,
    table: { header: [...CAPACITY_HEADER], rows },
    host,
    lines: [`Capacity: ${note}`, renderTable([...CAPACITY_HEADER], rows)],
    charts: [
      {
        kind: 'table',
        id: 'capacity-table',
        title: 'The highest rate each transport sustains',
        note,
        header: [...CAPACITY_HEADER],
        rows,
      },
      {
        kind: 'bars',
        id: 'capacity-sustained',
        title: 'Sustained frames per second',
        note: `Each transport's median sustained RATE over ${rounds} round${rounds === 1 ? '' : 's'} (see the table).`,
        yLabel: 'frames/s sustained',
        categories: plan.transportNames.map((name) => transportByName(name).label),
        series: plan.capacitySizes.map((sizeBytes) => ({
          label: formatSize(sizeBytes),
          values: plan.transportNames.map(
            (name) =>
              summary.find((s) => s.transport === name && s.sizeBytes === sizeBytes)?.sustainedPerSecond ?? null,
          ),
        })),
      },
    ],
  };
}
