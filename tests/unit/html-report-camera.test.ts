import { describe, expect, it } from 'vitest';
import { commandTimingFailure, type CommandLaneResult } from '../../services/core/model/command-lane.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import { joinSeries, SecondSeries } from '../../services/core/model/second-series.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { summarizeLatency } from '../../services/core/model/stats.js';
import { renderHtmlReport, type HtmlReportLibraries } from '../../services/core/report/html-report.js';
import { reportLibraries } from '../../services/shared/report-assets.js';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';
import { fixtureCost, fixturePlan, fixtureReport, fixtureSection, NO_WARMUP, resultWith } from '../helpers/fixtures.js';
import { histogramOf, withSeries } from '../helpers/series-fixtures.js';
import { cellsOf, rowOf, specsOf, tableOf } from '../helpers/report-page.js';

// report.html for a camera's stream: RATE=30 for 20 s (600 frames) with a command lane, as issue 50 asks it be read:
// frame age first, the deadline and jitter per transport, the command lane, and tails at 30 fps.

const LIBRARIES: HtmlReportLibraries = { ...reportLibraries(), chartJs: 'var Chart = function () {};' };
const RATE = 30;
const FRAMES = 600;
const INTERVAL_NS = 1e9 / RATE;

/**
 * A 30 fps section of 600 frames through the receiver's recorder: each frame 5 to 8 ms on the link, sent when due
 * except that from frame 300 the sender stalls `stallMs` on each of `stalled` frames (never sending one before the
 * previous); every round trip 1 ms over its one-way time.
 */
function cameraSection(transport: string, label: string, sectionId: number, stalled: number, stallMs: number) {
  const plan = fixturePlan({
    transport,
    label,
    sectionId,
    imageCount: FRAMES,
    ratePerSecond: RATE,
    deadline: { deadlineMs: 1000 / RATE, allowedLateShare: 0.01 },
  });
  const recorder = new SectionRecorder(plan);
  recorder.beginRecording(NO_WARMUP, 0n);
  const rttNs: number[] = [];
  const dueLagNs: number[] = [];
  const sentAtNs: bigint[] = [];
  let lastSentNs = 0;
  for (let seq = 0; seq < FRAMES; seq++) {
    const dueNs = Math.round(seq * INTERVAL_NS);
    const stallNs = seq >= 300 && seq < 300 + stalled ? stallMs * 1e6 : 0;
    const sentNs = Math.max(dueNs + stallNs, lastSentNs);
    lastSentNs = sentNs;
    const linkNs = 5_000_000 + (seq % 7) * 500_000;
    recorder.record(
      { sectionId, seq, sizeBytes: plan.imageSizeBytes, checksum: 0n, sentAtNs: BigInt(sentNs) },
      BigInt(sentNs + linkNs),
    );
    recorder.verified(seq, true);
    rttNs.push(linkNs + 1_000_000);
    dueLagNs.push(sentNs - dueNs);
    sentAtNs.push(BigInt(sentNs));
  }
  return resultWith(recorder, null, { rttNs, dueLagNs, sentAtNs, achievedRatePerSecond: RATE, cost: fixtureCost });
}

/** A command phase of the given one-way times (ms), each round trip 0.5 ms more. */
function phase(oneWayMs: readonly number[], afterAck: number | null) {
  return {
    sent: oneWayMs.length,
    acked: oneWayMs.length,
    received: oneWayMs.length,
    corrupt: 0,
    unacknowledged: 0,
    oneWay: summarizeLatency(oneWayMs) ?? null,
    rtt: summarizeLatency(oneWayMs.map((ms) => ms + 0.5)) ?? null,
    sendLag: null,
    paired: oneWayMs.length,
    arrivalsAfterAck: afterAck,
  };
}

/** A command lane of 100 alone and 200 beside, the beside ones `factor` times slower. */
function lane(interleaves: boolean, factor: number, afterAck: number | null): CommandLaneResult {
  const alone = Array.from({ length: 100 }, (_, i) => 0.2 + (i % 10) * 0.01);
  const beside = Array.from({ length: 200 }, (_, i) => (0.2 + (i % 10) * 0.01) * factor);
  return {
    ratePerSecond: 100,
    sizeBytes: 64,
    how: interleaves ? 'its own HTTP/2 stream' : 'between images on the one TCP stream',
    interleaves,
    notRun: null,
    alone: phase(alone, afterAck === null ? null : 0),
    beside: phase(beside, afterAck),
    delayFactorP50: factor,
  };
}

// TCP keeps its schedule; ZeroMQ's sender falls 100 ms behind for 20 frames (3 intervals: all very late); gRPC's
// commands were stamped as arriving after their acks, which fails its section.
const tcp = { ...cameraSection('tcp', 'TCP', 1, 0, 0), commands: lane(false, 12, 0) };
const zeromq = { ...cameraSection('zeromq', 'ZeroMQ', 2, 20, 100), commands: lane(false, 3, 0) };
const grpcLane = lane(true, 1.5, 3);
const grpcSection = cameraSection('grpc', 'gRPC', 3, 0, 0);
const grpc: SectionResult = {
  ...grpcSection,
  commands: grpcLane,
  ok: false,
  failure: commandTimingFailure(grpcLane),
};
const redis: SectionResult = {
  ...cameraSection('redis', 'Redis', 4, 0, 0),
  commands: { ...lane(false, 1, null), notRun: 'pub/sub acknowledges nothing', how: null, interleaves: null },
};
const report = fixtureReport([tcp, zeromq, grpc, redis]);
const html = renderHtmlReport([report], LIBRARIES);

describe('report.html of a 30 fps stream with commands', () => {
  it('leads the summary with the frame age, the time on the link beside it', () => {
    const cells = cellsOf(html, 'zeromq');
    const headers = Object.keys(cells);
    expect(headers.slice(0, 12)).toEqual([
      'Transport',
      'OK',
      'Lost',
      'Corrupt',
      'Frame age p50 ms',
      'Frame age p90 ms',
      'Frame age p99 ms',
      'Frame age p99.9 ms',
      'Frame age max ms',
      'On the link p50 ms',
      'On the link p99 ms',
      'RTT p50 ms',
    ]);
    // The stalled frames' age (105 to 108 ms) is in the tail of the frame age (its p99 the top of 107 ms's HDR
    // bucket); the link never saw it.
    expect(cells).toMatchObject({
      OK: '600',
      'Frame age p50 ms': '6.500',
      'Frame age p99 ms': '107.020',
      'Frame age max ms': '108.000',
      'On the link p50 ms': '6.500',
      'On the link p99 ms': '8.000',
    });
    expect(cellsOf(html, 'tcp')).toMatchObject({ 'Frame age p99 ms': '8.000', 'Frame age max ms': '8.000' });
  });

  it('gives each transport its deadline, late frames, longest gap and jitter, and says which missed it', () => {
    expect(zeromq.openLoop?.deadline).toMatchObject({ lateCount: 22, veryLateCount: 20, overDeadline: true });
    expect(cellsOf(html, 'zeromq', 'deadline-table')).toEqual({
      Transport: 'ZeroMQ',
      'Deadline ms': '33.333',
      Sent: '600',
      Late: '22',
      'Late %': '3.7',
      '> 3 intervals': '20',
      Undelivered: '0',
      'Missed %': '3.7',
      // Frame 299 arrived 7.5 ms after its due time, frame 300 108 ms after its own, one interval later. Otherwise the
      // gaps are one interval ± the link's steps: 0.5 ms, or 3 ms where it wraps from 8 ms to 5 (the p99).
      'Longest gap ms': '133.833',
      'Jitter mean ms': '1.185',
      'Jitter sd ms': '4.772',
      'Jitter p99 ms': '3.000',
      'Jitter max ms': '100.500',
      Verdict: 'MISSED',
    });
    expect(cellsOf(html, 'tcp', 'deadline-table')).toMatchObject({ Late: '0', 'Missed %': '0.0', Verdict: 'met' });
    expect(rowOf(html, 'zeromq')).toContain(
      '<span class="reason">MISSED DEADLINE: over 1 % of frames older than 33.333 ms from their due time or ' +
        'undelivered; see Deadline and jitter</span>',
    );
    expect(rowOf(html, 'tcp')).not.toContain('MISSED DEADLINE');
    expect(rowOf(html, 'zeromq', 'deadline-table')).toContain('<span class="reason">MISSED</span>');
    // A transport without a completed repeat has no deadline figures: they come from the summary's section.
    expect(cellsOf(html, 'grpc', 'deadline-table')).toMatchObject({ Late: '–', Verdict: '–' });
    expect(html).toContain('Deadline 33.333 ms (DEADLINE_MS; one frame interval is 33.333 ms)');
  });

  it('shows the command lane: alone and beside, the round trip, the factor, the lane and the paired check', () => {
    expect(cellsOf(html, 'tcp', 'commands-table')).toEqual({
      Transport: 'TCP',
      Lane: 'behind',
      'Alone p50 ms': '0.240',
      'Alone p99 ms': '0.290',
      'Alone max ms': '0.290',
      'Beside p50 ms': '2.882',
      'Beside p99 ms': '3.480',
      'Beside max ms': '3.480',
      'RTT p50 ms': '3.381',
      'RTT p99 ms': '3.980',
      '× p50': '12.0',
      Unacked: '0',
      Corrupt: '0',
      'After ack': '0 of 300',
    });
    // gRPC's section failed on it: its lane is shown all the same, the check in red.
    expect(cellsOf(html, 'grpc', 'commands-table')).toMatchObject({ Lane: 'beside', 'After ack': '3 of 300' });
    expect(rowOf(html, 'grpc', 'commands-table')).toContain('<span class="reason">3 of 300</span>');
    expect(rowOf(html, 'grpc')).toContain('3 of 300 commands stamped as arriving after their ack was processed');
    expect(cellsOf(html, 'redis', 'commands-table')).toMatchObject({ Lane: 'not run', 'Beside p50 ms': '–' });
    expect(tableOf(html, 'commands-table')).toContain('<th scope="col" data-type="text" class="text"');
    expect(html).toContain('64 B commands at 100/s on each transport’s link');
    expect(html).toContain('Not run: Redis: pub/sub acknowledges nothing.');
    expect(html).toContain('A transport with no completed repeat shows its last repeat with arrivals');
  });

  it('draws the p99 over time in windows of 4 s (120 frames), and says so, where no second holds 100', () => {
    const spec = specsOf(html).find((s) => s.name === 'p99-over-time')!;
    const [oneWay, rtt] = spec.datasets.filter((d) => d.transport === 'tcp');
    expect([oneWay!.figure, oneWay!.windowSeconds, oneWay!.bucketSeconds, oneWay!.hasData]).toEqual([
      'p99',
      4,
      4,
      true,
    ]);
    const points = oneWay!.data as { x: number; y: number | null }[];
    expect(points.map((p) => p.x)).toEqual([0, 4, 8, 12, 16]);
    expect(points.every((p) => p.y !== null && p.y >= 5 && p.y <= 8)).toBe(true);
    // The round trips (the transmitter's seconds) keep no histogram: no point, and the legend does not blame the
    // transport since its one-way line draws.
    expect(rtt!.windowSeconds).toBeUndefined();
    expect(rtt!.missing).toBeNull();
    const timeOverRun = specsOf(html).find((s) => s.name === 'time-over-run')!;
    const dashed = timeOverRun.datasets.find((d) => d.transport === 'tcp' && d.figure === 'p99')!;
    expect((dashed.data as { y: number | null }[]).filter((p) => p.y !== null)).toHaveLength(5);
    const card = /<figure class="card chart-card chart-p99-over-time">[\s\S]*?<\/figure>/.exec(html)![0];
    expect(card).toContain(
      'Where a second holds fewer than 100 images, each p99 point is a window of consecutive seconds long enough ' +
        'for 100 (TCP, ZeroMQ, gRPC, Redis: 4 s), its p99 from their histograms added.',
    );
    expect(card).toContain('The round trips are drawn by the second only');
    expect(card).not.toContain('no second of 100 images');
    const timeCard = /<figure class="card chart-card chart-time-over-run">[\s\S]*?<\/figure>/.exec(html)![0];
    expect(timeCard).toContain('each p99 point is a window of consecutive seconds long enough for 100');
    expect(timeCard).not.toContain('round trips are drawn');
    expect(html).not.toContain('Over 2,000 s a point merges');
  });

  it('writes the seconds’ histograms it merged into results.json, as its schema allows', () => {
    expect(tcp.series.every((s) => s.oneWay?.histogramNs !== undefined)).toBe(true);
    expect(resultsSchemaErrors(JSON.parse(JSON.stringify(report)))).toEqual([]);
    // The page itself carries no series: only the windows drawn from them.
    expect(html).not.toContain('histogramNs');
  });

  it('overlays two runs in the deadline and command tables: the before value, the change, the before verdict', () => {
    const after = fixtureReport([tcp, { ...cameraSection('zeromq', 'ZeroMQ', 2, 0, 0), commands: lane(true, 2, 0) }], {
      startedAt: '2026-11-24T08:00:00.000Z',
    });
    const two = renderHtmlReport([report, after], LIBRARIES);
    const deadline = rowOf(two, 'zeromq', 'deadline-table');
    expect(deadline).toContain(
      '<td class="num" data-sort="0"><span class="now">0</span><span class="was">22</span><span class="change ' +
        'better">−22</span></td>',
    );
    expect(deadline).toContain(
      '<td class="text" data-sort="met">met<span class="was">before: <span class="reason">MISSED</span></span></td>',
    );
    expect(cellsOf(two, 'zeromq', 'commands-table')).toMatchObject({
      Lane: 'besidebefore: behind',
      '× p50': '2.03.0−33.3%',
    });
    // gRPC and Redis ran only before: no after figures, their before ones beside.
    expect(cellsOf(two, 'grpc', 'commands-table')).toMatchObject({ Lane: '–before: beside' });
  });

  it('keeps its windows past 2,000 s: at least a bucket long, exact, and the merged note claims no upper bound', () => {
    // 4,200 s at 30 a second: buckets of 3 s for the other lines, windows of 4 s (120 frames) for the p99.
    const series = new SecondSeries(0n, true);
    for (let second = 0; second < 4200; second++)
      for (let i = 0; i < 30; i++) series.add(BigInt(second) * 1_000_000_000n + BigInt(i), 100, 5 + (i % 10) / 10);
    const samples = joinSeries(series.seconds(), []);
    series.destroy();
    const section = withSeries(
      fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP', ratePerSecond: RATE }), [5, 5.9], null),
      samples,
      { oneWayNs: histogramOf([5, 5.9]), rttNs: null },
    );
    const page = renderHtmlReport([fixtureReport([section])], LIBRARIES);
    const spec = specsOf(page).find((s) => s.name === 'p99-over-time')!;
    const [oneWay] = spec.datasets;
    expect([oneWay!.windowSeconds, oneWay!.data.length]).toEqual([4, 1050]);
    // Each window's 119th of 120 is a 5.9 ms time, at the top of its two-digit HDR bucket capped at the max.
    expect(new Set((oneWay!.data as { y: number | null }[]).map((p) => p.y))).toEqual(new Set([5.9]));
    const mbps = specsOf(page).find((s) => s.name === 'mbps-over-time')!.datasets[0]!;
    expect([mbps.bucketSeconds, mbps.data.length]).toEqual([3, 1400]);
    expect(page).toContain('Over 2,000 s a point merges consecutive seconds: the median of their p50s.');
    expect(page).not.toContain('the largest of their p99s');
  });
});
