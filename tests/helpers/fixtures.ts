import { parseConfig } from '../../services/core/config/config.js';
import {
  RESULTS_SCHEMA_VERSION,
  summarizeTransports,
  type HostFacts,
  type RunReport,
} from '../../services/core/report/report.js';
import type { ImageRecord, SectionExtras, SectionPlan, SectionResult } from '../../services/core/model/section.js';
import { SectionRecorder, type SectionSink } from '../../services/core/model/recorder.js';
import { summarizeLatency } from '../../services/core/model/stats.js';
import type { WarmupOutcome } from '../../services/core/model/warmup.js';
import { transports } from '../../services/transports/index.js';

/** The outcome of a warm-up of no images (WARMUP=0): the recorded images start at seq 0. */
export const NO_WARMUP: WarmupOutcome = { images: 0, ms: 0, steady: null, mediansMs: null };

/** A host as a report names it. */
export const fixtureHost = (hostname: string): HostFacts => ({
  hostname,
  cpuModel: 'Test CPU',
  cores: 2,
  totalMemoryBytes: 24 * 1024 ** 3,
  platform: 'linux-x64',
  kernel: '6.1.0',
  nodeVersion: 'v20.20.2',
  nodeFlags: ['--no-concurrent-marking'],
  bootId: 'boot-1',
  libraries: { ws: '8.23.0', zeromq: '6.8.0' },
});

/** One call of a {@link SectionSink}'s `recorded`, as it came (times in whole ns). */
export interface SinkRecord {
  image: number;
  status: ImageRecord['status'];
  oneWayNs: number | null;
  rttNs: number | null;
  dueLagNs: number | null;
}

/** What a {@link collectingSink} heard. */
export interface CollectedImages {
  sink: SectionSink;
  /** Each recorded image's record (ms), sorted by image: what the section's CSV holds. */
  records: ImageRecord[];
  /** The `recorded` calls in the order they came (the CSV's line order). */
  calls: SinkRecord[];
  /** The `arrived` calls in the order they came (output.log's per-image lines). */
  arrivals: { image: number; oneWayNs: number; intact: boolean }[];
}

/**
 * A {@link SectionSink} that keeps what a section's recorder sends it, as the receiver's files
 * would: `records` sorted by image. An image recorded twice throws: each goes to the CSV once.
 */
export function collectingSink(): CollectedImages {
  const collected: CollectedImages = {
    records: [],
    calls: [],
    arrivals: [],
    sink: {
      arrived(image, oneWayNs, intact) {
        collected.arrivals.push({ image, oneWayNs, intact });
      },
      recorded(image, status, oneWayNs, rttNs, dueLagNs) {
        if (collected.calls.some((c) => c.image === image)) throw new Error(`image ${image} recorded twice`);
        collected.calls.push({ image, status, oneWayNs, rttNs, dueLagNs });
        const record: ImageRecord = {
          image,
          timeMs: oneWayNs === null ? null : oneWayNs / 1e6,
          rttMs: rttNs === null ? null : rttNs / 1e6,
          status,
        };
        const at = collected.records.findIndex((r) => r.image > image);
        if (at < 0) collected.records.push(record);
        else collected.records.splice(at, 0, record);
      },
    },
  };
  return collected;
}

/** A section plan for a 545,792-byte image, with overrides. */
export function fixturePlan(overrides: Partial<SectionPlan> & Pick<SectionPlan, 'transport' | 'label'>): SectionPlan {
  return {
    sectionId: 1,
    baseline: false,
    repeat: 1,
    imageCount: 2,
    warmup: { mode: 'images', images: 0 },
    imageSizeBytes: 545_792,
    window: 1,
    ratePerSecond: null,
    clients: 1,
    receivers: 1,
    receiverIndex: 0,
    clock: null,
    ...overrides,
  };
}

/**
 * A section whose images took the given times (ms; null = lost), each acknowledged 0.1 ms after it
 * arrived; image n is sent 1 ms after image n − 1, or at its ack when that is later (WINDOW 1).
 */
export function fixtureSection(
  plan: SectionPlan,
  timesMs: readonly (number | null)[],
  failure: string | null = null,
  cost: SectionResult['cost'] = { transmitter: null, receiver: null, broker: null },
): SectionResult {
  const recorder = new SectionRecorder({ ...plan, imageCount: timesMs.length });
  // No warm-up images: the transmitter announces the end of the (empty) warm-up before the first recorded one.
  recorder.beginRecording(NO_WARMUP, 0n);
  // Round trips: the one-way time and 0.1 ms back, for every image that arrived.
  const rttNs = timesMs.map((timeMs) => (timeMs === null ? null : Math.round(timeMs * 1e6) + 100_000));
  let nextSendNs = 0n;
  const sentAtNs: bigint[] = [];
  timesMs.forEach((timeMs, seq) => {
    const sentAt = nextSendNs;
    sentAtNs.push(sentAt);
    nextSendNs = sentAt + 1_000_000n;
    if (timeMs === null) return;
    nextSendNs = sentAt + BigInt(Math.max(1_000_000, rttNs[seq]!));
    recorder.record(
      { sectionId: plan.sectionId, seq, sizeBytes: plan.imageSizeBytes, checksum: 0n, sentAtNs: sentAt },
      sentAt + BigInt(Math.round(timeMs * 1e6)),
    );
    recorder.verified(seq, true);
  });
  return resultWith(recorder, failure, { cost, rttNs, sentAtNs });
}

/**
 * The transmitter's side of a section given per image, as the tests write it: each round trip (ns, null without an
 * ack), under RATE each stamp − due (ns).
 */
export interface PerImageExtras extends SectionExtras {
  rttNs?: readonly (number | null)[];
  dueLagNs?: readonly (number | null)[] | null;
  /** Each image's stamp (ns, the transmitter's clock), for the mean in flight the transmitter would compute. */
  sentAtNs?: readonly bigint[];
}

/**
 * Ends a recorder's section the way the receiver does, from per-image figures: the round trips go
 * in as the transmitter's batches would bring them, and the transmitter's own figures (send lag,
 * round trips from due, mean in flight) are computed as it would.
 */
export function resultWith(
  recorder: SectionRecorder,
  failure: string | null,
  extras: PerImageExtras = {},
): SectionResult {
  const { rttNs = [], dueLagNs, sentAtNs, ...rest } = extras;
  const records: number[] = [];
  const lagsMs: number[] = [];
  const rttFromDueMs: number[] = [];
  let rttSumNs = 0;
  let firstNs: bigint | undefined;
  let lastAckNs: bigint | undefined;
  rttNs.forEach((rtt, index) => {
    const lag = dueLagNs?.[index] ?? null;
    if (lag !== null) lagsMs.push(lag / 1e6);
    if (rtt === null) return;
    records.push(index + 1, rtt, lag ?? Number.NaN);
    if (lag !== null) rttFromDueMs.push((rtt + lag) / 1e6);
    rttSumNs += rtt;
    const sent = sentAtNs?.[index];
    if (sent !== undefined) {
      if (firstNs === undefined || sent < firstNs) firstNs = sent;
      const ack = sent + BigInt(rtt);
      if (lastAckNs === undefined || ack > lastAckNs) lastAckNs = ack;
    }
  });
  recorder.roundTrips(Float64Array.from(records));
  const meanInFlight =
    firstNs !== undefined && lastAckNs !== undefined && lastAckNs > firstNs
      ? rttSumNs / Number(lastAckNs - firstNs)
      : null;
  return recorder.result(failure, {
    meanInFlight,
    ...(dueLagNs
      ? { sendLag: summarizeLatency(lagsMs) ?? null, rttFromDue: summarizeLatency(rttFromDueMs) ?? null }
      : {}),
    roundTripsShipped: records.length / 3,
    ...rest,
  });
}

/** A whole report around the given sections, as the receiver would build it. */
export function fixtureReport(
  sections: SectionResult[],
  options: { repeat?: number; startedAt?: string } = {},
): RunReport {
  const order = [...new Set(sections.map((s) => s.transport))];
  // No sections: the default run (an empty TRANSPORTS is refused).
  const parsed = parseConfig(
    { ...(order.length > 0 ? { TRANSPORTS: order.join(',') } : {}), REPEAT: String(options.repeat ?? 1) },
    transports,
  );
  if (!parsed.ok) throw new Error('fixture config');
  return {
    schemaVersion: RESULTS_SCHEMA_VERSION,
    run: {
      startedAt: options.startedAt ?? '2026-11-23T08:00:00.000Z',
      imageDescription: 'assets/sample.png',
      imageSizeBytes: 545_792,
      imageCount: sections[0]?.imageCount ?? 0,
      window: 1,
      warmup: { mode: 'images', images: 0 },
      repeat: options.repeat ?? 1,
      transports: order,
      arrivalNotes: [],
      receivers: 1,
      receiverIndex: 0,
      config: parsed.config,
      hosts: { transmitter: fixtureHost('tx'), receiver: fixtureHost('rx') },
    },
    finishedAt: '2026-11-23T08:00:01.000Z',
    stopReason: null,
    sections,
    transports: summarizeTransports(sections, order),
  };
}

/**
 * Receiver clock 5 ms ahead of the transmitter's: applied before the section (± 0.150 ms), +5.040 ± 0.120 ms after it,
 * so every one-way time is ± 0.160 ms.
 */
export const TWO_CLOCKS = {
  before: { offsetNs: 5_000_000, uncertaintyNs: 150_000, roundTripNs: 300_000, samples: 8, applied: true },
  after: { offsetNs: 5_040_000, uncertaintyNs: 120_000, roundTripNs: 240_000, samples: 8 },
} as const;

/**
 * A section across two hosts: images of 1.2 and 2.0 ms one-way (stamps on the transmitter clock, arrivals on the
 * receiver's), round trips 1.5 and 2.3 ms, the second sent at the first's ack.
 */
export function twoClockSection(
  overrides: Partial<SectionPlan> & Pick<SectionPlan, 'transport' | 'label'>,
): SectionResult {
  const recorder = new SectionRecorder(fixturePlan({ ...overrides, clock: { ...TWO_CLOCKS.before } }));
  recorder.beginRecording(NO_WARMUP, 0n);
  const offsetNs = BigInt(TWO_CLOCKS.before.offsetNs);
  recorder.record({ sectionId: 1, seq: 0, sizeBytes: 545_792, checksum: 0n, sentAtNs: 0n }, offsetNs + 1_200_000n);
  recorder.record(
    { sectionId: 1, seq: 1, sizeBytes: 545_792, checksum: 0n, sentAtNs: 1_500_000n },
    offsetNs + 3_500_000n,
  );
  recorder.verified(0, true);
  recorder.verified(1, true);
  return resultWith(recorder, null, {
    rttNs: [1_500_000, 2_300_000],
    sentAtNs: [0n, 1_500_000n],
    clockAfter: { ...TWO_CLOCKS.after },
  });
}

/** The CPU and memory of both sides, and no broker: the cost every report fixture carries. */
export const fixtureCost = {
  transmitter: {
    cpuUserMs: 3,
    cpuSystemMs: 1,
    cpuMs: 4,
    cpuMsPerImage: 2,
    peakRssBytes: 100 * 1024 * 1024,
    eventLoopUtilization: 0.5,
  },
  receiver: {
    cpuUserMs: 2,
    cpuSystemMs: 1,
    cpuMs: 3,
    cpuMsPerImage: 1.5,
    peakRssBytes: 80 * 1024 * 1024,
    eventLoopUtilization: 0.25,
  },
  broker: null,
};
