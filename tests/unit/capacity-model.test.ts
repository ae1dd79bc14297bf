import { describe, expect, it } from 'vitest';
import type { SectionResult } from '../../services/core/model/section.js';
import type { LatencySummary } from '../../services/core/model/stats.js';
import {
  capacityRow,
  judgeProbe,
  probeFrames,
  summarizeCapacity,
  sustainedInterval,
  type CapacityProbe,
  type ProbeFigures,
} from '../../scripts/bench/capacity-model.js';
import type { SearchBounds } from '../../scripts/bench/capacity-search.js';
import { renderSweepPage } from '../../scripts/lib/sweep-page.js';

// The capacity part's verdict on one probe's section, the rate's interval over the rounds, a transport's summary and
// its row of the table, and the table's card on the charts page.

const BOUNDS: SearchBounds = { startPerSecond: 60, floorPerSecond: 15, capPerSecond: 3840, resolution: 0.125 };

function latency(p50Ms: number, p99Ms: number | null, maxMs: number): LatencySummary {
  return { count: 200, p50Ms, p90Ms: null, p99Ms, p999Ms: null, minMs: 0, maxMs, meanMs: p50Ms, stdDevMs: 0 };
}

/** An open-loop section at 100 fps with a 10 ms deadline, ok and within it unless `change` says otherwise. */
function section(
  change: {
    ok?: boolean;
    failure?: string | null;
    overloaded?: boolean;
    sendLag?: LatencySummary;
    missedShare?: number;
    lateCount?: number;
  } = {},
): SectionResult {
  return {
    transport: 'tcp',
    ok: change.ok ?? true,
    failure: change.failure ?? null,
    lostCount: 3,
    corruptCount: 0,
    frameAge: latency(1.5, 6, 9),
    latency: latency(0.5, 2, 3),
    openLoop: {
      ratePerSecond: 100,
      achievedRatePerSecond: 90,
      deliveredRatePerSecond: 89.6,
      overloaded: change.overloaded ?? false,
      sendLag: change.sendLag ?? latency(0.1, 4, 5),
      latencyFromDue: latency(1.5, 6, 9),
      rttFromDue: null,
      deadline: {
        deadlineMs: 10,
        intervalMs: 10,
        allowedLateShare: 0.01,
        framesSent: 200,
        agedFrames: 200,
        lateCount: change.lateCount ?? 2,
        veryLateCount: 0,
        undeliveredCount: 0,
        missedShare: change.missedShare ?? 0.01,
        lateShare: 0.01,
        veryLateShare: 0,
        longestGapMs: 25,
        jitter: latency(0.4, null, 7),
        overDeadline: false,
      },
    },
  } as unknown as SectionResult;
}

describe('judgeProbe', () => {
  it('sustains a section at exactly its allowed share, with frame age, jitter (max under 100 gaps), send lag', () => {
    expect(judgeProbe(section())).toEqual({
      verdict: 'sustained',
      reason: 'missed 1.0 % (2 late, 0 undelivered of 200)',
      figures: {
        frameAgeP50Ms: 1.5,
        frameAgeP99Ms: 6,
        jitterP99Ms: 7,
        jitterMeanMs: 0.4,
        longestGapMs: 25,
        missedShare: 0.01,
        deadlineMs: 10,
        sendLagP99Ms: 4,
        sentPerSecond: 90,
        deliveredPerSecond: 89.6,
      } satisfies ProbeFigures,
    });
  });

  it('fails a share over the allowed one, a send lag p99 past the deadline, overload and a failed section', () => {
    expect(judgeProbe(section({ missedShare: 0.015, lateCount: 3 }))).toMatchObject({
      verdict: 'missed',
      reason: 'missed 1.5 % (3 late, 0 undelivered of 200), over 1.0 %',
    });
    expect(judgeProbe(section({ sendLag: latency(1, 10.5, 12) }))).toMatchObject({
      verdict: 'send lag',
      reason: 'send lag p99 10.50 ms over the 10.00 ms deadline',
    });
    // Under 100 sends the p99 is not told apart from the max: the max is judged.
    expect(judgeProbe(section({ sendLag: latency(1, null, 11) })).verdict).toBe('send lag');
    expect(judgeProbe(section({ overloaded: true, missedShare: 0.5 }))).toMatchObject({
      verdict: 'overloaded',
      reason: 'overloaded: sent 90/s, delivered 90/s of 100/s',
    });
    expect(judgeProbe(section({ ok: false, overloaded: true }))).toMatchObject({
      verdict: 'failed',
      reason: 'FAILED: 3 lost, 0 corrupt',
    });
    expect(judgeProbe(section({ ok: false, failure: 'timing check' })).reason).toBe('FAILED: timing check');
    expect(judgeProbe(undefined)).toEqual({ verdict: 'failed', reason: 'no section in the run', figures: null });
  });
});

describe('probeFrames', () => {
  it('sends the seconds of schedule, at least the minimum', () => {
    expect(probeFrames(15, 2, 200)).toBe(200);
    expect(probeFrames(240, 2, 200)).toBe(480);
    expect(probeFrames(100.4, 2, 200)).toBe(201);
  });
});

describe('sustainedInterval', () => {
  it('is the least and most under 6 rounds, covering the median with probability 1 − 2^(1−n)', () => {
    expect(sustainedInterval([])).toBeNull();
    expect(sustainedInterval([120])).toBeNull();
    expect(sustainedInterval([135, 120, 150])).toEqual({ low: 120, high: 150, coverage: 0.75 });
    expect(sustainedInterval([135, 120, 150, 165, 0])).toEqual({ low: 0, high: 165, coverage: 0.9375 });
  });

  it("is the project's 95 % order-statistics interval of the median from 6 rounds", () => {
    expect(sustainedInterval([6, 1, 5, 2, 4, 3])).toEqual({ low: 1, high: 6, coverage: 1 - 2 / 64 });
    // n = 10: x(2) and x(9), 1 − 2·11/1024.
    expect(sustainedInterval([10, 9, 8, 7, 6, 5, 4, 3, 2, 1])).toEqual({ low: 2, high: 9, coverage: 1 - 22 / 1024 });
  });
});

/** A probe of `transport` at 533 KiB whose figures are `age` ms at p50, `age` × 10 at p99, and `age` × 2 of jitter. */
function probe(
  transport: string,
  round: number,
  ratePerSecond: number,
  verdict: CapacityProbe['verdict'],
  age: number,
  purpose: CapacityProbe['purpose'] = 'search',
): CapacityProbe {
  return {
    transport,
    sizeBytes: 545_792,
    round,
    ratePerSecond,
    purpose,
    imageCount: 200,
    verdict,
    reason: verdict,
    figures: {
      frameAgeP50Ms: age,
      frameAgeP99Ms: age * 10,
      jitterP99Ms: age * 2,
      jitterMeanMs: null,
      longestGapMs: null,
      missedShare: 0,
      deadlineMs: null,
      sendLagP99Ms: null,
      sentPerSecond: null,
      deliveredPerSecond: null,
    },
    seconds: 3,
  };
}

describe('summarizeCapacity', () => {
  const probes: CapacityProbe[] = [
    // tcp, round 1: 60, 120 pass, 240 misses, 180 passes, 210 overloads, 195 passes: 195; camera rates 15 and 30.
    probe('tcp', 1, 60, 'sustained', 0.5),
    probe('tcp', 1, 120, 'sustained', 0.4),
    probe('tcp', 1, 240, 'missed', 0.9),
    probe('tcp', 1, 180, 'sustained', 0.3),
    probe('tcp', 1, 210, 'overloaded', 2),
    probe('tcp', 1, 195, 'sustained', 0.7),
    probe('tcp', 1, 15, 'sustained', 1, 'camera'),
    probe('tcp', 1, 30, 'sustained', 0.8, 'camera'),
    // tcp, round 2: 60, 120 pass, 240 misses, 180 misses, 150 passes, 165 misses: 150.
    probe('tcp', 2, 60, 'sustained', 0.6),
    probe('tcp', 2, 120, 'sustained', 0.4),
    probe('tcp', 2, 240, 'missed', 0.9),
    probe('tcp', 2, 180, 'missed', 0.9),
    probe('tcp', 2, 150, 'sustained', 0.5),
    probe('tcp', 2, 165, 'send lag', 0.9),
    // redis, round 1: nothing passes down to the floor; round 2: 30 passes, 45 fails, 38 passes, 41 fails: 38.
    probe('redis', 1, 60, 'failed', 5),
    probe('redis', 1, 30, 'missed', 5),
    probe('redis', 1, 15, 'missed', 5),
    probe('redis', 2, 60, 'missed', 4),
    probe('redis', 2, 30, 'sustained', 3),
    probe('redis', 2, 45, 'missed', 4),
    probe('redis', 2, 38, 'sustained', 2),
    probe('redis', 2, 41, 'missed', 4),
  ];
  const summary = summarizeCapacity(BOUNDS, ['tcp', 'redis'], [545_792], probes);

  it("takes each round's highest passed rate, their median and interval, and the figures at each round's own", () => {
    const tcp = summary[0]!;
    expect(tcp).toMatchObject({
      transport: 'tcp',
      sizeBytes: 545_792,
      rounds: 2,
      perRound: [195, 150],
      sustainedPerSecond: 172.5,
      interval: { low: 150, high: 195, coverage: 0.5 },
      belowFloorRounds: 0,
      atCapRounds: 0,
      // Round 1 at 195 (0.7), round 2 at 150 (0.5).
      atSustained: { ratePerSecond: 172.5, probes: 2, frameAgeP50Ms: 0.6, frameAgeP99Ms: 6, jitterP99Ms: 1.2 },
      limitedBy: { overloaded: 1, 'send lag': 1 },
    });
    // Every probe at each camera rate below 172.5: 15 and 30 once (camera probes), 60 in both rounds.
    expect(tcp.cameraRates).toEqual([
      { ratePerSecond: 15, probes: 1, frameAgeP50Ms: 1, frameAgeP99Ms: 10, jitterP99Ms: 2, missedShare: 0 },
      { ratePerSecond: 30, probes: 1, frameAgeP50Ms: 0.8, frameAgeP99Ms: 8, jitterP99Ms: 1.6, missedShare: 0 },
      { ratePerSecond: 60, probes: 2, frameAgeP50Ms: 0.55, frameAgeP99Ms: 5.5, jitterP99Ms: 1.1, missedShare: 0 },
    ]);
  });

  it('counts a round below the floor as 0, and gives figures only at the camera rates below the median', () => {
    const redis = summary[1]!;
    expect(redis).toMatchObject({
      perRound: [0, 38],
      sustainedPerSecond: 19,
      belowFloorRounds: 1,
      atSustained: { probes: 1, frameAgeP50Ms: 2 },
      limitedBy: { missed: 2 },
    });
    // 19 fps: only 15 is below it.
    expect(redis.cameraRates.map((f) => [f.ratePerSecond, f.probes, f.frameAgeP50Ms])).toEqual([[15, 1, 5]]);
  });

  it('says a round that reached the cap was limited by it', () => {
    const capped = [60, 120, 240, 480, 960, 1920, 3840].map((rate) => probe('zeromq', 1, rate, 'sustained', 0.1));
    const [zeromq] = summarizeCapacity(BOUNDS, ['zeromq'], [545_792], capped);
    expect(zeromq).toMatchObject({ perRound: [3840], atCapRounds: 1, interval: null, limitedBy: { cap: 1 } });
    expect(capacityRow(BOUNDS, zeromq!, 'ZeroMQ', '533.0 KiB').slice(2, 4)).toEqual(['≥ 3840', '-']);
  });

  it('writes a row: the median, its interval and coverage, the figures, the camera rates and what limited it', () => {
    expect(capacityRow(BOUNDS, summary[0]!, 'TCP', '533.0 KiB')).toEqual([
      'TCP',
      '533.0 KiB',
      '173',
      '150–195 (50 %)',
      '0.60/6.00',
      '1.20',
      '1.00/10.00 · 2.00',
      '0.80/8.00 · 1.60',
      '0.55/5.50 · 1.10',
      'overloaded ×1, send lag ×1',
    ]);
    expect(capacityRow(BOUNDS, summary[1]!, 'Redis', '533.0 KiB')).toEqual([
      'Redis',
      '533.0 KiB',
      '19',
      '< 15–38 (50 %)',
      '2.00/20.00',
      '4.00',
      '5.00/50.00 · 10.00',
      '-',
      '-',
      'missed ×2',
    ]);
  });
});

describe("the capacity table's card on the charts page", () => {
  it('is an HTML table with its text escaped, and stays out of what Chart.js draws', () => {
    const html = renderSweepPage(
      'bench',
      [
        {
          kind: 'table',
          id: 'capacity-table',
          title: 'Capacity',
          note: 'n',
          header: ['Transport', 'fps'],
          rows: [['<b>', '173']],
        },
      ],
      { chartJs: '', pageCss: '' },
    );
    expect(html).toContain(
      '<table class="summary-table" data-table="capacity-table"><thead><tr><th class="text">Transport</th>' +
        '<th>fps</th></tr></thead>\n<tbody>\n<tr><td class="text">&lt;b&gt;</td><td>173</td></tr>\n</tbody></table>',
    );
    expect(html).not.toContain('<canvas');
    expect(/<script type="application\/json" id="itb-sweeps">([\s\S]*?)<\/script>/.exec(html)?.[1]).toBe('[]');
  });
});
