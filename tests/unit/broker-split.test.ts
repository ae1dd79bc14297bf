import { describe, expect, it } from 'vitest';
import {
  BROKER_CLOCK_NOT_OURS,
  BrokerSplitRecorder,
  mappingErrorNs,
  mergeBrokerSplits,
  splitOneWay,
  type BrokerSplit,
  type WallClockSample,
} from '../../services/core/model/broker-split.js';
import { sampleWallClock } from '../../services/receiver/wall-clock.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import { fanOutOf, type SectionPlan } from '../../services/core/model/section.js';
import { brokerSplitText, renderSectionFooter } from '../../services/core/report/text/output-log.js';
import { BROKERS_STAMPING_NOTHING } from '../../services/core/report/wording.js';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';
import { entryIdMs } from '../../services/transports/redis/transport.js';
import { transports } from '../../services/transports/index.js';
import { fixturePlan, fixtureReport, fixtureSection, NO_WARMUP } from '../helpers/fixtures.js';
import type { SectionResult } from '../../services/core/model/section.js';

/** A finished section of two images (1 and 2 ms) of `transport`, with the result's fields `overrides` gives. */
const sectionOf = (transport: string, overrides: Partial<SectionResult> = {}, receiverIndex = 0): SectionResult => ({
  ...fixtureSection(fixturePlan({ transport, label: transport, receiverIndex }), [1, 2]),
  ...overrides,
});

// Wall clock 1,000,000,000,000 ms (2001-09-09) at hrtime 5,000 ns: wall − hrtime = 1e18 − 5,000 ns.
const START: WallClockSample = { hrNs: 5_000n, wallNs: 1_000_000_000_000_000_000n, errorNs: 2_000 };
const WALL_MINUS_HR = START.wallNs - START.hrNs;
/** The broker's wall stamp of a moment given on the receiver's hrtime. */
const wallAt = (hrNs: bigint): bigint => hrNs + WALL_MINUS_HR;

describe('sampleWallClock', () => {
  it("pairs hrtime with the wall clock's next ms tick, at the middle of the reads around it", () => {
    // hrtime advances 300 ns a read; Date.now() ticks from 7 to 8 ms on its fourth read.
    let hr = 0n;
    const wallReads = [7, 7, 7, 8];
    const sample = sampleWallClock(
      () => (hr += 300n),
      () => wallReads.shift() ?? 8,
    );
    // Reads: hr 300 / wall 7 (start), hr 600 / wall 7, hr 900 / wall 7, hr 1200 / wall 8, hr 1500: the tick
    // follows the read at 900 (its wall read showed 7) and precedes the one at 1500.
    expect(sample).toEqual({ hrNs: 1_200n, wallNs: 8_000_000n, errorNs: 300 });
  });

  it('tries the next tick when a read around the first was preempted, and keeps the tighter pair', () => {
    // hrtime advances 300 ns a read, but 4 ms pass before the read after the first tick (7 → 8);
    // the second tick (8 → 9) has no such gap.
    let hr = 0n;
    const hrSteps = [300n, 300n, 4_000_000n, 300n, 300n, 300n, 300n];
    const wallReads = [7, 8, 8, 8, 9];
    const sample = sampleWallClock(
      () => (hr += hrSteps.shift() ?? 300n),
      () => wallReads.shift() ?? 9,
    );
    // First tick: reads hr 300 / wall 7, hr 600 / wall 8, then hr 4,000,600: half gap 2,000,150 ns.
    // Second tick: hr 4,000,900 / wall 8, hr 4,001,200 / wall 8, hr 4,001,500 / wall 9, hr 4,001,800.
    expect(sample).toEqual({ hrNs: 4_001_500n, wallNs: 9_000_000n, errorNs: 300 });
  });

  it('falls back to the middle of the ms read, bound half a ms and the wait, when the clock never ticks', () => {
    let hr = 0n;
    const sample = sampleWallClock(
      () => (hr += 1_000_000n),
      () => 42,
    );
    expect(sample.wallNs).toBe(42_500_000n);
    expect(sample.errorNs).toBeGreaterThanOrEqual(5_500_000);
  });

  it('reads the real clocks within a few ms of Date.now()', () => {
    const sample = sampleWallClock();
    const nowNs = BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() - sample.hrNs);
    expect(Number(sample.wallNs - nowNs)).toBeLessThan(2_000_000);
    expect(sample.errorNs).toBeLessThan(1_000_000);
  });
});

describe('mappingErrorNs', () => {
  it.each([
    ['no end sample: the start error alone', null, 2_000],
    ['no drift: both samples errors', { hrNs: 9_005_000n, wallNs: START.wallNs + 9_000_000n, errorNs: 500 }, 2_500],
    [
      'the wall clock gained 30 µs on hrtime: added',
      { hrNs: 9_005_000n, wallNs: START.wallNs + 9_030_000n, errorNs: 500 },
      32_500,
    ],
    [
      'the wall clock lost 30 µs on hrtime: added as well',
      { hrNs: 9_005_000n, wallNs: START.wallNs + 8_970_000n, errorNs: 500 },
      32_500,
    ],
  ])('%s', (_why, end, expected) => {
    expect(mappingErrorNs(START, end)).toBe(expected);
  });
});

describe('splitOneWay', () => {
  it('splits at a ns stamp mapped onto hrtime: to + from is the one-way time exactly', () => {
    const split = splitOneWay(1_000_000n, 1_700_000n, { atWallNs: wallAt(1_250_000n), resolutionNs: 1 }, START);
    expect(split).toEqual({ toBrokerNs: 250_000, fromBrokerNs: 450_000 });
  });

  it("takes a ms stamp at the middle of its step (Redis's ID truncates the server's time)", () => {
    const split = splitOneWay(1_000_000n, 4_000_000n, { atWallNs: wallAt(2_000_000n), resolutionNs: 1_000_000 }, START);
    expect(split).toEqual({ toBrokerNs: 1_500_000, fromBrokerNs: 1_500_000 });
  });
});

describe('BrokerSplitRecorder', () => {
  it('summarises both parts, counts parts below 0 and below −bound, and states step and bound', () => {
    const recorder = new BrokerSplitRecorder(START);
    // 0.2 ms to the broker and 0.8 ms from it, ten times; one image whose to-part is −1 µs (within the 2.0005 µs
    // bound) and one whose from-part is −10 µs (beyond it).
    for (let i = 0n; i < 10n; i++) {
      const sent = i * 10_000_000n;
      recorder.record(sent, sent + 1_000_000n, { atWallNs: wallAt(sent + 200_000n), resolutionNs: 1 });
    }
    recorder.record(200_000_000n, 200_500_000n, { atWallNs: wallAt(199_999_000n), resolutionNs: 1 });
    recorder.record(300_000_000n, 300_500_000n, { atWallNs: wallAt(300_510_000n), resolutionNs: 1 });
    expect(recorder.size).toBe(12);
    const { split, notSplit } = recorder.result(null);
    expect(notSplit).toBeNull();
    expect(split).toMatchObject({
      count: 12,
      resolutionMs: 1e-6,
      clockBoundMs: 0.0020005,
      belowZero: { toBroker: 1, fromBroker: 1 },
      beyondBound: 1,
    });
    expect(split!.toBroker.p50Ms).toBeCloseTo(0.2, 3);
    expect(split!.fromBroker.p50Ms).toBeCloseTo(0.8, 3);
    // Min and mean keep the parts below 0 as they came.
    expect(split!.toBroker.minMs).toBeCloseTo(-0.001, 9);
    expect(split!.fromBroker.minMs).toBeCloseTo(-0.01, 9);
    expect(split!.histograms.toBrokerNs).toEqual(expect.any(String));
  });

  it('counts stamped images but splits none without a wall-clock pair, and says why', () => {
    const recorder = new BrokerSplitRecorder(undefined, BROKER_CLOCK_NOT_OURS);
    recorder.record(0n, 1_000n, { atWallNs: 500n, resolutionNs: 1 });
    expect(recorder.result(null)).toEqual({ split: null, notSplit: BROKER_CLOCK_NOT_OURS });
  });

  it('reports nothing when no image carried a stamp', () => {
    expect(new BrokerSplitRecorder(START).result(null)).toEqual({ split: null, notSplit: null });
  });
});

const plan: SectionPlan = fixturePlan({ sectionId: 7, transport: 'redis', label: 'Redis', imageSizeBytes: 100 });
const header = (seq: number, sentAtNs: bigint) => ({ sectionId: 7, seq, sizeBytes: 100, checksum: 1n, sentAtNs });

describe('SectionRecorder with broker stamps', () => {
  /** Two images sent at 1 and 11 ms, stamped by the broker 0.5 ms later (Redis: whole ms), in hand 2 ms after send. */
  const recordTwo = (recorder: SectionRecorder): void => {
    recorder.beginRecording(NO_WARMUP, 0n);
    for (const [seq, sentNs] of [
      [0, 1_000_000n],
      [1, 11_000_000n],
    ] as const) {
      // The broker's wall ms: the stamp's moment (sent + 0.5 ms) truncated to its ms; taken at its middle.
      const stampWallMs = (wallAt(sentNs + 500_000n) / 1_000_000n) * 1_000_000n;
      recorder.record(header(seq, sentNs), sentNs + 2_000_000n, { atWallNs: stampWallMs, resolutionNs: 1_000_000 });
      recorder.verified(seq, true);
    }
  };

  it('splits the intact recorded images with the start and end pairs and carries the split in its result', () => {
    const samples = [START, { ...START, hrNs: START.hrNs + 20_000_000n, wallNs: START.wallNs + 20_000_000n }];
    const recorder = new SectionRecorder(plan, undefined, () => samples.shift()!);
    recordTwo(recorder);
    const result = recorder.result(null);
    expect(result.brokerNotSplit).toBeNull();
    expect(result.brokerSplit).toMatchObject({
      count: 2,
      resolutionMs: 1,
      clockBoundMs: 0.504,
      belowZero: { toBroker: 0, fromBroker: 0 },
      beyondBound: 0,
    });
    // The wall ms of START's hrtime 5 µs is whole, so each stamp's middle lands 0.505 ms after its send.
    expect(result.brokerSplit!.toBroker.meanMs).toBeCloseTo(0.505, 6);
    expect(result.brokerSplit!.fromBroker.meanMs).toBeCloseTo(1.495, 6);
    expect(result.brokerSplit!.toBroker.meanMs + result.brokerSplit!.fromBroker.meanMs).toBeCloseTo(
      result.latency!.meanMs,
      9,
    );
  });

  it('splits nothing across two kernels, and says the broker clock is not ours', () => {
    const recorder = new SectionRecorder(
      { ...plan, clock: { offsetNs: 0, uncertaintyNs: 1, roundTripNs: 2, samples: 8, applied: true } },
      undefined,
      () => START,
    );
    recordTwo(recorder);
    const result = recorder.result(null);
    expect(result.brokerSplit).toBeNull();
    expect(result.brokerNotSplit).toBe(BROKER_CLOCK_NOT_OURS);
  });

  it('leaves a section whose frames carry no stamp unsplit and says nothing', () => {
    const recorder = new SectionRecorder(plan, undefined, () => START);
    recorder.beginRecording(NO_WARMUP, 0n);
    recorder.record(header(0, 1_000n), 2_000n);
    recorder.verified(0, true);
    const result = recorder.result(null);
    expect(result.brokerSplit).toBeNull();
    expect(result.brokerNotSplit).toBeNull();
  });
});

const SPLIT: BrokerSplit = {
  count: 1000,
  toBroker: {
    count: 1000,
    p50Ms: 0.25,
    p90Ms: 0.5,
    p99Ms: 1,
    p999Ms: 2,
    minMs: -0.25,
    maxMs: 3,
    meanMs: 0.3,
    stdDevMs: 0.1,
  },
  fromBroker: {
    count: 1000,
    p50Ms: 1.25,
    p90Ms: 1.5,
    p99Ms: 2,
    p999Ms: 3,
    minMs: 0.5,
    maxMs: 4,
    meanMs: 1.3,
    stdDevMs: 0.2,
  },
  histograms: { toBrokerNs: null, fromBrokerNs: null },
  resolutionMs: 1,
  clockBoundMs: 0.5126,
  belowZero: { toBroker: 12, fromBroker: 0 },
  beyondBound: 0,
};

describe('brokerSplitText', () => {
  it('gives both parts, the step, the bound and the parts below 0', () => {
    expect(brokerSplitText(SPLIT)).toBe(
      '1000 images, to it p50 0.250, p90 0.500, p99 1.000, max 3.000, mean 0.300 ms; from it (time in it and the ' +
        'way out, one stamp cannot part them) p50 1.250, p90 1.500, p99 2.000, max 4.000, mean 1.300 ms; stamp step ' +
        '1.000 ms, each part ± 0.513 ms; 12 to and 0 from below 0 (step or clock error: percentiles count them as 0, ' +
        'min and mean as they came)',
    );
  });

  it("names a ns step in ns and says when parts fall below −bound (the broker's clock is not ours)", () => {
    const text = brokerSplitText({
      ...SPLIT,
      resolutionMs: 1e-6,
      belowZero: { toBroker: 0, fromBroker: 0 },
      beyondBound: 3,
    });
    expect(text).toContain('stamp step 1 ns, each part ± 0.513 ms; 3 parts below −0.513 ms: ');
    expect(text).not.toContain('below 0 (');
  });
});

describe("output.log's Through the broker line", () => {
  const line = (section: SectionResult): string | undefined =>
    renderSectionFooter(section)
      .split('\n')
      .find((l) => l.startsWith('Through the broker'));

  it.each([
    ['a split', 'redis', { brokerSplit: SPLIT }, `Through the broker: ${brokerSplitText(SPLIT)}`],
    [
      'stamps not used',
      'redis',
      { brokerSplit: null, brokerNotSplit: BROKER_CLOCK_NOT_OURS },
      `Through the broker: not split: ${BROKER_CLOCK_NOT_OURS}`,
    ],
    [
      'a broker that stamps nothing',
      'mqtt',
      {},
      'Through the broker: not split: the broker stamps nothing the receiver can read',
    ],
    ['no broker', 'tcp', {}, undefined],
  ])('%s', (_why, transport, overrides, expected) => {
    expect(line(sectionOf(transport, overrides))).toBe(expected);
  });
});

describe('a split in results.json and across receivers', () => {
  it('passes the results schema, a part below 0 included', () => {
    const report = fixtureReport([sectionOf('redis', { brokerSplit: SPLIT })]);
    const negative = { ...SPLIT, toBroker: { ...SPLIT.toBroker, p50Ms: -0.1, maxMs: -0.05 } };
    const withNegative = fixtureReport([sectionOf('redis', { brokerSplit: negative })]);
    expect(resultsSchemaErrors(JSON.parse(JSON.stringify(report)))).toEqual([]);
    expect(resultsSchemaErrors(JSON.parse(JSON.stringify(withNegative)))).toEqual([]);
    const broken = JSON.parse(JSON.stringify(report)) as { sections: { brokerSplit: { beyondBound: number } }[] };
    broken.sections[0]!.brokerSplit.beyondBound = -1;
    expect(resultsSchemaErrors(broken)).not.toEqual([]);
  });

  it("merges receivers' splits from their histograms, counts summed, the widest bound", () => {
    const split = (toNs: bigint, boundStart: WallClockSample): BrokerSplit => {
      const recorder = new BrokerSplitRecorder(boundStart);
      for (let i = 0n; i < 10n; i++)
        recorder.record(i * 1_000_000n, i * 1_000_000n + 900_000n, {
          atWallNs: wallAt(i * 1_000_000n + toNs),
          resolutionNs: 1,
        });
      return recorder.result(null).split!;
    };
    const merged = mergeBrokerSplits([split(100_000n, START), null, split(300_000n, { ...START, errorNs: 9_000 })]);
    expect(merged).toMatchObject({ count: 20, clockBoundMs: 0.0090005, resolutionMs: 1e-6, beyondBound: 0 });
    expect(merged!.toBroker.minMs).toBeCloseTo(0.1, 9);
    expect(merged!.toBroker.maxMs).toBeCloseTo(0.3, 9);
    expect(merged!.toBroker.meanMs).toBeCloseTo(0.2, 9);
    expect(mergeBrokerSplits([null, undefined])).toBeNull();
    const sections = [
      sectionOf('redis', { brokerSplit: split(100_000n, START) }),
      sectionOf('redis', { brokerSplit: split(300_000n, START) }, 1),
    ];
    expect(fanOutOf(sections, 'copies').aggregate.brokerSplit?.count).toBe(20);
  });
});

describe("Redis stream entry IDs as the broker's stamp", () => {
  it.each([
    ['1732636800123-0', 1732636800123],
    ['1732636800123-17', 1732636800123],
    ['0-1', 0],
    ['-1', undefined],
    ['17326368001230', undefined],
    ['12a4-0', undefined],
    ['1234567890123456-0', undefined],
  ])('%s', (id, ms) => {
    expect(entryIdMs(Buffer.from(id))).toBe(ms);
  });
});

describe('which brokers stamp', () => {
  it('names every broker transport either as stamping (redis, nats-jetstream) or as stamping nothing', () => {
    const brokers = transports.filter((t) => t.deployment.setting.kind === 'url').map((t) => t.name);
    const stamping = ['redis', 'nats-jetstream'];
    expect([...brokers].sort()).toEqual([...stamping, ...BROKERS_STAMPING_NOTHING].sort());
  });
});
