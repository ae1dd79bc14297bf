import type { SectionRecorder } from './recorder.js';
import type { SectionResult } from './section.js';
import { countsAtOrBelowNs, type LatencySummary } from './stats.js';

// The receiver's figures for GET /metrics: every section's recorded images since the process
// started, by transport, read when scraped. Nothing here runs per image: a finished section adds
// its result once, and the open section is read from its recorder at each scrape. Pure.

/**
 * Upper bounds of the time histograms' buckets in seconds: 1, 2.5 and 5 per decade from 10 µs to 10 s (loopback
 * images take tens of µs; prom-client's default buckets start at 5 ms).
 */
export const TIME_BUCKET_BOUNDS_SECONDS: readonly number[] = [
  0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
  5, 10,
];

const TIME_BUCKET_BOUNDS_NS = TIME_BUCKET_BOUNDS_SECONDS.map((seconds) => Math.round(seconds * 1e9));

/** What became of a recorded image: arrived intact, arrived corrupt (or unverified), or never arrived. */
export const VERDICTS = ['intact', 'corrupt', 'lost'] as const;
/** One of {@link VERDICTS}. */
export type Verdict = (typeof VERDICTS)[number];

/** A distribution of times as a Prometheus histogram holds it. */
export interface TimeBuckets {
  count: number;
  sumSeconds: number;
  /** Times at or below each of {@link TIME_BUCKET_BOUNDS_SECONDS}, in its order. */
  atOrBelow: number[];
}

/** One transport's recorded images (one section's, or all since the process started) for the metrics. */
export interface TransportFigures {
  transport: string;
  images: Record<Verdict, number>;
  /** Images × the section's image size: a corrupt image counts at the size it should have had. */
  bytes: Record<Verdict, number>;
  /** One-way times of the intact images. */
  oneWay: TimeBuckets;
  /** Round trips of the images whose arrival and round trip both reached the record. */
  roundTrip: TimeBuckets;
}

/** A section's figures, and what tells its reading apart from another section's (its recorder). */
export interface KeyedFigures {
  key: object;
  figures: TransportFigures;
}

function noTimes(): TimeBuckets {
  return { count: 0, sumSeconds: 0, atOrBelow: TIME_BUCKET_BOUNDS_NS.map(() => 0) };
}

function byVerdict(count: (verdict: Verdict) => number): Record<Verdict, number> {
  return { intact: count('intact'), corrupt: count('corrupt'), lost: count('lost') };
}

/** A transport's figures before any image: every count 0. */
export function noFigures(transport: string): TransportFigures {
  return {
    transport,
    images: byVerdict(() => 0),
    bytes: byVerdict(() => 0),
    oneWay: noTimes(),
    roundTrip: noTimes(),
  };
}

// A finished section's times from its summary (count and exact mean) and its histogram.
function timesOf(summary: LatencySummary | null, encodedNs: string | null): TimeBuckets {
  if (summary === null || summary.count === 0) return noTimes();
  return {
    count: summary.count,
    sumSeconds: (summary.count * summary.meanMs) / 1e3,
    atOrBelow: countsAtOrBelowNs(encodedNs, TIME_BUCKET_BOUNDS_NS),
  };
}

/** A finished section's figures, from its result as this receiver recorded it. */
export function resultFigures(result: SectionResult): TransportFigures {
  const images = { intact: result.okCount, corrupt: result.corruptCount, lost: result.lostCount };
  return {
    transport: result.transport,
    images,
    bytes: byVerdict((verdict) => images[verdict] * result.imageSizeBytes),
    oneWay: timesOf(result.latency, result.histograms.oneWayNs),
    roundTrip: timesOf(result.rtt, result.histograms.rttNs),
  };
}

/**
 * An open section's figures so far, read from its recorder: the same figures its result will hold, bar the images
 * still awaiting a verdict and the lost ones, known only at its end.
 */
export function recordingFigures(recorder: SectionRecorder): TransportFigures {
  const soFar = recorder.recordSoFar(TIME_BUCKET_BOUNDS_NS);
  const images = { intact: soFar.okCount, corrupt: soFar.corruptCount, lost: 0 };
  const times = (t: typeof soFar.oneWay): TimeBuckets => ({
    count: t.count,
    sumSeconds: t.sumMs / 1e3,
    atOrBelow: t.atOrBelow,
  });
  return {
    transport: recorder.plan.transport,
    images,
    bytes: byVerdict((verdict) => images[verdict] * recorder.plan.imageSizeBytes),
    oneWay: times(soFar.oneWay),
    roundTrip: times(soFar.roundTrip),
  };
}

function addTimes(into: TimeBuckets, from: TimeBuckets): void {
  into.count += from.count;
  into.sumSeconds += from.sumSeconds;
  for (const [index, count] of from.atOrBelow.entries()) into.atOrBelow[index]! += count;
}

function addFigures(into: TransportFigures, from: TransportFigures): void {
  for (const verdict of VERDICTS) {
    into.images[verdict] += from.images[verdict];
    into.bytes[verdict] += from.bytes[verdict];
  }
  addTimes(into.oneWay, from.oneWay);
  addTimes(into.roundTrip, from.roundTrip);
}

function copyOf(figures: TransportFigures): TransportFigures {
  const copy = noFigures(figures.transport);
  addFigures(copy, figures);
  return copy;
}

/**
 * Every recorded image since the process started, by transport, so the counters never go back: a
 * finished section's result is added once at its end, and the open section's figures so far are
 * added at each reading. A section that closed without a result (a run ended over it) keeps the
 * figures it had at the last reading.
 */
export class MetricTotals {
  private readonly finished = new Map<string, TransportFigures>();
  private lastOpen: KeyedFigures | undefined;

  /** `transports` are listed from the start, at 0, in this order; others join as their sections come. */
  constructor(transports: readonly string[]) {
    for (const transport of transports) this.finished.set(transport, noFigures(transport));
  }

  /** The section of `key` ended with these figures (its result's): they join the totals for good. */
  sectionEnded(key: object, figures: TransportFigures): void {
    this.totalOf(figures.transport, (total) => addFigures(total, figures));
    if (this.lastOpen?.key === key) this.lastOpen = undefined;
  }

  /** The totals by transport, `open` (the section recording now, if any) included. */
  read(open: KeyedFigures | undefined): TransportFigures[] {
    // A section read before that is neither open now nor ended: what it had then stays counted.
    if (this.lastOpen !== undefined && this.lastOpen.key !== open?.key)
      this.sectionEnded(this.lastOpen.key, this.lastOpen.figures);
    this.lastOpen = open;
    if (open !== undefined) this.totalOf(open.figures.transport, () => {});
    return [...this.finished.values()].map((total) => {
      const copy = copyOf(total);
      if (open?.figures.transport === total.transport) addFigures(copy, open.figures);
      return copy;
    });
  }

  private totalOf(transport: string, change: (total: TransportFigures) => void): void {
    let total = this.finished.get(transport);
    if (total === undefined) {
      total = noFigures(transport);
      this.finished.set(transport, total);
    }
    change(total);
  }
}
