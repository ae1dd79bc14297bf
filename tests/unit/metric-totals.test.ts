import { describe, expect, it } from 'vitest';
import { CommandArrivals, emptyTransmitterPhase } from '../../services/core/model/command-lane.js';
import {
  MetricTotals,
  noFigures,
  recordingFigures,
  resultFigures,
  TIME_BUCKET_BOUNDS_SECONDS,
  type TransportFigures,
} from '../../services/core/model/metric-totals.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import { countsAtOrBelowNs, LatencyRecorder } from '../../services/core/model/stats.js';
import { commandSeq, type FrameHeader } from '../../services/core/wire/frame.js';
import { fixturePlan, NO_WARMUP } from '../helpers/fixtures.js';

describe('countsAtOrBelowNs: bucket counts from an HDR histogram', () => {
  // 10 µs is a bucket's first value (8 ns wide there); 1 ms is inside a 512 ns bucket, 999,936 to 1,000,447 ns.
  const boundsNs = [10_000, 25_000, 1_000_000, 10_000_000_000];
  const timesMs = [0.005, 0.01, 0.0100081, 0.02499, 0.9999, 1, 20_000];

  it(
    'counts a time toward a bound when its whole bucket lies at or below it, the open recorder and its encoding ' +
      'alike',
    () => {
      const recorder = new LatencyRecorder();
      for (const ms of timesMs) recorder.record(ms);
      // 10 µs exactly shares its bucket with 10.007 µs: counted at 25 µs. 1 ms and 0.9999 ms (999,900 ns, a bucket
      // ending at 999,935) are split by the same rule. 20 s is over every bound.
      const expected = [1, 4, 5, 6];
      expect(recorder.countsAtOrBelowNs(boundsNs)).toEqual(expected);
      expect(countsAtOrBelowNs(recorder.encoded(), boundsNs)).toEqual(expected);
      expect(recorder.sumMs).toBeCloseTo(
        timesMs.reduce((sum, ms) => sum + ms, 0),
        9,
      );
      recorder.destroy();
    },
  );

  it('gives zeros for no time', () => {
    const recorder = new LatencyRecorder();
    expect(recorder.countsAtOrBelowNs(boundsNs)).toEqual([0, 0, 0, 0]);
    expect(countsAtOrBelowNs(null, boundsNs)).toEqual([0, 0, 0, 0]);
    recorder.destroy();
  });

  it('has the buckets the issue names: 1, 2.5 and 5 per decade from 10 µs to 10 s', () => {
    expect(TIME_BUCKET_BOUNDS_SECONDS.map(String)).toEqual(
      [-5, -4, -3, -2, -1, 0]
        .flatMap((exponent) => [1, 2.5, 5].map((m) => String(Number(`${m}e${exponent}`))))
        .concat('10'),
    );
  });
});

describe('an open section read at a scrape, then its result', () => {
  const plan = fixturePlan({ transport: 'tcp', label: 'TCP', imageCount: 4, imageSizeBytes: 100, sectionId: 3 });
  const header = (seq: number, sentAtNs: bigint): FrameHeader => ({
    sectionId: 3,
    seq,
    sizeBytes: 100,
    checksum: 1n,
    sentAtNs,
  });

  it(
    'gives the same figures so far as its result, the images ' +
      'awaiting a verdict and the lost ones added at its end',
    () => {
      const recorder = new SectionRecorder(plan);
      recorder.beginRecording(NO_WARMUP, 0n);
      // Images 1 and 2 intact (20 and 40 µs), 3 corrupt, 4 arrived with no verdict yet; image 5 is never sent.
      for (const [seq, oneWayNs] of [20_000n, 40_000n, 30_000n, 50_000n].entries())
        recorder.record(header(seq, 1_000_000n), 1_000_000n + oneWayNs);
      recorder.verified(0, true);
      recorder.verified(1, true);
      recorder.verified(2, false);
      // Round trips of images 1 and 3 (60 and 70 µs).
      recorder.roundTrips(Float64Array.from([1, 60_000, Number.NaN, 3, 70_000, Number.NaN]));
      const live = recordingFigures(recorder);
      expect(live.images).toEqual({ intact: 2, corrupt: 1, lost: 0 });
      expect(live.bytes).toEqual({ intact: 200, corrupt: 100, lost: 0 });
      expect(live.oneWay.count).toBe(2);
      expect(live.oneWay.sumSeconds).toBeCloseTo(60e-6, 12);
      // le 25 µs holds the 20 µs time, le 50 µs both.
      expect(live.oneWay.atOrBelow.slice(0, 4)).toEqual([0, 1, 2, 2]);
      expect(live.roundTrip.count).toBe(2);
      expect(live.roundTrip.atOrBelow.slice(0, 4)).toEqual([0, 0, 0, 2]);

      const ended = resultFigures(recorder.result(null));
      // Image 4's verdict never came (corrupt); none is lost, all four having arrived.
      expect(ended.images).toEqual({ intact: 2, corrupt: 2, lost: 0 });
      expect(ended.oneWay).toEqual(live.oneWay);
      expect(ended.roundTrip).toEqual(live.roundTrip);
    },
  );

  it('counts the images that never arrived as lost at the end', () => {
    const recorder = new SectionRecorder(plan);
    recorder.beginRecording(NO_WARMUP, 0n);
    recorder.record(header(0, 0n), 10_000n);
    recorder.verified(0, true);
    expect(recordingFigures(recorder).images.lost).toBe(0);
    const ended = resultFigures(recorder.result('stopped'));
    expect(ended.images).toEqual({ intact: 1, corrupt: 0, lost: 3 });
    expect(ended.bytes.lost).toBe(300);
  });
});

describe('MetricTotals: counters that never go back', () => {
  const figures = (transport: string, intact: number, lost = 0): TransportFigures => {
    const f = noFigures(transport);
    f.images.intact = intact;
    f.images.lost = lost;
    f.oneWay.count = intact;
    f.oneWay.atOrBelow[0] = intact;
    return f;
  };
  const intactBy = (read: TransportFigures[]): Record<string, number> =>
    Object.fromEntries(read.map((f) => [f.transport, f.images.intact]));
  const sectionA = {};
  const sectionB = {};

  it('lists the receiver’s transports at 0 from the start, in order', () => {
    const totals = new MetricTotals(['tcp', 'zeromq']);
    expect(totals.read(undefined)).toEqual([noFigures('tcp'), noFigures('zeromq')]);
  });

  it('adds the open section to the finished ones, and its result once it ends, not both', () => {
    const totals = new MetricTotals(['tcp', 'zeromq']);
    totals.sectionEnded({}, figures('tcp', 10));
    expect(intactBy(totals.read({ key: sectionA, figures: figures('zeromq', 3) }))).toEqual({ tcp: 10, zeromq: 3 });
    expect(intactBy(totals.read({ key: sectionA, figures: figures('zeromq', 5) }))).toEqual({ tcp: 10, zeromq: 5 });
    totals.sectionEnded(sectionA, figures('zeromq', 6, 1));
    const read = totals.read(undefined);
    expect(intactBy(read)).toEqual({ tcp: 10, zeromq: 6 });
    expect(read[1]!.images.lost).toBe(1);
    expect(read[1]!.oneWay.atOrBelow[0]).toBe(6);
  });

  it('keeps what a section had at its last reading when it closes without a result, once', () => {
    const totals = new MetricTotals(['tcp']);
    totals.read({ key: sectionA, figures: figures('tcp', 4) });
    // A run ended over the open section, then the next run's section opened: A's 4 stay.
    expect(intactBy(totals.read({ key: sectionB, figures: figures('tcp', 1) }))).toEqual({ tcp: 5 });
    expect(intactBy(totals.read(undefined))).toEqual({ tcp: 5 });
    expect(intactBy(totals.read(undefined))).toEqual({ tcp: 5 });
  });

  it('takes a transport it was not given when its section comes', () => {
    const totals = new MetricTotals(['tcp']);
    expect(intactBy(totals.read({ key: sectionA, figures: figures('grpc', 2) }))).toEqual({ tcp: 0, grpc: 2 });
  });
});

describe('an open-loop section (RATE) and its command lane at a scrape, then at its end', () => {
  // 100 frames a second (an interval of 10 ms), DEADLINE_MS 15.
  const plan = fixturePlan({
    transport: 'tcp',
    label: 'TCP',
    imageCount: 4,
    imageSizeBytes: 100,
    sectionId: 5,
    ratePerSecond: 100,
    deadline: { deadlineMs: 15, allowedLateShare: 0.01 },
  });
  const MS = 1_000_000;
  const header = (seq: number, sentAtMs: number): FrameHeader => ({
    sectionId: 5,
    seq,
    sizeBytes: 100,
    checksum: 1n,
    sentAtNs: BigInt(sentAtMs * MS),
  });

  /**
   * Frames stamped 10 ms apart, arriving at 1.6, 11, 31.5 and 32 ms (gaps 9.4, 20.5, 0.5: jitter 0.6, 10.5, 9.5 ms),
   * stamped 0, 2, 10 and 30 ms after they were due: ages 1.6, 3, 21.5 and 32 ms, two over the deadline, one over three
   * intervals.
   */
  function openLoopRecorder(): SectionRecorder {
    const recorder = new SectionRecorder(plan);
    recorder.beginRecording(NO_WARMUP, 0n);
    for (const [seq, arrivalMs] of [1.6, 11, 31.5, 32].entries()) {
      recorder.record(header(seq, seq * 10), BigInt(Math.round(arrivalMs * MS)));
      recorder.verified(seq, true);
    }
    const dueLagMs = [0, 2, 10, 30];
    recorder.roundTrips(Float64Array.from(dueLagMs.flatMap((lag, index) => [index + 1, 40 * MS, lag * MS])));
    return recorder;
  }

  /** Two commands alone (1.2 and 3 ms one way, one corrupt), one beside (7 ms); round trips 2, 4 and 8 ms. */
  function commandArrivals(): CommandArrivals {
    const arrivals = new CommandArrivals(plan);
    const commands: [Parameters<typeof commandSeq>[0], number, number, number, boolean][] = [
      ['alone', 0, 1.2, 2, true],
      ['alone', 1, 3, 4, false],
      ['beside', 0, 7, 8, true],
    ];
    for (const [phase, index, oneWayMs, rttMs, intact] of commands) {
      const seq = commandSeq(phase, index);
      arrivals.record({ ...header(0, 100), seq }, BigInt(Math.round((100 + oneWayMs) * MS)));
      arrivals.verified(phase, intact);
      arrivals.roundTrip(seq, rttMs * MS);
    }
    return arrivals;
  }

  it('reads the frame ages, the jitter, the deadline counts, the longest gap and the commands so far', () => {
    const recorder = openLoopRecorder();
    const arrivals = commandArrivals();
    const live = recordingFigures(recorder, arrivals);
    expect(live.openLoop).toBe(true);
    expect(live.frameAge.count).toBe(4);
    expect(live.frameAge.sumSeconds).toBeCloseTo(0.0581, 12);
    // Bounds 1, 2.5, 5, 10, 25 and 50 ms.
    expect(live.frameAge.atOrBelow.slice(6, 12)).toEqual([0, 1, 2, 2, 3, 4]);
    expect(live.jitter.count).toBe(3);
    expect(live.jitter.sumSeconds).toBeCloseTo(0.0206, 12);
    // Bounds 0.5, 1, 2.5, 5, 10 and 25 ms.
    expect(live.jitter.atOrBelow.slice(5, 11)).toEqual([0, 1, 1, 1, 2, 3]);
    expect([live.lateCount, live.veryLateCount]).toEqual([2, 1]);
    expect(live.longestGapSeconds).toBeCloseTo(0.0205, 12);
    expect(live.commandLane).toBe(true);
    // Sent and acked are the transmitter's: known only at the end.
    expect(live.commands.alone).toMatchObject({ sent: 0, acked: 0, received: { intact: 1, corrupt: 1 } });
    expect(live.commands.beside).toMatchObject({ sent: 0, acked: 0, received: { intact: 1, corrupt: 0 } });
    expect(live.commands.alone.oneWay.atOrBelow.slice(6, 9)).toEqual([0, 1, 2]);
    expect(live.commands.alone.roundTrip.atOrBelow.slice(6, 9)).toEqual([0, 1, 2]);
    expect(live.commands.beside.oneWay.atOrBelow.slice(8, 10)).toEqual([0, 1]);
    expect(live.commands.beside.roundTrip.sumSeconds).toBeCloseTo(0.008, 12);

    // At the end: the counts from the result, the histograms as the record stood when it became final.
    const transmitter = {
      ratePerSecond: 100,
      sizeBytes: 64,
      notRun: null,
      alone: { ...emptyTransmitterPhase(), sent: 3, acked: 2 },
      beside: { ...emptyTransmitterPhase(), sent: 1, acked: 1 },
    };
    const lane = arrivals.result(transmitter, { interleaves: false, how: 'between images' });
    const result = { ...recorder.result(null), commands: lane };
    const ended = resultFigures(result, live);
    expect(ended.images).toEqual({ intact: 4, corrupt: 0, lost: 0 });
    expect([ended.openLoop, ended.lateCount, ended.veryLateCount]).toEqual([true, 2, 1]);
    expect(ended.longestGapSeconds).toBeCloseTo(0.0205, 12);
    expect(ended.frameAge).toEqual(live.frameAge);
    expect(ended.jitter).toEqual(live.jitter);
    expect(ended.commands.alone).toEqual({ ...live.commands.alone, sent: 3, acked: 2 });
    expect(ended.commands.beside).toEqual({ ...live.commands.beside, sent: 1, acked: 1 });
    // Without the final reading a result still gives its counts; its histograms count nothing.
    const countsOnly = resultFigures(result);
    expect([countsOnly.lateCount, countsOnly.frameAge.count, countsOnly.commands.alone.sent]).toEqual([2, 0, 3]);
    arrivals.destroy();
  });

  it('gives a closed-loop section without commands none of it', () => {
    const recorder = new SectionRecorder({ ...plan, ratePerSecond: null, deadline: null });
    recorder.beginRecording(NO_WARMUP, 0n);
    recorder.record(header(0, 0), 1_000_000n);
    recorder.verified(0, true);
    const live = recordingFigures(recorder, new CommandArrivals(plan));
    expect([live.openLoop, live.frameAge.count, live.jitter.count, live.lateCount, live.longestGapSeconds]).toEqual([
      false,
      0,
      0,
      0,
      null,
    ]);
    expect(live.commandLane).toBe(false);
    const ended = resultFigures(recorder.result(null), live);
    expect([ended.openLoop, ended.commandLane, ended.longestGapSeconds]).toEqual([false, false, null]);
  });

  it('adds the deadline counts and keeps the latest section’s longest gap, the open one’s while it has one', () => {
    const withGap = (transport: string, late: number, gapSeconds: number | null): TransportFigures => ({
      ...noFigures(transport),
      openLoop: true,
      lateCount: late,
      longestGapSeconds: gapSeconds,
    });
    const totals = new MetricTotals(['tcp']);
    totals.sectionEnded({}, withGap('tcp', 2, 0.02));
    const section = {};
    const [open] = totals.read({ key: section, figures: withGap('tcp', 1, 0.05) });
    expect([open!.lateCount, open!.longestGapSeconds, open!.openLoop]).toEqual([3, 0.05, true]);
    // An open section with no gap yet (fewer than two arrivals): the last section's stands.
    const [early] = totals.read({ key: section, figures: withGap('tcp', 0, null) });
    expect(early!.longestGapSeconds).toBe(0.02);
  });
});
