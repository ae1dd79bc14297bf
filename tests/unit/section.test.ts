import { describe, expect, it } from 'vitest';
import type { FrameHeader } from '../../services/core/wire/frame.js';
import {
  clientFairness,
  fanOutOf,
  isOverloaded,
  withFanOut,
  MIN_STABLE_IMAGES,
  MIN_STABLE_SPAN_MS,
  type SectionPlan,
} from '../../services/core/model/section.js';
import { SectionRecorder, type SectionSink } from '../../services/core/model/recorder.js';
import { acknowledgedOnlyResult, failedSectionResult } from '../../services/core/model/section-result.js';
import type { WarmupOutcome } from '../../services/core/model/warmup.js';
import { collectingSink, NO_WARMUP, resultWith } from '../helpers/fixtures.js';

const plan: SectionPlan = {
  sectionId: 5,
  transport: 'tcp',
  label: 'TCP',
  baseline: true,
  repeat: 1,
  imageCount: 3,
  warmup: { mode: 'images', images: 2 },
  imageSizeBytes: 1_000_000,
  window: 1,
  ratePerSecond: null,
  clients: 1,
  receivers: 1,
  receiverIndex: 0,
  clock: null,
};
const frame = (seq: number, sentAtNs: bigint, sizeBytes = 1_000_000): FrameHeader => ({
  sectionId: 5,
  seq,
  sizeBytes,
  checksum: 1n,
  sentAtNs,
});
/** How a fixed warm-up of `images` images went, as the transmitter reports it. */
const warmedUp = (images: number): WarmupOutcome => ({ images, ms: 0, steady: null, mediansMs: null });
/**
 * A recorder for a section without warm-up, recording from its first frame: the transmitter ends the (empty) warm-up
 * before it sends.
 */
const unwarmed = (overrides: Partial<SectionPlan>, sink?: SectionSink): SectionRecorder => {
  const recorder = new SectionRecorder({ ...plan, warmup: { mode: 'images', images: 0 }, ...overrides }, sink);
  recorder.beginRecording(NO_WARMUP, 0n);
  return recorder;
};

/** Records a frame and then its later verdict (none for null). */
const take = (
  recorder: SectionRecorder,
  header: FrameHeader,
  arrivalNs: bigint,
  checksumOk: boolean | null = true,
): string => {
  const status = recorder.record(header, arrivalNs);
  if (status === 'accepted' && checksumOk !== null) recorder.verified(header.seq, checksumOk);
  return status;
};

describe('SectionRecorder', () => {
  it(
    'for a transport that supersedes images, counts an image missing below the highest that arrived as ' +
      'superseded, and one missing above it as lost',
    () => {
      const images = collectingSink();
      const recorder = new SectionRecorder(
        { ...plan, imageCount: 6, window: 4, warmup: { mode: 'images', images: 0 } },
        images.sink,
        undefined,
        true,
      );
      recorder.beginRecording(NO_WARMUP, 0n);
      for (const seq of [0, 3, 4])
        take(recorder, frame(seq, 1_000_000n * BigInt(seq + 1)), 1_000_000n * BigInt(seq + 2));
      const result = recorder.result(null);
      expect([result.okCount, result.supersededCount, result.lostCount, result.ok]).toEqual([3, 2, 1, false]);
      expect(images.records.map((r) => r.status)).toEqual(['ok', 'superseded', 'superseded', 'ok', 'ok', 'lost']);
      // MB/s and images/s count the delivered only.
      expect(result.imagesPerSecond).toBeCloseTo((3 * 1000) / result.totalMs!, 9);
    },
  );

  it('for a transport that supersedes images, a section whose missing images were all written over is ok', () => {
    const recorder = new SectionRecorder(
      { ...plan, imageCount: 4, warmup: { mode: 'images', images: 0 } },
      undefined,
      undefined,
      true,
    );
    recorder.beginRecording(NO_WARMUP, 0n);
    for (const seq of [1, 3]) take(recorder, frame(seq, 1_000_000n), 2_000_000n);
    const result = recorder.result(null);
    expect([result.okCount, result.supersededCount, result.lostCount, result.ok]).toEqual([2, 2, 0, true]);
  });

  it('for any other transport, the same gaps are lost', () => {
    const recorder = unwarmed({ imageCount: 4 });
    for (const seq of [1, 3]) take(recorder, frame(seq, 1_000_000n), 2_000_000n);
    const result = recorder.result(null);
    expect([result.okCount, result.supersededCount, result.lostCount, result.ok]).toEqual([2, 0, 2, false]);
  });

  it('times each recorded image and the whole transport, skipping warm-up', () => {
    const images = collectingSink();
    const recorder = new SectionRecorder(plan, images.sink);
    expect(take(recorder, frame(0, 0n), 500_000n)).toBe('accepted');
    expect(take(recorder, frame(1, 600_000n), 900_000n)).toBe('accepted');
    expect(recorder.recordedCount).toBe(0);
    expect(recorder.firstRecordedSeq).toBeUndefined();
    // Both warm-up images acknowledged: the transmitter says so before it sends the recorded ones.
    recorder.beginRecording(warmedUp(2), 0n);
    expect(recorder.firstRecordedSeq).toBe(2);
    expect(take(recorder, frame(2, 1_000_000n), 3_000_000n)).toBe('accepted');
    expect(take(recorder, frame(3, 3_100_000n), 4_100_000n)).toBe('accepted');
    expect(take(recorder, frame(4, 4_200_000n), 8_200_000n)).toBe('accepted');
    expect(recorder.recordedCount).toBe(3);
    // Each image goes to output.log's sink as it is verified, the warm-up's not at all.
    expect(images.arrivals).toEqual([
      { image: 1, oneWayNs: 2_000_000, intact: true },
      { image: 2, oneWayNs: 1_000_000, intact: true },
      { image: 3, oneWayNs: 4_000_000, intact: true },
    ]);
    // No round trip came: the records wait for one until the section ends.
    expect(images.records).toEqual([]);
    const result = recorder.result(null);
    expect(images.records).toEqual([
      { image: 1, timeMs: 2, rttMs: null, status: 'ok' },
      { image: 2, timeMs: 1, rttMs: null, status: 'ok' },
      { image: 3, timeMs: 4, rttMs: null, status: 'ok' },
    ]);
    expect(result.imagesFile).toBeNull();
    expect(result.totalMs).toBe(7.2);
    expect(result.latency).toMatchObject({ count: 3, minMs: 1, maxMs: 4 });
    expect(result.latency?.meanMs).toBeCloseTo(7 / 3, 12);
    // The sample standard deviation (n − 1): times 2, 1, 4 around 7/3.
    expect(result.latency?.stdDevMs).toBeCloseTo(
      Math.sqrt(((2 - 7 / 3) ** 2 + (1 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2),
      12,
    );
    expect(result.throughputMBps).toBeCloseTo(3_000_000 / 1e3 / 7.2, 9);
    expect(result.imagesPerSecond).toBeCloseTo(3 / 0.0072, 9);
    expect(result.cost).toEqual({ transmitter: null, receiver: null, broker: null });
    expect([result.rtt, result.littleRatio, result.verifyMs]).toEqual([null, null, null]);
    expect(result.ok).toBe(true);
    expect([result.okCount, result.lostCount, result.corruptCount, result.duplicateCount]).toEqual([3, 0, 0, 0]);
  });

  it(
    'counts a checksum mismatch found after the ack, a wrong size, a gap, a duplicate, a stray and disorder, and ' +
      'fails',
    () => {
      const images = collectingSink();
      const recorder = unwarmed({ imageCount: 5 }, images.sink);
      // Accepted (acked) first; the verdict comes later and still makes the image corrupt.
      expect(take(recorder, frame(0, 0n), 1_000_000n, false)).toBe('accepted');
      expect(take(recorder, frame(2, 0n, 999), 1_000_000n, true)).toBe('accepted');
      expect(take(recorder, frame(1, 0n), 2_000_000n, true)).toBe('accepted');
      expect(take(recorder, frame(1, 0n), 2_000_000n, true)).toBe('rejected');
      expect(take(recorder, frame(9, 0n), 2_000_000n, true)).toBe('rejected');
      const result = recorder.result(null);
      expect(images.records.map((i) => i.status)).toEqual(['corrupt', 'ok', 'corrupt', 'lost', 'lost']);
      expect(images.records[3]).toEqual({ image: 4, timeMs: null, rttMs: null, status: 'lost' });
      // The lost go last, in order, after the images held for their round trips.
      expect(images.calls.map((c) => c.image).slice(3)).toEqual([4, 5]);
      // output.log's sink heard every arrival, corrupt ones too, in arrival order.
      expect(images.arrivals.map((a) => [a.image, a.intact])).toEqual([
        [1, false],
        [3, false],
        [2, true],
      ]);
      expect([result.okCount, result.corruptCount, result.lostCount]).toEqual([1, 2, 2]);
      expect([result.duplicateCount, result.strayCount, result.outOfOrderCount]).toEqual([1, 1, 1]);
      // Only intact images count in the time summary and the throughput.
      expect(result.latency).toMatchObject({ count: 1, minMs: 2, maxMs: 2 });
      expect(result.totalMs).toBe(2);
      expect(result.throughputMBps).toBeCloseTo(1_000_000 / 1e3 / 2, 9);
      expect(result.ok).toBe(false);
    },
  );

  it('keeps a failure reason and reports everything lost when nothing came', () => {
    const result = new SectionRecorder(plan).result('cannot connect');
    expect(result.ok).toBe(false);
    expect(result.failure).toBe('cannot connect');
    expect(result.lostCount).toBe(3);
    expect([result.totalMs, result.latency, result.throughputMBps, result.imagesPerSecond]).toEqual([
      null,
      null,
      null,
      null,
    ]);
  });

  it('is not ok when a failure is reported even if every image arrived', () => {
    const recorder = unwarmed({ imageCount: 1 });
    take(recorder, frame(0, 0n), 1n);
    expect(recorder.result('close failed').ok).toBe(false);
  });

  it('counts an image whose verdict never came as corrupt: it was not shown intact', () => {
    const images = collectingSink();
    const recorder = unwarmed({ imageCount: 1 }, images.sink);
    take(recorder, frame(0, 0n), 1_000_000n, null);
    expect(images.arrivals).toEqual([]);
    const result = recorder.result(null);
    expect(images.arrivals).toEqual([{ image: 1, oneWayNs: 1_000_000, intact: false }]);
    expect(images.records).toEqual([{ image: 1, timeMs: 1, rttMs: null, status: 'corrupt' }]);
    expect(result.corruptCount).toBe(1);
    expect(result.ok).toBe(false);
  });

  it("adds the round trips, their distribution and the Little's law ratio", () => {
    // Window 2, four images of 1 MB: stamped at 0, 0, 2 and 2 ms; arrivals at 1.5, 2, 3.5 and 4 ms.
    const images = collectingSink();
    const recorder = unwarmed({ imageCount: 4, window: 2 }, images.sink);
    [0n, 0n, 2_000_000n, 2_000_000n].forEach((sentAtNs, seq) => {
      take(recorder, frame(seq, sentAtNs), sentAtNs + (seq % 2 === 0 ? 1_500_000n : 2_000_000n));
    });
    const rttNs = [2_000_000, 2_000_000, 2_000_000, null];
    const result = resultWith(recorder, null, { rttNs, sentAtNs: [0n, 0n, 2_000_000n, 2_000_000n], verifyMs: 0.25 });
    expect(images.records.map((i) => i.rttMs)).toEqual([2, 2, 2, null]);
    // Each image's record goes as its round trip comes in; the one without waits for the end.
    expect(images.calls.map((c) => c.image)).toEqual([1, 2, 3, 4]);
    expect(images.calls[3]).toEqual({ image: 4, status: 'ok', oneWayNs: 2_000_000, rttNs: null, dueLagNs: null });
    expect(result.rtt).toMatchObject({ count: 3, minMs: 2, maxMs: 2, meanMs: 2, stdDevMs: 0, p50Ms: 2 });
    expect(result.totalMs).toBe(4);
    // Three acknowledged images, 2 ms each, from the first stamp (0) to the last ack (4 ms): 1.5 in
    // flight on average (Little's law), three quarters of WINDOW = 2.
    expect(result.meanInFlight).toBeCloseTo(1.5, 12);
    expect(result.littleRatio).toBeCloseTo(0.75, 12);
    expect(result.arrivalsAfterAck).toBe(0);
    expect(result.verifyMs).toBe(0.25);
  });

  it('fails a section whose window was broken, and counts the window as CLIENTS × WINDOW', () => {
    // Two images in flight at once for 2 ms, where WINDOW = 1 allows one.
    const broken = unwarmed({ imageCount: 2, window: 1 });
    [0n, 0n].forEach((sentAtNs, seq) => {
      take(broken, frame(seq, sentAtNs), 1_000_000n);
    });
    const result = resultWith(broken, null, { rttNs: [2_000_000, 2_000_000], sentAtNs: [0n, 0n] });
    expect([result.meanInFlight, result.littleRatio, result.ok]).toEqual([2, 2, false]);
    expect(result.failure).toBe('window check: 2.00 images in flight on average, more than CLIENTS × WINDOW = 1');
    // The same flights from two clients of WINDOW = 1: the window is full, not broken.
    const twoClients = unwarmed({ imageCount: 2, window: 1, clients: 2 });
    [0n, 0n].forEach((sentAtNs, seq) => {
      take(twoClients, frame(seq, sentAtNs), 1_000_000n);
    });
    expect(resultWith(twoClients, null, { rttNs: [2_000_000, 2_000_000], sentAtNs: [0n, 0n] })).toMatchObject({
      littleRatio: 1,
      ok: true,
      failure: null,
    });
  });

  it('shows no window figure under RATE or with several receivers, where no single window bounds the flights', () => {
    for (const overrides of [{ ratePerSecond: 100 }, { receivers: 2 }]) {
      const recorder = unwarmed({ imageCount: 1, ...overrides });
      take(recorder, frame(0, 0n), 1_000_000n);
      // The transmitter's mean in flight (1 here) is given; the recorder shows none.
      expect(resultWith(recorder, null, { rttNs: [2_000_000], sentAtNs: [0n] })).toMatchObject({
        littleRatio: null,
        meanInFlight: null,
      });
    }
  });

  it(
    'fails a section with an arrival stamped after its ack ' + "on one clock, and trusts the offset's bound across two",
    () => {
      // Image 2 is stamped arriving 3 ms after its send, but its ack was processed 2 ms after it.
      const late = (): SectionRecorder => {
        const recorder = unwarmed({ imageCount: 2 });
        take(recorder, frame(0, 0n), 1_000_000n);
        take(recorder, frame(1, 10_000_000n), 13_000_000n);
        return recorder;
      };
      const result = resultWith(late(), null, { rttNs: [2_000_000, 2_000_000] });
      expect([result.arrivalsAfterAck, result.ok]).toEqual([1, false]);
      expect(result.failure).toBe(
        'timing check: 1 of 2 images stamped as arriving after their ack was processed (one-way time over round ' +
          'trip on one clock): an arrival stamp came late',
      );
      // A transport's own failure comes first, the check's after it.
      expect(resultWith(late(), 'link broke', { rttNs: [2_000_000, 2_000_000] }).failure).toMatch(
        /^link broke; timing check: /,
      );
      // Across two kernels the one-way time carries the offset's error: no verdict.
      const acrossHosts = unwarmed({
        imageCount: 1,
        clock: { offsetNs: 0, uncertaintyNs: 2_000_000, roundTripNs: 100_000, samples: 8, applied: true },
      });
      take(acrossHosts, frame(0, 0n), 3_000_000n);
      expect(resultWith(acrossHosts, null, { rttNs: [2_000_000] })).toMatchObject({ arrivalsAfterAck: null, ok: true });
    },
  );
});

describe('SectionRecorder: memory that does not grow with the section', () => {
  it(
    'holds only the images waiting for their verdict or round trip, when round trips come in batches: 100,000 ' +
      'images',
    () => {
      const imageCount = 100_000;
      const batchImages = 1024;
      let records = 0;
      let lastRecorded = 0;
      let lostOrCorrupt = 0;
      const recorder = unwarmed(
        { imageCount, window: 8 },
        {
          arrived() {},
          recorded(image, status) {
            records++;
            lastRecorded = Math.max(lastRecorded, image);
            if (status !== 'ok') lostOrCorrupt++;
          },
        },
      );
      let batch: number[] = [];
      let mostHeld = 0;
      for (let seq = 0; seq < imageCount; seq++) {
        const sentAtNs = BigInt(seq) * 100_000n;
        recorder.record(frame(seq, sentAtNs), sentAtNs + 50_000n);
        // Verdicts come a few images late (the verifier's queue).
        if (seq >= 3) recorder.verified(seq - 3, true);
        batch.push(seq + 1, 80_000, Number.NaN);
        // The transmitter's batch of round trips, as its acks come: one every 1,024 images.
        if (batch.length === batchImages * 3) {
          recorder.roundTrips(Float64Array.from(batch));
          batch = [];
        }
        mostHeld = Math.max(mostHeld, recorder.heldImages);
      }
      for (let seq = imageCount - 3; seq < imageCount; seq++) recorder.verified(seq, true);
      recorder.roundTrips(Float64Array.from(batch));
      expect(recorder.heldImages).toBe(0);
      // At most a batch's worth and the verifier's queue: not the section.
      expect(mostHeld).toBeLessThanOrEqual(batchImages + 3);
      expect(records).toBe(imageCount);
      const result = recorder.result(null, { roundTripsShipped: imageCount });
      expect([records, lastRecorded, lostOrCorrupt]).toEqual([imageCount, imageCount, 0]);
      expect([result.ok, result.okCount, result.latency?.count, result.rtt?.count]).toEqual([
        true,
        imageCount,
        imageCount,
        imageCount,
      ]);
    },
  );

  it(
    'fails a section some of whose shipped round trips never reached it, and counts round trips for no image as ' +
      'stray',
    () => {
      const recorder = unwarmed({ imageCount: 2 });
      take(recorder, frame(0, 0n), 1_000_000n);
      take(recorder, frame(1, 0n), 1_000_000n);
      // Image 3 is beyond the section, -1 is no image: neither is taken.
      recorder.roundTrips(
        Float64Array.of(1, 2_000_000, Number.NaN, 3, 2_000_000, Number.NaN, -1, 2_000_000, Number.NaN),
      );
      const result = recorder.result(null, { roundTripsShipped: 2 });
      expect([result.ok, result.rtt?.count]).toEqual([false, 1]);
      expect(result.failure).toBe("round trips: 1 of 2 the transmitter sent never reached the receiver's record");
    },
  );
});

describe('SectionRecorder round trips for the live page', () => {
  it('gives the round trips joined since the last take once each, then none after the result', () => {
    const recorder = unwarmed({ imageCount: 4, window: 4 });
    expect(recorder.takeRoundTrips()).toBeNull();
    for (let seq = 0; seq < 4; seq++) take(recorder, frame(seq, 0n), 1_000_000n);
    // A round trip joins an arrival whichever comes first; one for no image is not taken.
    recorder.roundTrips(Float64Array.of(1, 2_000_000, Number.NaN, 2, 4_000_000, Number.NaN, 9, 1, Number.NaN));
    const first = recorder.takeRoundTrips();
    expect(first?.count).toBe(2);
    expect(first?.times.minMs).toBeCloseTo(2, 1);
    expect(first?.times.maxMs).toBeCloseTo(4, 1);
    // p99 needs 100 times, as a second's one-way p99 does.
    expect(first?.times.p99Ms).toBeNull();
    expect(recorder.takeRoundTrips()).toBeNull();
    recorder.roundTrips(Float64Array.of(3, 8_000_000, Number.NaN));
    const second = recorder.takeRoundTrips();
    expect([second?.count, Math.round(second?.times.p50Ms ?? 0)]).toEqual([1, 8]);
    recorder.roundTrips(Float64Array.of(4, 8_000_000, Number.NaN));
    const result = recorder.result(null, { roundTripsShipped: 4 });
    expect(result.rtt?.count).toBe(4);
    // Its histogram is freed with the result: a late read gets nothing rather than a freed histogram.
    expect(recorder.takeRoundTrips()).toBeNull();
  });
});

describe('SectionRecorder with a clock offset', () => {
  const clock = { offsetNs: 5_000_000, uncertaintyNs: 100_000, roundTripNs: 200_000, samples: 8 };

  /**
   * A section of one image sent at 1 ms (transmitter clock) and in hand at 8 ms (receiver clock), its verdict given;
   * its records in `images`.
   */
  const oneImage = (applied: boolean) => {
    const images = collectingSink();
    const recorder = unwarmed({ imageCount: 1, clock: { ...clock, applied } }, images.sink);
    take(recorder, frame(0, 1_000_000n), 8_000_000n);
    return { recorder, images };
  };

  it('moves send times onto the receiver clock when the offset is applied (different kernels)', () => {
    const { recorder, images } = oneImage(true);
    // Sent at 1 ms on the transmitter clock = 6 ms on the receiver clock; arrived at 8 ms.
    expect(images.arrivals).toEqual([{ image: 1, oneWayNs: 2_000_000, intact: true }]);
    expect(recorder.result(null).latency).toMatchObject({ count: 1, minMs: 2, maxMs: 2 });
    expect(images.records[0]?.timeMs).toBe(2);
  });

  it('reports but does not apply the offset on one kernel', () => {
    const { recorder, images } = oneImage(false);
    const result = recorder.result(null);
    expect(images.records[0]?.timeMs).toBe(7);
    expect(result.latency?.minMs).toBe(7);
    expect(result.clock?.offsetNs).toBe(5_000_000);
    // One clock: the one-way time carries no offset error, whatever the estimate after says.
    expect(
      oneImage(false).recorder.result(null, { clockAfter: { ...clock, offsetNs: 9_000_000 } }).oneWayClockErrorMs,
    ).toBeNull();
  });

  it("bounds the one-way times' clock error by the estimate before, widened by the drift seen after", () => {
    const before = oneImage(true).recorder.result(null);
    expect([before.oneWayClockErrorMs, before.clockAfter]).toEqual([0.1, null]);
    // 30 µs of drift by the end, estimated ± 80 µs there: 0.11 ms.
    const { recorder, images } = oneImage(true);
    const drifted = recorder.result(null, { clockAfter: { ...clock, offsetNs: 5_030_000, uncertaintyNs: 80_000 } });
    expect(drifted.oneWayClockErrorMs).toBeCloseTo(0.11, 12);
    expect(drifted.clockAfter?.offsetNs).toBe(5_030_000);
    // Times are moved by the offset before only: the bound covers the rest.
    expect(images.records[0]?.timeMs).toBe(2);
  });
});

describe('SectionRecorder: where the recorded images start', () => {
  /** A warm-up until steady, capped at 10 images so the cap is easy to reach. */
  const steadyPlan: SectionPlan = {
    ...plan,
    warmup: { mode: 'steady', minMs: 0, minImages: 4, maxMs: 1000, maxImages: 10, blockImages: 2, tolerance: 0.05 },
  };

  it('records from the seq beginRecording names: a warm-up of any length, then imageCount images, then strays', () => {
    const images = collectingSink();
    const recorder = new SectionRecorder(steadyPlan, images.sink);
    // Five warm-up images, 1 ms each, sent 1 ms apart: accepted (acked) but not recorded.
    for (let seq = 0; seq < 5; seq++)
      expect(take(recorder, frame(seq, BigInt(seq) * 1_000_000n), BigInt(seq + 1) * 1_000_000n)).toBe('accepted');
    expect([recorder.receivedCount, recorder.recordedCount, recorder.firstRecordedSeq]).toEqual([5, 0, undefined]);
    const outcome: WarmupOutcome = { images: 5, ms: 5.5, steady: true, mediansMs: [1, 1] };
    recorder.beginRecording(outcome, 0n);
    expect(recorder.firstRecordedSeq).toBe(5);
    expect(take(recorder, frame(5, 10_000_000n), 12_000_000n)).toBe('accepted');
    expect(take(recorder, frame(6, 12_000_000n), 13_000_000n)).toBe('accepted');
    expect(take(recorder, frame(7, 13_000_000n), 16_000_000n)).toBe('accepted');
    expect(recorder.recordedCount).toBe(3);
    // seq 8 = first + imageCount: beyond the section.
    expect(take(recorder, frame(8, 16_000_000n), 17_000_000n)).toBe('rejected');
    const result = recorder.result(null);
    expect(images.records.map((i) => [i.image, i.timeMs, i.status])).toEqual([
      [1, 2, 'ok'],
      [2, 1, 'ok'],
      [3, 3, 'ok'],
    ]);
    // From the stamp of seq 5 (10 ms) to the arrival of seq 7 (16 ms): the warm-up is not in it.
    expect(result.totalMs).toBe(6);
    expect(result.latency).toMatchObject({ count: 3, minMs: 1, maxMs: 3 });
    expect([result.strayCount, result.duplicateCount, result.ok]).toEqual([1, 0, false]);
    expect(result.warmedUp).toEqual(outcome);
  });

  it('keeps the first beginRecording: a second one moves nothing', () => {
    const recorder = new SectionRecorder(steadyPlan);
    recorder.beginRecording(warmedUp(4), 0n);
    recorder.beginRecording(warmedUp(7), 0n);
    expect(recorder.firstRecordedSeq).toBe(4);
    expect(recorder.result(null).warmedUp).toEqual(warmedUp(4));
  });

  it.each([
    ['a fixed warm-up of 2', plan, 1, 2],
    ['a fixed warm-up of 0', { ...plan, warmup: { mode: 'images', images: 0 } } satisfies SectionPlan, undefined, 0],
    ['a warm-up until steady, capped at 10 images', steadyPlan, 9, 10],
  ])(
    'before beginRecording, with %s, takes seqs below the warm-up limit and counts the limit on as stray',
    (_name, sectionPlan, lastAccepted, firstStray) => {
      const recorder = new SectionRecorder(sectionPlan);
      if (lastAccepted !== undefined) expect(take(recorder, frame(lastAccepted, 0n), 1_000_000n)).toBe('accepted');
      expect(take(recorder, frame(firstStray, 0n), 1_000_000n)).toBe('rejected');
      expect(take(recorder, frame(firstStray + 50, 0n), 1_000_000n)).toBe('rejected');
      expect(recorder.recordedCount).toBe(0);
      const result = recorder.result(null);
      expect([result.strayCount, result.lostCount, result.ok, result.warmedUp]).toEqual([2, 3, false, null]);
    },
  );

  it('takes a late warm-up frame after beginRecording without recording it', () => {
    const recorder = new SectionRecorder(plan);
    take(recorder, frame(0, 0n), 1_000_000n);
    recorder.beginRecording(warmedUp(2), 0n);
    // Seq 1 was a warm-up image; it is not one of the recorded ones.
    expect(take(recorder, frame(1, 1_000_000n), 2_000_000n)).toBe('accepted');
    expect(recorder.recordedCount).toBe(0);
    expect(recorder.result(null).lostCount).toBe(3);
  });
});

describe('SectionResult.throughputIndicative', () => {
  it('is set at 30 images and 200 ms', () => {
    expect([MIN_STABLE_IMAGES, MIN_STABLE_SPAN_MS]).toEqual([30, 200]);
  });

  /**
   * `count` intact images of 1 ms each, evenly stamped so the last arrives at `spanNs`; `corrupt` of them fail their
   * checksum.
   */
  const section = (count: number, spanNs: number, corrupt = 0) => {
    const recorder = unwarmed({ imageCount: count });
    const lastSentNs = BigInt(spanNs) - 1_000_000n;
    for (let seq = 0; seq < count; seq++) {
      const sentAtNs = count === 1 ? 0n : (lastSentNs * BigInt(seq)) / BigInt(count - 1);
      take(recorder, frame(seq, sentAtNs), sentAtNs + 1_000_000n, seq < count - corrupt);
    }
    return recorder.result(null);
  };

  it.each([
    ['10 images over 1000 ms', 10, 1_000_000_000, 0, 10, 1000, true],
    ['29 images over 1000 ms', 29, 1_000_000_000, 0, 29, 1000, true],
    ['30 images over 100 ms', 30, 100_000_000, 0, 30, 100, true],
    ['30 images over 199.999999 ms', 30, 199_999_999, 0, 30, 199.999999, true],
    ['30 images over exactly 200 ms', 30, 200_000_000, 0, 30, 200, false],
    ['31 images over 200.000001 ms', 31, 200_000_001, 0, 31, 200.000001, false],
    ['30 images over 300 ms, one corrupt: 29 intact', 30, 300_000_000, 1, 29, 300, true],
    ['1000 images over 5 s', 1000, 5_000_000_000, 0, 1000, 5000, false],
  ])('%s', (_name, count, spanNs, corrupt, okCount, totalMs, indicative) => {
    const result = section(count, spanNs, corrupt);
    expect([result.okCount, result.totalMs, result.throughputIndicative]).toEqual([okCount, totalMs, indicative]);
  });

  it('is true when no image arrived (no span at all)', () => {
    const result = unwarmed({ imageCount: 40 }).result('cannot connect');
    expect([result.totalMs, result.throughputMBps, result.throughputIndicative]).toEqual([null, null, true]);
  });
});

describe('SectionResult.coldStart', () => {
  it(
    "takes the first image's one-way time from seq 0, a warm-up image, and passes the transmitter's figures " +
      'through',
    () => {
      const recorder = new SectionRecorder(plan);
      // Seq 0: sent at 0, in hand at 7.5 ms (a new connection's first image is slow); seq 1: 1 ms.
      take(recorder, frame(0, 0n), 7_500_000n);
      take(recorder, frame(1, 8_000_000n), 9_000_000n);
      recorder.beginRecording(warmedUp(2), 0n);
      for (const seq of [2, 3, 4])
        take(recorder, frame(seq, BigInt(seq) * 10_000_000n), BigInt(seq) * 10_000_000n + 1_000_000n);
      const result = recorder.result(null, { coldStart: { connectMs: 12.25, firstImageRttMs: 9.5 } });
      expect(result.coldStart).toEqual({ connectMs: 12.25, firstImageMs: 7.5, firstImageRttMs: 9.5 });
      // The cold first image is in none of the recorded figures.
      expect(result.latency?.maxMs).toBe(1);
    },
  );

  it("is seq 0 = image 1 without warm-up, on the receiver's clock when the offset is applied", () => {
    const clock = { offsetNs: 5_000_000, uncertaintyNs: 100_000, roundTripNs: 200_000, samples: 8, applied: true };
    const images = collectingSink();
    const recorder = unwarmed({ imageCount: 1, clock }, images.sink);
    // Sent at 1 ms on the transmitter clock = 6 ms on the receiver clock; arrived at 8 ms.
    take(recorder, frame(0, 1_000_000n), 8_000_000n);
    const result = recorder.result(null);
    expect(result.coldStart).toEqual({ connectMs: null, firstImageMs: 2, firstImageRttMs: null });
    expect(result.coldStart.firstImageMs).toBe(images.records[0]!.timeMs);
  });

  it('has no first image when seq 0 never arrived', () => {
    const recorder = new SectionRecorder(plan);
    take(recorder, frame(1, 0n), 1_000_000n);
    expect(recorder.result('reset', { coldStart: { connectMs: 2, firstImageRttMs: null } }).coldStart).toEqual({
      connectMs: 2,
      firstImageMs: null,
      firstImageRttMs: null,
    });
  });
});

describe('acknowledgedOnlyResult', () => {
  it('with a warm-up outcome: counts acknowledged recorded seqs as intact, the rest lost, warm-up acks aside', () => {
    const outcome: WarmupOutcome = { images: 2, ms: 3, steady: null, mediansMs: null };
    // Seqs 0 and 1 are the warm-up; images 1 and 3 were acknowledged (the transmitter's count), image 2 never.
    const rtt = {
      count: 2,
      p50Ms: 1,
      p90Ms: null,
      p99Ms: null,
      p999Ms: null,
      minMs: 1,
      maxMs: 3,
      meanMs: 2,
      stdDevMs: Math.SQRT2,
    };
    const result = acknowledgedOnlyResult(plan, 2, 'receiver gone', outcome, {
      rtt,
      achievedRatePerSecond: null,
      coldStart: { connectMs: 4, firstImageRttMs: 1.5 },
    });
    expect([result.okCount, result.lostCount, result.corruptCount, result.ok, result.failure]).toEqual([
      2,
      1,
      0,
      false,
      'receiver gone',
    ]);
    // The round trips are the transmitter's own; the receiver's record (and its file) is gone.
    expect([result.rtt, result.imagesFile, result.histograms]).toEqual([rtt, null, { oneWayNs: null, rttNs: null }]);
    expect([result.totalMs, result.latency, result.throughputMBps, result.throughputIndicative]).toEqual([
      null,
      null,
      null,
      true,
    ]);
    expect(result.warmedUp).toEqual(outcome);
    // The receiver's record is gone: no one-way time for the first image.
    expect(result.coldStart).toEqual({ connectMs: 4, firstImageMs: null, firstImageRttMs: 1.5 });
    // More acknowledged than the section's images cannot make more than its images intact.
    expect(acknowledgedOnlyResult(plan, 5, 'receiver gone', outcome)).toMatchObject({ okCount: 3, lostCount: 0 });
  });

  it(
    'without a warm-up outcome (the warm-up never ended): ' + 'every recorded image is lost, whatever was acknowledged',
    () => {
      const result = acknowledgedOnlyResult(plan, 1, 'receiver gone', undefined);
      expect([result.okCount, result.lostCount, result.warmedUp]).toEqual([0, 3, null]);
      expect(result.coldStart).toEqual({ connectMs: null, firstImageMs: null, firstImageRttMs: null });
    },
  );
});

describe('failedSectionResult', () => {
  const coldStart = { connectMs: 4, firstImageRttMs: 1.5 };
  const rtt = {
    count: 1,
    p50Ms: 1,
    p90Ms: null,
    p99Ms: null,
    p999Ms: null,
    minMs: 1,
    maxMs: 1,
    meanMs: 1,
    stdDevMs: 0,
  };
  // Closed and open loop, DURATION, several clients and receivers, a clock applied: every branch of the shape.
  const plans: SectionPlan[] = [
    plan,
    { ...plan, ratePerSecond: 100, clients: 2 },
    { ...plan, durationMs: 1000, receivers: 2, receiverIndex: 1 },
    { ...plan, clock: { offsetNs: 5, uncertaintyNs: 2, roundTripNs: 4, samples: 8, applied: true } },
  ];

  it.each(plans)(
    'with nothing acknowledged: what the recorder of a section where nothing arrived gives (%#)',
    (each) => {
      expect(failedSectionResult(each, 'receiver gone', coldStart, undefined)).toEqual(
        new SectionRecorder(each).result('receiver gone', { coldStart }),
      );
      const none = { count: 0, warmedUp: warmedUp(2), extras: { imagesSent: 7, rtt } };
      expect(failedSectionResult(each, 'reset', undefined, none)).toEqual(
        new SectionRecorder(each).result('reset', {}),
      );
    },
  );

  it.each(plans)('with acks: the recorder of a section where nothing arrived, counted from the acks (%#)', (each) => {
    const extras = { imagesSent: 2, rtt, coldStart, achievedRatePerSecond: 90, meanInFlight: 1 };
    for (const outcome of [warmedUp(2), undefined]) {
      const recorder = new SectionRecorder(each);
      if (outcome !== undefined) recorder.beginRecording(outcome, 0n);
      const recorded = recorder.result('receiver gone', extras);
      const okCount = outcome === undefined ? 0 : Math.min(2, recorded.imageCount);
      const expected = { ...recorded, okCount, lostCount: recorded.imageCount - okCount, rtt };
      expect(acknowledgedOnlyResult(each, 2, 'receiver gone', outcome, extras)).toEqual(expected);
      expect(failedSectionResult(each, 'receiver gone', coldStart, { count: 2, warmedUp: outcome, extras })).toEqual(
        expected,
      );
    }
  });
});

describe('SectionRecorder under RATE (open loop)', () => {
  it("counts latency from the due time too, a late send's wait included, and stays ok", () => {
    const images = collectingSink();
    const recorder = unwarmed({ imageCount: 4, ratePerSecond: 100 }, images.sink);
    // Due every 10 ms. Image 2 (seq 1) waited 8 ms for a window slot; image 4 (seq 3) was sent 2 ms late.
    take(recorder, frame(0, 0n), 1_000_000n);
    take(recorder, frame(1, 18_000_000n), 19_000_000n);
    take(recorder, frame(2, 20_000_000n), 23_000_000n);
    take(recorder, frame(3, 32_000_000n), 33_000_000n);
    const result = resultWith(recorder, null, {
      rttNs: [2_000_000, 2_000_000, 4_000_000, 2_000_000],
      dueLagNs: [0, 8_000_000, 0, 2_000_000],
      achievedRatePerSecond: 93.75,
    });
    expect(images.records.map((i) => i.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    // Each image's stamp − due goes to its record with its round trip.
    expect(images.calls.map((c) => [c.image, c.rttNs, c.dueLagNs])).toEqual([
      [1, 2_000_000, 0],
      [2, 2_000_000, 8_000_000],
      [3, 4_000_000, 0],
      [4, 2_000_000, 2_000_000],
    ]);
    expect([result.okCount, result.lostCount, result.ok]).toEqual([4, 0, true]);
    // Arrivals at 1, 19, 23 and 33 ms: 3 images after the first in 32 ms.
    expect(result.openLoop).toMatchObject({
      ratePerSecond: 100,
      achievedRatePerSecond: 93.75,
      deliveredRatePerSecond: 93.75,
      overloaded: true,
    });
    expect(result.openLoop?.sendLag).toMatchObject({ count: 4, minMs: 0, maxMs: 8 });
    // One-way 1, 1, 3, 1 ms from the stamp; 1, 9, 3, 3 ms from the due time.
    expect(result.latency).toMatchObject({ count: 4, minMs: 1, maxMs: 3 });
    // p50 is 3 ms as the histogram reads it (its bucket's top, 3 significant digits).
    expect(result.openLoop?.latencyFromDue).toMatchObject({ count: 4, minMs: 1, maxMs: 9, p50Ms: 3.000319 });
    // Round trips 2, 2, 4, 2 ms from the stamp; 2, 10, 4, 4 ms from the due time.
    expect(result.openLoop?.rttFromDue).toMatchObject({ count: 4, minMs: 2, maxMs: 10, p50Ms: 4.001791 });
  });

  it('is overloaded when images went out, or arrived, at under 95 % of RATE, and not at 95 % or over', () => {
    const recorder = unwarmed({ imageCount: 3, ratePerSecond: 100 });
    // Arrivals 20 ms apart: 50 images/s delivered, though sent on time.
    take(recorder, frame(0, 0n), 1_000_000n);
    take(recorder, frame(1, 10_000_000n), 21_000_000n);
    take(recorder, frame(2, 20_000_000n), 41_000_000n);
    const slow = resultWith(recorder, null, { dueLagNs: [0, 0, 0], achievedRatePerSecond: 100 });
    expect(slow.openLoop).toMatchObject({ achievedRatePerSecond: 100, deliveredRatePerSecond: 50, overloaded: true });
    expect([
      isOverloaded(100, 95, 95),
      isOverloaded(100, 94.9, 100),
      isOverloaded(100, 100, 94.9),
      isOverloaded(100, null, null),
    ]).toEqual([false, true, true, false]);
  });

  it('still fails on an image sent and never arrived, and on one never sent (the section failed first: lost)', () => {
    const images = collectingSink();
    const recorder = unwarmed({ imageCount: 3, ratePerSecond: 10 }, images.sink);
    take(recorder, frame(0, 0n), 1_000_000n);
    const result = resultWith(recorder, null, { rttNs: [2_000_000, null, null], dueLagNs: [0, 5, null] });
    expect(images.records.map((i) => i.status)).toEqual(['ok', 'lost', 'lost']);
    expect([result.ok, result.lostCount, result.openLoop?.deliveredRatePerSecond]).toEqual([false, 2, null]);
  });

  it('has no open-loop figures in a closed loop, whatever lags are given', () => {
    const recorder = unwarmed({ imageCount: 1 });
    take(recorder, frame(0, 0n), 1_000_000n);
    expect(resultWith(recorder, null, { dueLagNs: [null] }).openLoop).toBeNull();
  });
});

describe('clientFairness', () => {
  it("gives the fewest and most images, the slowest and fastest client in MB/s, and Jain's index", () => {
    // 1,000,000-byte images: 10 and 30 images/s are 10 and 30 MB/s; Jain = (10+30)² ÷ (2·(100+900)) = 0.8.
    expect(
      clientFairness(
        [
          { images: 5, imagesPerSecond: 10 },
          { images: 15, imagesPerSecond: 30 },
        ],
        1_000_000,
      ),
    ).toEqual({
      clients: 2,
      fewestImages: 5,
      mostImages: 15,
      slowestMBps: 10,
      fastestMBps: 30,
      jainIndex: 0.8,
    });
  });

  it('is 1 when every client is served alike, and counts a client served nothing as 0', () => {
    expect(
      clientFairness(
        [
          { images: 3, imagesPerSecond: 7 },
          { images: 3, imagesPerSecond: 7 },
          { images: 3, imagesPerSecond: 7 },
        ],
        1000,
      )?.jainIndex,
    ).toBe(1);
    // One of four has it all: 1/4; the idle ones are the slowest, at 0.
    expect(
      clientFairness(
        [
          { images: 8, imagesPerSecond: 20 },
          { images: 0, imagesPerSecond: null },
          { images: 0, imagesPerSecond: null },
          { images: 0, imagesPerSecond: null },
        ],
        1_000_000,
      ),
    ).toMatchObject({
      fewestImages: 0,
      slowestMBps: 0,
      fastestMBps: 20,
      jainIndex: 0.25,
    });
  });

  it('has no rates or index when no client has a rate', () => {
    expect(
      clientFairness(
        [
          { images: 1, imagesPerSecond: null },
          { images: 0, imagesPerSecond: null },
        ],
        1000,
      ),
    ).toEqual({ clients: 2, fewestImages: 0, mostImages: 1, slowestMBps: null, fastestMBps: null, jainIndex: null });
    expect(clientFairness([], 1000)).toBeNull();
  });
});

describe('fanOutOf and withFanOut (RECEIVERS > 1)', () => {
  // Two receivers of one section: the first got both images (1 and 3 ms), the second only the first (2 ms).
  const receiverResult = (receiverIndex: number, arrivals: [seq: number, arrivalNs: bigint][]) => {
    const recorder = unwarmed({ imageCount: 2, receivers: 2, receiverIndex });
    for (const [seq, arrivalNs] of arrivals) take(recorder, frame(seq, 0n), arrivalNs);
    return resultWith(recorder, null, { rttNs: arrivals.map(([, ns]) => Number(ns) + 500_000) });
  };
  const first = receiverResult(0, [
    [0, 1_000_000n],
    [1, 3_000_000n],
  ]);
  const second = receiverResult(1, [[0, 2_000_000n]]);

  it("gives each receiver's counts and times, and one distribution over all of them", () => {
    const fanOut = fanOutOf([first, second], 'copies');
    expect(fanOut.mode).toBe('copies');
    expect(fanOut.perReceiver.map((r) => [r.receiver, r.ok, r.okCount, r.lostCount])).toEqual([
      [0, true, 2, 0],
      [1, false, 1, 1],
    ]);
    expect(fanOut.aggregate).toMatchObject({ okCount: 3, lostCount: 1, corruptCount: 0 });
    expect(fanOut.aggregate.latency).toMatchObject({ count: 3, minMs: 1, maxMs: 3 });
    expect(fanOut.aggregate.rtt).toMatchObject({ count: 3, minMs: 1.5, maxMs: 3.5 });
  });

  it("makes the first receiver's section not ok when another receiver's was not, naming it", () => {
    const merged = withFanOut(first, fanOutOf([first, second], 'one send'));
    expect([merged.ok, merged.failure]).toEqual([false, 'receiver 2 of 2: 1 lost, 0 corrupt']);
    const allOk = withFanOut(first, fanOutOf([first, first], 'one send'));
    expect([allOk.ok, allOk.failure, allOk.fanOut?.mode]).toEqual([true, null, 'one send']);
  });

  it(
    "keeps each receiver's clock error bound, the largest for all, null when every one shares the transmitter's " +
      'kernel',
    () => {
      expect(fanOutOf([first, second], 'copies').aggregate.oneWayClockErrorMs).toBeNull();
      const fanOut = fanOutOf(
        [first, { ...second, oneWayClockErrorMs: 0.25 }, { ...second, receiverIndex: 2, oneWayClockErrorMs: 0.125 }],
        'copies',
      );
      expect(fanOut.perReceiver.map((r) => r.oneWayClockErrorMs)).toEqual([null, 0.25, 0.125]);
      expect(fanOut.aggregate.oneWayClockErrorMs).toBe(0.25);
    },
  );
});
