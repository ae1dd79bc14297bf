import { describe, expect, it } from 'vitest';
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
import type { FrameHeader } from '../../services/core/wire/frame.js';
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
