import { describe, expect, it } from 'vitest';
import {
  compareRuns,
  describeRun,
  renderComparison,
  settingDifferences,
  type ComparisonRow,
} from '../../services/core/report/compare.js';
import type { Config } from '../../services/core/config/config.js';
import {
  RESULTS_SCHEMA_VERSION,
  summarizeTransports,
  type HostFacts,
  type RunReport,
} from '../../services/core/report/report.js';
import type { SectionResult } from '../../services/core/model/section.js';
import type { LatencySummary } from '../../services/core/model/stats.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';

// Sections are built literally so every figure is exact (the recorder's HDR percentiles are only
// within 0.1 %); one test goes through SectionRecorder to tie the two together.

const IMAGE_SIZE_BYTES = 1_000_000;
const LABELS: Record<string, string> = { websocket: 'WebSocket', grpc: 'gRPC', redis: 'Redis', tcp: 'TCP' };

/** Figures of one repeat; null totalMs means the repeat failed before any image arrived. */
interface Repeat {
  totalMs: number | null;
  p50Ms?: number;
  p99Ms?: number;
  mbps?: number;
  failure?: string;
}

function section(transport: string, repeat: number, r: Repeat): SectionResult {
  const timed = r.totalMs !== null;
  const p50 = r.p50Ms ?? 1;
  const p99 = r.p99Ms ?? 2;
  return {
    sectionId: repeat,
    transport,
    label: LABELS[transport] ?? transport,
    baseline: transport === 'tcp',
    repeat,
    imageCount: 10,
    warmup: { mode: 'images', images: 0 },
    imageSizeBytes: IMAGE_SIZE_BYTES,
    window: 1,
    ratePerSecond: null,
    clients: 1,
    receivers: 1,
    receiverIndex: 0,
    clock: null,
    ok: timed && r.failure === undefined,
    failure: r.failure ?? null,
    imagesFile: null,
    series: [],
    histograms: { oneWayNs: null, rttNs: null },
    okCount: timed ? 10 : 0,
    corruptCount: 0,
    lostCount: timed ? 0 : 10,
    duplicateCount: 0,
    outOfOrderCount: 0,
    strayCount: 0,
    totalMs: r.totalMs,
    latency: timed
      ? { count: 10, p50Ms: p50, p90Ms: p99, p99Ms: p99, p999Ms: p99, minMs: p50, maxMs: p99, meanMs: p50, stdDevMs: 0 }
      : null,
    rtt: null,
    littleRatio: null,
    verifyMs: null,
    throughputMBps: timed ? (r.mbps ?? 100) : null,
    imagesPerSecond: timed ? 1000 : null,
    // Ten images are too few for a stable throughput, as the recorder would say.
    throughputIndicative: true,
    openLoop: null,
    clientFairness: null,
    fanOut: null,
    warmedUp: { images: 0, ms: 0, steady: null, mediansMs: null },
    coldStart: { connectMs: null, firstImageMs: null, firstImageRttMs: null },
    cost: { transmitter: null, receiver: null, broker: null },
  };
}

const host: HostFacts = {
  hostname: 'bench',
  cpuModel: 'cpu',
  cores: 2,
  totalMemoryBytes: 2 ** 33,
  platform: 'linux',
  kernel: '6.1',
  nodeVersion: 'v20.20.2',
  bootId: null,
  libraries: {},
};

/** A run from each transport's repeats; the run's REPEAT is the most repeats any transport has. */
function runReport(startedAt: string, repeatsByTransport: Record<string, Repeat[]>): RunReport {
  const order = Object.keys(repeatsByTransport);
  const repeat = Math.max(...Object.values(repeatsByTransport).map((r) => r.length));
  // Interleaved, as a run records them: each repeat runs every transport once.
  const sections: SectionResult[] = [];
  for (let i = 0; i < repeat; i++) {
    for (const transport of order) {
      const r = repeatsByTransport[transport]![i];
      if (r) sections.push(section(transport, i + 1, r));
    }
  }
  const config = {
    imageCount: 10,
    window: 1,
    warmup: 0,
    repeat,
    transports: order,
    verify: true,
    maxImageBytes: 2 ** 28,
  } as unknown as Config;
  return {
    schemaVersion: RESULTS_SCHEMA_VERSION,
    stopReason: null,
    run: {
      startedAt,
      imageDescription: 'generated PNG',
      imageSizeBytes: IMAGE_SIZE_BYTES,
      imageCount: 10,
      window: 1,
      warmup: { mode: 'images', images: 0 },
      repeat,
      transports: order,
      arrivalNotes: [],
      receivers: 1,
      receiverIndex: 0,
      config,
      hosts: { transmitter: host, receiver: host },
    },
    finishedAt: startedAt,
    sections,
    transports: summarizeTransports(sections, order),
  };
}

const row = (rows: ComparisonRow[], transport: string): ComparisonRow => {
  const found = rows.find((r) => r.transport === transport);
  if (!found) throw new Error(`no row for ${transport}`);
  return found;
};

// Three repeats each; the median by total time is the middle one (totalMs 11).
const before3 = runReport('2026-01-01T00:00:00.000Z', {
  websocket: [
    { totalMs: 10, p50Ms: 1.9, p99Ms: 4.0, mbps: 90 },
    { totalMs: 11, p50Ms: 2.0, p99Ms: 4.5, mbps: 100 },
    { totalMs: 12, p50Ms: 2.1, p99Ms: 5.0, mbps: 130 },
  ],
});
const after3 = runReport('2026-01-02T00:00:00.000Z', {
  websocket: [
    { totalMs: 20, p50Ms: 1.4, p99Ms: 4.0, mbps: 115 },
    { totalMs: 21, p50Ms: 1.5, p99Ms: 4.75, mbps: 120 },
    { totalMs: 22, p50Ms: 1.6, p99Ms: 5.6, mbps: 125 },
  ],
});

describe('compareRuns', () => {
  it('takes each figure from the median repeat and computes the change, its percent and direction', () => {
    const ws = row(compareRuns(before3, after3), 'websocket');
    expect(ws).toMatchObject({
      transport: 'websocket',
      label: 'WebSocket',
      baseline: false,
      before: 'measured',
      after: 'measured',
      note: null,
    });
    const { p50Ms, p99Ms, throughputMBps } = ws.figures;
    expect(p50Ms.before).toBe(2.0);
    expect(p50Ms.after).toBe(1.5);
    expect(p50Ms.change).toBeCloseTo(-0.5, 12);
    expect(p50Ms.changePercent).toBeCloseTo(-25, 12);
    expect(p50Ms.direction).toBe('faster');
    expect(p99Ms.change).toBeCloseTo(0.25, 12);
    expect(p99Ms.changePercent).toBeCloseTo(5.5555555556, 8);
    expect(p99Ms.direction).toBe('slower');
    // Higher MB/s is faster.
    expect(throughputMBps).toMatchObject({
      before: 100,
      after: 120,
      change: 20,
      changePercent: 20,
      direction: 'faster',
    });
  });

  it('marks a change beyond the wider of the two spreads, and one within it', () => {
    const { p50Ms, p99Ms, throughputMBps } = row(compareRuns(before3, after3), 'websocket').figures;
    // p50: both spreads 0.2, change 0.5.
    expect(p50Ms.spread).toBeCloseTo(0.2, 12);
    expect(p50Ms.beyondSpread).toBe(true);
    // p99: before spreads 1.0, after 1.6; the wider one, 1.6, counts.
    expect(p99Ms.spread).toBeCloseTo(1.6, 12);
    expect(p99Ms.beyondSpread).toBe(false);
    // MB/s: before spreads 40 (90–130), after 10; change 20 is within.
    expect(throughputMBps.spread).toBe(40);
    expect(throughputMBps.beyondSpread).toBe(false);
  });

  it('is strict: a change exactly as large as the spread is within it', () => {
    const before = runReport('b', {
      tcp: [
        { totalMs: 1, mbps: 100 },
        { totalMs: 2, mbps: 110 },
        { totalMs: 3, mbps: 120 },
      ],
    });
    const after = runReport('a', { tcp: [{ totalMs: 1, mbps: 130 }] });
    const f = row(compareRuns(before, after), 'tcp').figures.throughputMBps;
    expect(f).toMatchObject({ before: 110, after: 130, change: 20, spread: 20, beyondSpread: false });
  });

  it('knows no spread when neither run has two repeats, and uses the one run that has', () => {
    const single = runReport('b', { grpc: [{ totalMs: 5, p50Ms: 1, p99Ms: 2, mbps: 50 }] });
    const singleAfter = runReport('a', { grpc: [{ totalMs: 5, p50Ms: 3, p99Ms: 2, mbps: 50 }] });
    const f = row(compareRuns(single, singleAfter), 'grpc').figures;
    expect(f.p50Ms).toMatchObject({
      change: 2,
      changePercent: 200,
      spread: null,
      beyondSpread: null,
      direction: 'slower',
    });
    expect(f.p99Ms).toMatchObject({ change: 0, changePercent: 0, beyondSpread: null, direction: 'same' });

    const threeAfter = runReport('a', {
      grpc: [
        { totalMs: 4, p50Ms: 2.5 },
        { totalMs: 5, p50Ms: 3 },
        { totalMs: 6, p50Ms: 3.5 },
      ],
    });
    expect(row(compareRuns(single, threeAfter), 'grpc').figures.p50Ms).toMatchObject({
      change: 2,
      spread: 1,
      beyondSpread: true,
    });
  });

  it('does not count a one-value range as a spread when the other repeats failed', () => {
    const before = runReport('b', {
      redis: [
        { totalMs: 5, p50Ms: 1 },
        { totalMs: null, failure: 'timeout' },
        { totalMs: null, failure: 'timeout' },
      ],
    });
    const after = runReport('a', { redis: [{ totalMs: 5, p50Ms: 1.1 }] });
    const r = row(compareRuns(before, after), 'redis');
    expect(r.figures.p50Ms.spread).toBeNull();
    expect(r.figures.p50Ms.beyondSpread).toBeNull();
    expect(r.note).toBe('before: FAILED (10 ok, 20 lost, 0 corrupt across 3 repeats): timeout');
  });

  it("lists after's transports first, then those only in before, each saying where it is missing", () => {
    const before = runReport('b', { websocket: [{ totalMs: 1 }], redis: [{ totalMs: 1 }] });
    const after = runReport('a', { tcp: [{ totalMs: 1 }], websocket: [{ totalMs: 1 }] });
    const rows = compareRuns(before, after);
    expect(rows.map((r) => r.transport)).toEqual(['tcp', 'websocket', 'redis']);
    const tcp = row(rows, 'tcp');
    expect(tcp).toMatchObject({
      label: 'TCP',
      baseline: true,
      before: 'absent',
      after: 'measured',
      note: 'not in before run',
    });
    expect(tcp.figures.p50Ms).toMatchObject({
      before: null,
      after: 1,
      change: null,
      changePercent: null,
      beyondSpread: null,
      direction: null,
    });
    const redis = row(rows, 'redis');
    expect(redis).toMatchObject({ label: 'Redis', before: 'measured', after: 'absent', note: 'not in after run' });
    expect(redis.figures.throughputMBps).toMatchObject({ before: 100, after: null, change: null });
  });

  it('reports a transport whose repeats all failed as having no result', () => {
    const before = runReport('b', { grpc: [{ totalMs: 5, p50Ms: 1 }] });
    const after = runReport('a', { grpc: [{ totalMs: null, failure: 'connect timeout after 30000 ms' }] });
    const r = row(compareRuns(before, after), 'grpc');
    expect(r).toMatchObject({
      before: 'measured',
      after: 'no-result',
      note: 'after: no repeat completed: connect timeout after 30000 ms',
    });
    expect(r.figures.p50Ms).toMatchObject({ before: 1, after: null, change: null, beyondSpread: null });
  });

  it('reads figures of sections recorded by SectionRecorder', () => {
    const recorded = (arrivalNs: bigint): SectionResult => {
      const recorder = new SectionRecorder({
        sectionId: 1,
        transport: 'tcp',
        label: 'TCP',
        baseline: true,
        repeat: 1,
        imageCount: 1,
        warmup: { mode: 'images', images: 0 },
        imageSizeBytes: 1_000_000,
        window: 1,
        ratePerSecond: null,
        clients: 1,
        receivers: 1,
        receiverIndex: 0,
        clock: null,
      });
      recorder.beginRecording({ images: 0, ms: 0, steady: null, mediansMs: null }, 0n);
      recorder.record({ sectionId: 1, seq: 0, sizeBytes: 1_000_000, checksum: 0n, sentAtNs: 0n }, arrivalNs);
      recorder.verified(0, true);
      return recorder.result(null);
    };
    const report = (s: SectionResult): RunReport => ({
      ...runReport('x', { tcp: [{ totalMs: 1 }] }),
      sections: [s],
      transports: summarizeTransports([s], ['tcp']),
    });
    // One image: p50 = p99 = its time, exactly (the percentile never exceeds the true max).
    const f = row(compareRuns(report(recorded(2_000_000n)), report(recorded(1_000_000n))), 'tcp').figures;
    expect(f.p50Ms).toMatchObject({
      before: 2,
      after: 1,
      change: -1,
      changePercent: -50,
      direction: 'faster',
      beyondSpread: null,
    });
    expect(f.throughputMBps).toMatchObject({
      before: 500,
      after: 1000,
      change: 500,
      changePercent: 100,
      direction: 'faster',
    });
  });
});

describe('renderComparison', () => {
  it('prints both runs, one row per transport with marks, and the legend', () => {
    expect(renderComparison(compareRuns(before3, after3), before3, after3)).toBe(
      `Comparing before: 2026-01-01T00:00:00.000Z, 10 images of 976.6 KiB, window 1, warm-up none (WARMUP=0: a ` +
        `cold run), repeat 3, closed loop
     with after:  2026-01-02T00:00:00.000Z, 10 images of 976.6 KiB, window 1, warm-up none (WARMUP=0: a cold run), ` +
        `repeat 3, closed loop
Figures are the median completed repeat (every image intact; by total transfer time) of each run: p50 and p99 are ` +
        `the one-way time in a closed loop and, under RATE, each frame's age from its due time; change = after − before.

Transport  p50 ms before → after             p50 ms change  p99 ms before → after            p99 ms change  MB/s ` +
        `before → after              MB/s change  Note
---------  ---------------------  ------------------------  ---------------------  -----------------------  ` +
        `-------------------  -----------------------  ----
WebSocket          2.000 → 1.500  −0.500 (−25.0%) faster *          4.500 → 4.750  +0.250 (+5.6%) slower          ` +
        `100.0 → 120.0  +20.0 (+20.0%) faster

Sign as measured; faster/slower: for p50 and p99 lower is faster, for MB/s higher is faster.
Marks: *  beyond the repeat spread (the change is larger than the wider of the two runs' max − min across completed ` +
        `repeats)
       ?  spread unknown (REPEAT=1): rerun with REPEAT=3 for a verdict
       no mark: within the repeat spread, not told apart from noise
Not comparable: a closed loop against a RATE, or two different RATEs, measure different things (frame age against ` +
        `one-way time, a load offered against a capacity): no change is given.
`,
    );
  });

  it('marks unknown spreads with "?", shows missing and failed transports, and warns of differing settings', () => {
    const before = runReport('2026-01-01T00:00:00.000Z', {
      websocket: [{ totalMs: 1, p50Ms: 1 }],
      redis: [{ totalMs: 1 }],
    });
    const after = runReport('2026-01-02T00:00:00.000Z', {
      tcp: [{ totalMs: 1 }],
      websocket: [{ totalMs: 1, p50Ms: 1.2 }],
      grpc: [{ totalMs: null, failure: 'boom' }],
    });
    after.run.window = 8;
    const text = renderComparison(compareRuns(before, after), before, after);
    const lines = text.split('\n');
    expect(lines.slice(2, 5)).toEqual([
      'Warning: the runs differ in these settings; a change may come from them rather than from the code:',
      '  TRANSPORTS: websocket,redis → tcp,websocket,grpc',
      '  WINDOW: 1 → 8',
    ]);
    expect(lines.find((l) => l.startsWith('WebSocket '))).toMatch(/1\.000 → 1\.200\s+\+0\.200 \(\+20\.0%\) slower \?/);
    expect(lines.find((l) => l.startsWith('TCP (baseline) '))).toMatch(
      /^TCP \(baseline\)\s+- → 1\.000\s+-\s.*not in before run$/,
    );
    expect(lines.find((l) => l.startsWith('gRPC '))).toMatch(/after: no repeat completed: boom$/);
    expect(lines.find((l) => l.startsWith('Redis '))).toMatch(/100\.0 → -\s+-\s+not in after run$/);
    expect(text).toContain('?  spread unknown (REPEAT=1): rerun with REPEAT=3 for a verdict');
  });
});

describe('settingDifferences', () => {
  it('names every differing setting with both values: knobs, image, hosts and library versions', () => {
    const before = runReport('b', { tcp: [{ totalMs: 1 }] });
    const after = runReport('a', { tcp: [{ totalMs: 1 }] });
    expect(settingDifferences(before, after)).toEqual([]);
    after.run.config = { ...after.run.config, verify: false };
    after.run.imageSizeBytes = 4 * 1024 * 1024;
    after.run.warmup = { mode: 'images', images: 100 };
    after.run.hosts = {
      transmitter: { ...host, nodeVersion: 'v22.1.0', libraries: { ws: '8.24.0', zeromq: '6.8.0' } },
      receiver: { ...host, libraries: { ws: '8.24.0', zeromq: '6.8.0' } },
    };
    before.run.hosts = {
      transmitter: { ...host, libraries: { ws: '8.23.0' } },
      receiver: { ...host, libraries: { ws: '8.23.0' } },
    };
    expect(settingDifferences(before, after)).toEqual([
      'image size: 976.6 KiB → 4.0 MiB',
      'WARMUP: none (WARMUP=0: a cold run) → 100 unrecorded images (WARMUP=100)',
      'VERIFY: true → false',
      'transmitter host: bench, cpu, 2 cores, 8.0 GiB, linux 6.1, Node v20.20.2 → bench, cpu, 2 cores, 8.0 GiB, ' +
        'linux 6.1, Node v22.1.0',
      'ws: 8.23.0 → 8.24.0',
      'zeromq: unset → 6.8.0',
    ]);
  });
});

describe('settingDifferences of warm-up plans', () => {
  const steady = {
    mode: 'steady',
    minMs: 500,
    minImages: 128,
    maxMs: 10_000,
    maxImages: 100_000,
    blockImages: 32,
    blocks: 4,
    tolerance: 0.05,
  } as const;

  it('names a change between a steady and a fixed warm-up, and between two steady ones, in words', () => {
    const before = runReport('b', { tcp: [{ totalMs: 1 }] });
    const after = runReport('a', { tcp: [{ totalMs: 1 }] });
    before.run.warmup = steady;
    after.run.warmup = { mode: 'images', images: 2 };
    expect(settingDifferences(before, after)).toEqual([
      'WARMUP: until steady: at least 500 ms and 128 images, then until no median round trip of the last 2 ' +
        'blocks of 32 images is more than 5 % below the lowest of the 2 before; at most 10,000 ms (WARMUP=auto) → ' +
        '2 unrecorded images (WARMUP=2)',
    ]);
    after.run.warmup = { ...steady, maxMs: 20_000 };
    expect(settingDifferences(before, after)).toEqual([
      'WARMUP: until steady: at least 500 ms and 128 images, then until no median round trip of the last 2 ' +
        'blocks of 32 images is more than 5 % below the lowest of the 2 before; at most 10,000 ms (WARMUP=auto) → ' +
        'until steady: at least 500 ms and 128 images, then until no median round trip of the last 2 blocks of 32 ' +
        'images is more than 5 % below the lowest of the 2 before; at most 20,000 ms (WARMUP=auto)',
    ]);
    after.run.warmup = { ...steady };
    expect(settingDifferences(before, after)).toEqual([]);
  });
});

describe('median and spread over completed repeats only', () => {
  it('leaves a failed repeat out of the median and the spread, however fast it looked', () => {
    // The failed repeat has the lowest total (it stopped early) and a wild MB/s: neither may count.
    const report = runReport('x', {
      grpc: [
        { totalMs: 30, mbps: 90 },
        { totalMs: 2, mbps: 999, failure: 'stream reset' },
        { totalMs: 20, mbps: 110 },
      ],
    });
    const summary = report.transports[0]!;
    expect(summary).toMatchObject({ repeats: 3, completedRepeats: 2, ok: false, failure: 'stream reset' });
    expect(report.sections[summary.medianSection!]!.totalMs).toBe(20);
    expect(summary.spread.throughputMBps).toEqual({ min: 90, max: 110 });
    expect(summary.spread.totalMs).toEqual({ min: 20, max: 30 });
  });
});

/** A latency summary whose p50 and p99 are exact; the rest follow from them. */
const latencyOf = (p50Ms: number, p99Ms: number): LatencySummary => ({
  count: 10,
  p50Ms,
  p90Ms: p99Ms,
  p99Ms,
  p999Ms: p99Ms,
  minMs: p50Ms,
  maxMs: p99Ms,
  meanMs: p50Ms,
  stdDevMs: 0,
});

/**
 * `report` sent at `ratePerSecond`: every section open-loop, its frame age `frameAge` (p50, p99; what a file written
 * before frameAge holds as openLoop.latencyFromDue when `legacy`), its time on the link as it was.
 */
function atRate(report: RunReport, ratePerSecond: number, frameAge: [number, number], legacy = false): RunReport {
  const age = latencyOf(...frameAge);
  const sections = report.sections.map(
    (s): SectionResult => ({
      ...s,
      ratePerSecond,
      ...(legacy ? {} : { frameAge: age }),
      openLoop: {
        ratePerSecond,
        achievedRatePerSecond: ratePerSecond,
        deliveredRatePerSecond: ratePerSecond,
        overloaded: false,
        sendLag: null,
        latencyFromDue: age,
        rttFromDue: null,
      },
    }),
  );
  const config = {
    ...report.run.config,
    ratePerSecond,
    deadline: { deadlineMs: 1000 / ratePerSecond, allowedLateShare: 0.01 },
  };
  return {
    ...report,
    run: { ...report.run, config },
    sections,
    transports: summarizeTransports(sections, report.run.transports),
  };
}

describe('compare across ways of sending', () => {
  // The same link figures in both runs: only the way of sending differs.
  const closedLoop = runReport('2026-01-01T00:00:00.000Z', { tcp: [{ totalMs: 1, p50Ms: 2, p99Ms: 4, mbps: 100 }] });
  const rate30 = atRate(
    runReport('2026-01-02T00:00:00.000Z', { tcp: [{ totalMs: 1, p50Ms: 2, p99Ms: 11, mbps: 16 }] }),
    30,
    [40, 426],
  );

  it('gives no change and no percentage between a closed-loop and a RATE section, and says why', () => {
    const tcp = row(compareRuns(closedLoop, rate30), 'tcp');
    expect(tcp.note).toBe('not comparable: closed loop vs RATE 30/s');
    // Each run's own headline: the one-way time in the closed loop, frame age under RATE.
    expect(tcp.figures.p50Ms).toEqual({
      before: 2,
      after: 40,
      change: null,
      changePercent: null,
      spread: null,
      beyondSpread: null,
      direction: null,
      notComparable: 'not comparable: closed loop vs RATE 30/s',
    });
    expect(tcp.figures.p99Ms).toMatchObject({ before: 4, after: 426, change: null, changePercent: null });
    expect(tcp.figures.throughputMBps).toMatchObject({ before: 100, after: 16, change: null, changePercent: null });
    expect(row(compareRuns(rate30, closedLoop), 'tcp').note).toBe('not comparable: RATE 30/s vs closed loop');

    const text = renderComparison(compareRuns(closedLoop, rate30), closedLoop, rate30);
    const line = text.split('\n').find((l) => l.startsWith('TCP (baseline) '));
    expect(line).toMatch(
      new RegExp(
        /^TCP \(baseline\)\s+2\.000 → 40\.000\s+not comparable\s+4\.000 → 426\.000\s+not comparable\s+/.source +
          /100\.0 → 16\.0\s+not comparable\s+not comparable: closed loop vs RATE 30\/s$/.source,
      ),
    );
    expect(text).not.toMatch(/%\)/);
    expect(text).toContain('  RATE: unset (closed loop) → 30/s');
  });

  it('gives no change between two different rates', () => {
    const rate15 = atRate(closedLoop, 15, [30, 60]);
    const tcp = row(compareRuns(rate15, rate30), 'tcp');
    expect(tcp.note).toBe('not comparable: RATE 15/s vs RATE 30/s');
    expect(tcp.figures.p99Ms).toMatchObject({ before: 60, after: 426, change: null, changePercent: null });
    expect(renderComparison(compareRuns(rate15, rate30), rate15, rate30)).not.toMatch(/%\)/);
  });

  it('compares frame age at one rate, read from openLoop.latencyFromDue in a file written before frameAge', () => {
    const before = atRate(closedLoop, 30, [80, 500], true);
    expect(before.sections[0]!.frameAge).toBeUndefined();
    const tcp = row(compareRuns(before, rate30), 'tcp');
    expect(tcp.note).toBeNull();
    expect(tcp.figures.p50Ms).toMatchObject({
      before: 80,
      after: 40,
      change: -40,
      changePercent: -50,
      direction: 'faster',
      notComparable: null,
    });
    expect(tcp.figures.p99Ms).toMatchObject({ before: 500, after: 426, change: -74, direction: 'faster' });
  });

  it('takes the spread of frame age, not of the time on the link, under RATE', () => {
    // Three repeats alike on the link (p50 1 ms each) whose frame ages are 10, 15 and 20 ms.
    const open = atRate(
      runReport('b', {
        tcp: [
          { totalMs: 1, p50Ms: 1 },
          { totalMs: 2, p50Ms: 1 },
          { totalMs: 3, p50Ms: 1 },
        ],
      }),
      30,
      [0, 50],
    );
    const before: RunReport = {
      ...open,
      sections: open.sections.map((s, i) => ({ ...s, frameAge: latencyOf(10 + 5 * i, 50) })),
    };
    const f = row(compareRuns(before, rate30), 'tcp').figures.p50Ms;
    expect(f).toMatchObject({ before: 15, after: 40, change: 25, spread: 10, beyondSpread: true });
  });
});

describe('settingDifferences of how the images were sent', () => {
  it('names RATE, DURATION, IMAGE_COUNT, deadlines, the command lane, TRANSPORTS, CLIENTS, RECEIVERS, the link', () => {
    const before = runReport('b', { tcp: [{ totalMs: 1 }] });
    const after = runReport('a', { tcp: [{ totalMs: 1 }], grpc: [{ totalMs: 1 }] });
    before.run.config = { ...before.run.config, clients: 1, link: 'loopback, not shaped' };
    after.run.config = {
      ...after.run.config,
      ratePerSecond: 30,
      durationMs: 20_000,
      deadline: { deadlineMs: 1000 / 30, allowedLateShare: 0.05 },
      commandRatePerSecond: 100,
      commandSizeBytes: 64,
      clients: 2,
      link: 'NETWORK_DELAY 10ms',
    };
    after.run.imageCount = null;
    after.run.receivers = 2;
    expect(settingDifferences(before, after)).toEqual([
      'RATE: unset (closed loop) → 30/s',
      'DURATION: unset → 20s',
      'IMAGE_COUNT: 10 → unused (DURATION)',
      'DEADLINE_MS: unset → 33.333 ms',
      'DEADLINE_MISS_PERCENT: unset → 5 %',
      'COMMAND_RATE: unset → 100/s',
      'COMMAND_SIZE: unused (no COMMAND_RATE) → 64 B',
      'TRANSPORTS: tcp → tcp,grpc',
      'CLIENTS: 1 → 2',
      'RECEIVERS: 1 → 2',
      'link: loopback, not shaped → NETWORK_DELAY 10ms',
    ]);
  });
});

describe('describeRun', () => {
  /** `report` under DURATION=20s (run.imageCount null, as written now), its sections having sent `sent` in order. */
  const byDuration = (report: RunReport, sent: number[]): RunReport => ({
    ...report,
    run: { ...report.run, imageCount: null, config: { ...report.run.config, durationMs: 20_000 } },
    sections: report.sections.map((s, i) => ({ ...s, imageCount: sent[i]! })),
  });

  it('gives IMAGE_COUNT, or under DURATION what each transport sent, and how the images were sent', () => {
    const counted = runReport('2026-01-01T00:00:00.000Z', { tcp: [{ totalMs: 1 }] });
    expect(describeRun(counted)).toBe(
      '2026-01-01T00:00:00.000Z, 10 images of 976.6 KiB, window 1, warm-up none (WARMUP=0: a cold run), repeat 1, ' +
        'closed loop',
    );
    expect(describeRun(byDuration(atRate(counted, 30, [40, 426]), [600]))).toBe(
      '2026-01-01T00:00:00.000Z, 976.6 KiB images for 20s (600 sent per transport), window 1, warm-up none ' +
        '(WARMUP=0: a cold run), repeat 1, RATE 30/s',
    );
  });

  it('names each transport when they sent different counts, and reads an older file by its DURATION', () => {
    // Interleaved: TCP, gRPC, TCP, gRPC.
    const report = byDuration(
      runReport('2026-01-01T00:00:00.000Z', {
        tcp: [{ totalMs: 1 }, { totalMs: 1 }],
        grpc: [{ totalMs: 1 }, { totalMs: 1 }],
      }),
      [5000, 1198, 5000, 1200],
    );
    const text =
      '2026-01-01T00:00:00.000Z, 976.6 KiB images for 20s (sent: TCP 5,000, gRPC 1,198–1,200), window 1, ' +
      'warm-up none (WARMUP=0: a cold run), repeat 2, closed loop';
    expect(describeRun(report)).toBe(text);
    // A file written before the run's count was null under DURATION holds IMAGE_COUNT's unused default, 10.
    expect(describeRun({ ...report, run: { ...report.run, imageCount: 10 } })).toBe(text);
  });
});
