import { build as buildHistogram, encodeIntoCompressedBase64 } from 'hdr-histogram-js';
import type { SectionPlan, SectionResult } from '../../services/core/model/section.js';
import type { SecondSample } from '../../services/core/model/series.js';
import type { LatencySummary } from '../../services/core/model/stats.js';
import { fixturePlan, fixtureSection } from './fixtures.js';

// Sections in the two shapes report.html reads: per-second series with HDR histograms (files
// written since the per-image records moved to a file of their own), and per-image records inline
// (older files). The synthetic ones stand for runs of millions of images without their cost: a
// page's size and drawing depend on the seconds and transports, not on the images.

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32). */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a synthetic section's run looks like. */
export interface SyntheticRun {
  /** Seconds of its measured span. */
  seconds: number;
  /** Images arriving each second (about; ±10 %). */
  imagesPerSecond: number;
  /** Typical one-way time; the round trip is 0.1 ms more. */
  typicalMs: number;
  seed: number;
  /** Seconds [from, to) in which nothing arrived: absent from the series, a gap in the charts. */
  stall?: readonly [number, number];
}

/**
 * A per-second series like the receiver's: one sample a second with arrivals, ±10 % images, a slow second now and then.
 */
export function syntheticSeries(run: SyntheticRun, imageSizeBytes: number): SecondSample[] {
  const next = random(run.seed);
  const samples: SecondSample[] = [];
  for (let second = 0; second < run.seconds; second++) {
    if (run.stall !== undefined && second >= run.stall[0] && second < run.stall[1]) continue;
    const images = Math.max(1, Math.round(run.imagesPerSecond * (0.9 + 0.2 * next())));
    const p50Ms = run.typicalMs * (0.95 + 0.1 * next());
    const slow = next() < 0.03 ? 3 + 5 * next() : 1;
    const distribution = (extraMs: number) => ({
      minMs: p50Ms * 0.6 + extraMs,
      p50Ms: p50Ms + extraMs,
      p99Ms: images >= 100 ? p50Ms * 2.2 * slow + extraMs : null,
      maxMs: p50Ms * 3 * slow + extraMs,
    });
    samples.push({
      second,
      images,
      intactBytes: images * imageSizeBytes,
      oneWay: distribution(0),
      rtt: distribution(0.1),
    });
  }
  return samples;
}

/**
 * An encoded HDR histogram (whole ns, 3 significant digits) of `count` times around `typicalMs`, 1 % of them 2 to 10
 * times slower.
 */
export function syntheticHistogram(typicalMs: number, count: number, seed: number): string {
  const next = random(seed);
  const histogram = buildHistogram({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000_000,
    numberOfSignificantValueDigits: 3,
  });
  // 10,000 drawn values, each standing for count ÷ 10,000 times (the rest on the last).
  const draws = 10_000;
  const each = Math.floor(count / draws);
  for (let i = 0; i < draws; i++) {
    const ms = next() < 0.01 ? typicalMs * (2 + 8 * next()) : typicalMs * (0.7 + 0.6 * next());
    histogram.recordValueWithCount(Math.round(ms * 1e6), i === draws - 1 ? count - each * (draws - 1) : each);
  }
  const encoded = encodeIntoCompressedBase64(histogram);
  histogram.destroy();
  return encoded;
}

/** A latency summary around `typicalMs` for a table row, shaped as the histogram above. */
function syntheticSummary(typicalMs: number, count: number): LatencySummary {
  return {
    count,
    p50Ms: typicalMs,
    p90Ms: typicalMs * 1.2,
    p99Ms: typicalMs * 1.3,
    p999Ms: typicalMs * 5,
    minMs: typicalMs * 0.7,
    maxMs: typicalMs * 10,
    meanMs: typicalMs * 1.05,
    stdDevMs: typicalMs * 0.3,
  };
}

/**
 * A section of millions of images as a file since the per-image records moved out holds it: its
 * counts and figures for the table, its series and histograms for the charts, no per-image record.
 */
export function syntheticSection(plan: SectionPlan, run: SyntheticRun, cost: SectionResult['cost']): SectionResult {
  const series = syntheticSeries(run, plan.imageSizeBytes);
  const images = series.reduce((n, s) => n + s.images, 0);
  const totalMs = run.seconds * 1000;
  const shape = fixtureSection(plan, [run.typicalMs, run.typicalMs], null, cost);
  return withSeries(
    {
      ...shape,
      imageCount: images,
      okCount: images,
      totalMs,
      latency: syntheticSummary(run.typicalMs, images),
      rtt: syntheticSummary(run.typicalMs + 0.1, images),
      throughputMBps: (images * plan.imageSizeBytes) / 1e3 / totalMs,
      imagesPerSecond: (images * 1e3) / totalMs,
      throughputIndicative: false,
    },
    series,
    {
      oneWayNs: syntheticHistogram(run.typicalMs, images, run.seed + 1),
      rttNs: syntheticHistogram(run.typicalMs + 0.1, images, run.seed + 2),
    },
  );
}

/** A section as files since the per-image records moved out hold it: series and histograms, no `images`. */
export function withSeries(
  section: SectionResult,
  series: SecondSample[],
  histograms: NonNullable<SectionResult['histograms']>,
): SectionResult {
  const { images: _images, ...rest } = section as Omit<SectionResult, 'images'> & { images?: unknown };
  return { ...rest, series, histograms } as SectionResult;
}

/**
 * A section as files written before per-second series held it: every image's record inline (one-way
 * time, round trip 0.1 ms more, lost where null), no series or histograms.
 */
export function asLegacy(section: SectionResult, timesMs: readonly (number | null)[]): SectionResult {
  const { series: _series, histograms: _histograms, ...rest } = section;
  const images = timesMs.map((timeMs, i) => ({
    image: i + 1,
    timeMs,
    rttMs: timeMs === null ? null : timeMs + 0.1,
    status: timeMs === null ? ('lost' as const) : ('ok' as const),
  }));
  return { ...rest, images } as unknown as SectionResult;
}

/**
 * An encoded HDR histogram (whole ns, 1 ns to an hour, 3 significant digits) of the given times, as the receiver writes
 * it.
 */
export function histogramOf(timesMs: readonly number[]): string {
  const histogram = buildHistogram({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000_000,
    numberOfSignificantValueDigits: 3,
  });
  for (const ms of timesMs) histogram.recordValue(Math.round(ms * 1e6));
  const encoded = encodeIntoCompressedBase64(histogram);
  histogram.destroy();
  return encoded;
}

const sideCost = (cpuMsPerImage: number, peakRssMiB: number) => ({
  cpuUserMs: 1,
  cpuSystemMs: 1,
  cpuMs: 2,
  cpuMsPerImage,
  peakRssBytes: peakRssMiB * 1024 * 1024,
  eventLoopUtilization: 0.5,
});

/** The five transports of the synthetic runs, each with its typical one-way time. */
export const LARGE_RUN_TRANSPORTS = [
  { transport: 'websocket', label: 'WebSocket', typicalMs: 2.5 },
  { transport: 'grpc', label: 'gRPC', typicalMs: 5.1 },
  { transport: 'zeromq', label: 'ZeroMQ', typicalMs: 0.8 },
  { transport: 'redis', label: 'Redis', typicalMs: 2.3 },
  { transport: 'tcp', label: 'TCP', typicalMs: 0.6, baseline: true },
] as const;

/**
 * The sections of a run of 20 million images: five transports of about 4,000,000 each, 400 s at
 * 10,000 images a second (ZeroMQ's with a 5 s stall); `slower` scales every time, for a before run.
 */
export function twentyMillionSections(slower = 1): SectionResult[] {
  return LARGE_RUN_TRANSPORTS.map((t, index) =>
    syntheticSection(
      fixturePlan({
        transport: t.transport,
        label: t.label,
        baseline: 'baseline' in t,
        sectionId: index + 1,
        window: 16,
      }),
      {
        seconds: 400,
        imagesPerSecond: 10_000,
        typicalMs: t.typicalMs * slower,
        seed: index * 7 + Math.round(slower * 100),
        ...(t.transport === 'zeromq' ? { stall: [200, 205] as const } : {}),
      },
      { transmitter: sideCost(0.05, 120), receiver: sideCost(0.08, 150), broker: null },
    ),
  );
}

/** The section of a day's soak: 86,400 s at about 231 images a second, 20 million images. */
export function soakSection(): SectionResult {
  return syntheticSection(
    fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, window: 16 }),
    { seconds: 86_400, imagesPerSecond: 231, typicalMs: 0.6, seed: 86_400 },
    { transmitter: sideCost(0.05, 120), receiver: sideCost(0.08, 150), broker: null },
  );
}
