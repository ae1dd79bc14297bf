import type { SectionResult } from '../../services/core/model/section.js';
import { medianOf } from '../../services/core/model/stats.js';
import { medianInterval, type MedianInterval } from '../lib/overhead.js';
import { searchOutcome, type SearchBounds, type SearchProbe } from './capacity-search.js';
import { fixed } from './format.js';

// The capacity part's judgement of one probe (a short open-loop section at one rate), and a transport's figures over
// the rounds of its search: the sustainable rate with an interval, and frame age and jitter at that rate and at the
// camera rates below it. Pure, so every figure the table shows follows from the probes alone.

/** The camera rates the table reports figures at, where they are below the sustainable rate (frames per second). */
export const CAMERA_RATES = [15, 30, 60] as const;

/**
 * A probe's verdict: sustained, or the first thing that failed: the section itself (a frame lost or corrupt, a
 * timing check, no section at all), the schedule (overloaded, or the sender's own lag past the deadline) or the
 * deadline (too many frames missed it).
 */
export type ProbeVerdict = 'sustained' | 'failed' | 'overloaded' | 'send lag' | 'missed';

/** What the table and results.json keep of a probe's section. */
export interface ProbeFigures {
  /** Frame age at arrival, from each frame's due time (frameAge). */
  frameAgeP50Ms: number | null;
  frameAgeP99Ms: number | null;
  /** |gap − interval| between consecutive arrivals (openLoop.deadline.jitter). */
  jitterP99Ms: number | null;
  jitterMeanMs: number | null;
  longestGapMs: number | null;
  /** Late or undelivered frames ÷ frames sent. */
  missedShare: number | null;
  deadlineMs: number | null;
  sendLagP99Ms: number | null;
  sentPerSecond: number | null;
  deliveredPerSecond: number | null;
}

/** One probe: a suite run of one transport at one rate, what it gave and what it says of the rate. */
export interface CapacityProbe {
  transport: string;
  sizeBytes: number;
  round: number;
  ratePerSecond: number;
  /** A step of the search, or a camera rate the search did not reach from above (measured for the table only). */
  purpose: 'search' | 'camera';
  imageCount: number;
  verdict: ProbeVerdict;
  /** The verdict in words, with the figure it rests on. */
  reason: string;
  /** Null when the run produced no section of the transport. */
  figures: ProbeFigures | null;
  /** The suite run's wall time, its start and stop included. */
  seconds: number;
}

const percent = (share: number | null): string => (share === null ? '-' : `${(share * 100).toFixed(1)} %`);

/**
 * Judges a probe's section: sustained when it is ok, not overloaded, its send lag's p99 within its deadline (a frame
 * sent late cannot be on time: a sender that keeps its schedule loses none of the deadline to waiting) and at most its
 * allowed share of frames missed the deadline.
 */
export function judgeProbe(section: SectionResult | undefined): Pick<CapacityProbe, 'verdict' | 'reason' | 'figures'> {
  if (section === undefined) return { verdict: 'failed', reason: 'no section in the run', figures: null };
  const open = section.openLoop;
  const deadline = open?.deadline ?? null;
  const sendLag = open?.sendLag ?? null;
  const sendLagP99Ms = sendLag === null ? null : (sendLag.p99Ms ?? sendLag.maxMs);
  const age = section.frameAge ?? open?.latencyFromDue ?? null;
  const figures: ProbeFigures = {
    frameAgeP50Ms: age?.p50Ms ?? null,
    frameAgeP99Ms: age === null ? null : (age.p99Ms ?? age.maxMs),
    jitterP99Ms: deadline?.jitter == null ? null : (deadline.jitter.p99Ms ?? deadline.jitter.maxMs),
    jitterMeanMs: deadline?.jitter?.meanMs ?? null,
    longestGapMs: deadline?.longestGapMs ?? null,
    missedShare: deadline?.missedShare ?? null,
    deadlineMs: deadline?.deadlineMs ?? null,
    sendLagP99Ms,
    sentPerSecond: open?.achievedRatePerSecond ?? null,
    deliveredPerSecond: open?.deliveredRatePerSecond ?? null,
  };
  const judged = (verdict: ProbeVerdict, reason: string) => ({ verdict, reason, figures });
  if (!section.ok)
    return judged(
      'failed',
      `FAILED: ${section.failure ?? `${section.lostCount} lost, ${section.corruptCount} corrupt`}`,
    );
  if (open === null || deadline === null) return judged('failed', 'no open-loop deadline figures');
  if (open.overloaded)
    return judged(
      'overloaded',
      `overloaded: sent ${fixed(open.achievedRatePerSecond, 0)}/s, delivered ` +
        `${fixed(open.deliveredRatePerSecond, 0)}/s of ${open.ratePerSecond}/s`,
    );
  if (sendLagP99Ms !== null && sendLagP99Ms > deadline.deadlineMs)
    return judged(
      'send lag',
      `send lag p99 ${sendLagP99Ms.toFixed(2)} ms over the ${deadline.deadlineMs.toFixed(2)} ms deadline`,
    );
  const missed =
    `missed ${percent(deadline.missedShare)} (${deadline.lateCount} late, ${deadline.undeliveredCount} undelivered ` +
    `of ${deadline.framesSent})`;
  if (deadline.missedShare === null || deadline.missedShare > deadline.allowedLateShare)
    return judged('missed', `${missed}, over ${percent(deadline.allowedLateShare)}`);
  return judged('sustained', missed);
}

/** Frames a probe at `ratePerSecond` sends: `seconds` of schedule, at least `minFrames` (so a 1 % share is 2). */
export function probeFrames(ratePerSecond: number, seconds: number, minFrames: number): number {
  return Math.max(minFrames, Math.ceil(ratePerSecond * seconds));
}

/**
 * The interval of the median of `values` (one per round): the project's 95 % order-statistics interval from 6 values
 * (medianInterval); below that, the least and the most, which hold the median with probability 1 − 2^(1−n) (n = 5:
 * 93.75 %), as no narrower pair reaches 95 %; null for fewer than 2 values.
 */
export function sustainedInterval(values: readonly number[]): MedianInterval | null {
  if (values.length >= 6) return medianInterval(values);
  if (values.length < 2) return null;
  return { low: Math.min(...values), high: Math.max(...values), coverage: 1 - 2 ** (1 - values.length) };
}

/** Frame age and jitter at one rate: medians over the probes that ran there. */
export interface RateFigures {
  /** The rate; under `atSustained`, the median of the rounds' own sustainable rates. */
  ratePerSecond: number | null;
  probes: number;
  frameAgeP50Ms: number | null;
  frameAgeP99Ms: number | null;
  jitterP99Ms: number | null;
  missedShare: number | null;
}

/** A transport and image size over the rounds. */
export interface CapacitySummary {
  transport: string;
  sizeBytes: number;
  rounds: number;
  /** Each round's sustainable rate (its highest passed probe); 0 for a round that failed at the floor. */
  perRound: number[];
  /** Their median; 0 when most rounds fell below the floor. */
  sustainedPerSecond: number | null;
  /** The median's interval (see sustainedInterval); null under 2 rounds. */
  interval: MedianInterval | null;
  belowFloorRounds: number;
  atCapRounds: number;
  /** Each round's figures at its own sustainable rate, their medians. */
  atSustained: RateFigures | null;
  /** Figures at each camera rate below `sustainedPerSecond`, from every probe at that rate. */
  cameraRates: RateFigures[];
  /** What ended each round's climb: the verdict of its lowest failed rate, or 'cap'. */
  limitedBy: Partial<Record<Exclude<ProbeVerdict, 'sustained'> | 'cap', number>>;
}

/** The medians of `probes`' figures (which may be of different rates: `ratePerSecond` is said by the caller). */
function rateFigures(ratePerSecond: number | null, probes: readonly CapacityProbe[]): RateFigures {
  const median = (of: (f: ProbeFigures) => number | null): number | null =>
    medianOf(probes.flatMap((p) => (p.figures === null ? [] : (of(p.figures) ?? [])))) ?? null;
  return {
    ratePerSecond,
    probes: probes.length,
    frameAgeP50Ms: median((f) => f.frameAgeP50Ms),
    frameAgeP99Ms: median((f) => f.frameAgeP99Ms),
    jitterP99Ms: median((f) => f.jitterP99Ms),
    missedShare: median((f) => f.missedShare),
  };
}

/** Each transport and size's summary from every probe of the part, in the order of `transports` within `sizes`. */
export function summarizeCapacity(
  bounds: SearchBounds,
  transports: readonly string[],
  sizes: readonly number[],
  probes: readonly CapacityProbe[],
): CapacitySummary[] {
  return sizes.flatMap((sizeBytes) =>
    transports.map((transport): CapacitySummary => {
      const own = probes.filter((p) => p.transport === transport && p.sizeBytes === sizeBytes);
      const rounds = [...new Set(own.map((p) => p.round))].sort((a, b) => a - b);
      const limitedBy: CapacitySummary['limitedBy'] = {};
      const atOwnRate: CapacityProbe[] = [];
      let belowFloorRounds = 0;
      let atCapRounds = 0;
      const perRound = rounds.map((round) => {
        const searched = own.filter((p) => p.round === round && p.purpose === 'search');
        const outcome = searchOutcome(
          bounds,
          searched.map((p): SearchProbe => ({ ratePerSecond: p.ratePerSecond, sustained: p.verdict === 'sustained' })),
        );
        if (outcome.belowFloor) belowFloorRounds++;
        if (outcome.atCap) atCapRounds++;
        const stop = searched.find((p) => p.ratePerSecond === outcome.failedPerSecond);
        const why = stop === undefined ? 'cap' : (stop.verdict as Exclude<ProbeVerdict, 'sustained'>);
        limitedBy[why] = (limitedBy[why] ?? 0) + 1;
        const at = searched.find((p) => p.ratePerSecond === outcome.sustainedPerSecond);
        if (at !== undefined) atOwnRate.push(at);
        return outcome.sustainedPerSecond ?? 0;
      });
      const sustainedPerSecond = medianOf(perRound) ?? null;
      return {
        transport,
        sizeBytes,
        rounds: rounds.length,
        perRound,
        sustainedPerSecond,
        interval: sustainedInterval(perRound),
        belowFloorRounds,
        atCapRounds,
        atSustained: atOwnRate.length === 0 ? null : rateFigures(sustainedPerSecond, atOwnRate),
        cameraRates: CAMERA_RATES.filter((rate) => sustainedPerSecond !== null && rate < sustainedPerSecond).map(
          (rate) =>
            rateFigures(
              rate,
              own.filter((p) => p.ratePerSecond === rate),
            ),
        ),
        limitedBy,
      };
    }),
  );
}

/**
 * The table's header: one row per transport and size; a camera rate's cell is its frame age p50/p99 · jitter p99, ms.
 */
export const CAPACITY_HEADER = [
  'Transport',
  'Image',
  'Sustained fps',
  'Interval',
  'Age p50/p99 ms',
  'Jitter p99 ms',
  ...CAMERA_RATES.map((rate) => `@${rate} fps`),
  'Limited by',
] as const;

/** A rate as the table says it: "< floor" for a round below the floor, "≥ cap" at the cap, else whole fps. */
function rateText(bounds: SearchBounds, ratePerSecond: number, atCap: boolean): string {
  if (ratePerSecond < bounds.floorPerSecond) return `< ${bounds.floorPerSecond}`;
  return `${atCap && ratePerSecond >= bounds.capPerSecond ? '≥ ' : ''}${ratePerSecond.toFixed(0)}`;
}

/** A summary's row of the table (`label`: the transport's name as shown, `size`: the image size as shown). */
export function capacityRow(bounds: SearchBounds, s: CapacitySummary, label: string, size: string): string[] {
  const figures = (f: RateFigures | undefined | null): string =>
    f === undefined || f === null || f.probes === 0
      ? '-'
      : `${fixed(f.frameAgeP50Ms, 2)}/${fixed(f.frameAgeP99Ms, 2)} · ${fixed(f.jitterP99Ms, 2)}`;
  const limits = Object.entries(s.limitedBy)
    .map(([why, rounds]) => `${why} ×${rounds}`)
    .join(', ');
  return [
    label,
    size,
    s.sustainedPerSecond === null ? '-' : rateText(bounds, s.sustainedPerSecond, s.atCapRounds > 0),
    s.interval === null
      ? '-'
      : `${rateText(bounds, s.interval.low, false)}–${rateText(bounds, s.interval.high, s.atCapRounds > 0)} ` +
        `(${(s.interval.coverage * 100).toFixed(s.interval.coverage >= 0.995 ? 1 : 0)} %)`,
    s.atSustained === null ? '-' : `${fixed(s.atSustained.frameAgeP50Ms, 2)}/${fixed(s.atSustained.frameAgeP99Ms, 2)}`,
    fixed(s.atSustained?.jitterP99Ms, 2),
    ...CAMERA_RATES.map((rate) => figures(s.cameraRates.find((f) => f.ratePerSecond === rate))),
    limits || '-',
  ];
}
