import { describe, expect, it } from 'vitest';
import type { FrameHeader } from '../../services/core/frame.js';
import { SectionRecorder, type SectionPlan } from '../../services/core/section.js';

const plan: SectionPlan = { sectionId: 5, transport: 'tcp', label: 'TCP', baseline: true, repeat: 1, imageCount: 3, warmup: 2, imageSizeBytes: 1_000_000, window: 1, clock: null };
const frame = (seq: number, sentAtNs: bigint, sizeBytes = 1_000_000): FrameHeader => ({ sectionId: 5, seq, sizeBytes, checksum: 1n, sentAtNs });

describe('SectionRecorder', () => {
  /** Records a frame and then its later verdict (none for null). */
  const take = (recorder: SectionRecorder, header: FrameHeader, arrivalNs: bigint, checksumOk: boolean | null = true): string => {
    const status = recorder.record(header, arrivalNs);
    if (status === 'accepted' && checksumOk !== null) recorder.verified(header.seq, checksumOk);
    return status;
  };

  it('times each recorded image and the whole transport, skipping warm-up', () => {
    const recorder = new SectionRecorder(plan);
    expect(take(recorder, frame(0, 0n), 500_000n)).toBe('accepted');
    expect(take(recorder, frame(1, 600_000n), 900_000n)).toBe('accepted');
    expect(recorder.recordedCount).toBe(0);
    expect(take(recorder, frame(2, 1_000_000n), 3_000_000n)).toBe('accepted');
    expect(take(recorder, frame(3, 3_100_000n), 4_100_000n)).toBe('accepted');
    expect(take(recorder, frame(4, 4_200_000n), 8_200_000n)).toBe('accepted');
    expect(recorder.recordedCount).toBe(3);
    const result = recorder.result(null);
    expect(result.images).toEqual([
      { image: 1, timeMs: 2, rttMs: null, status: 'ok' },
      { image: 2, timeMs: 1, rttMs: null, status: 'ok' },
      { image: 3, timeMs: 4, rttMs: null, status: 'ok' },
    ]);
    expect(result.totalMs).toBe(7.2);
    expect(result.latency).toMatchObject({ count: 3, minMs: 1, maxMs: 4 });
    expect(result.latency?.meanMs).toBeCloseTo(7 / 3, 12);
    // The sample standard deviation (n − 1): times 2, 1, 4 around 7/3.
    expect(result.latency?.stdDevMs).toBeCloseTo(Math.sqrt(((2 - 7 / 3) ** 2 + (1 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2), 12);
    expect(result.throughputMBps).toBeCloseTo(3_000_000 / 1e3 / 7.2, 9);
    expect(result.imagesPerSecond).toBeCloseTo(3 / 0.0072, 9);
    expect(result.cost).toEqual({ transmitter: null, receiver: null, broker: null });
    expect([result.rtt, result.littleRatio, result.verifyMs]).toEqual([null, null, null]);
    expect(result.ok).toBe(true);
    expect([result.okCount, result.lostCount, result.corruptCount, result.duplicateCount]).toEqual([3, 0, 0, 0]);
  });

  it('counts a checksum mismatch found after the ack, a wrong size, a gap, a duplicate, a stray and disorder, and fails', () => {
    const recorder = new SectionRecorder({ ...plan, warmup: 0, imageCount: 5 });
    // Accepted (acked) first; the verdict comes later and still makes the image corrupt.
    expect(take(recorder, frame(0, 0n), 1_000_000n, false)).toBe('accepted');
    expect(take(recorder, frame(2, 0n, 999), 1_000_000n, true)).toBe('accepted');
    expect(take(recorder, frame(1, 0n), 2_000_000n, true)).toBe('accepted');
    expect(take(recorder, frame(1, 0n), 2_000_000n, true)).toBe('rejected');
    expect(take(recorder, frame(9, 0n), 2_000_000n, true)).toBe('rejected');
    const result = recorder.result(null);
    expect(result.images.map((i) => i.status)).toEqual(['corrupt', 'ok', 'corrupt', 'lost', 'lost']);
    expect(result.images[3]!.timeMs).toBeNull();
    expect([result.okCount, result.corruptCount, result.lostCount]).toEqual([1, 2, 2]);
    expect([result.duplicateCount, result.strayCount, result.outOfOrderCount]).toEqual([1, 1, 1]);
    // Only intact images count in the time summary and the throughput.
    expect(result.latency).toMatchObject({ count: 1, minMs: 2, maxMs: 2 });
    expect(result.totalMs).toBe(2);
    expect(result.throughputMBps).toBeCloseTo(1_000_000 / 1e3 / 2, 9);
    expect(result.ok).toBe(false);
  });

  it('keeps a failure reason and reports everything lost when nothing came', () => {
    const result = new SectionRecorder(plan).result('cannot connect');
    expect(result.ok).toBe(false);
    expect(result.failure).toBe('cannot connect');
    expect(result.lostCount).toBe(3);
    expect([result.totalMs, result.latency, result.throughputMBps, result.imagesPerSecond]).toEqual([null, null, null, null]);
  });

  it('is not ok when a failure is reported even if every image arrived', () => {
    const recorder = new SectionRecorder({ ...plan, warmup: 0, imageCount: 1 });
    take(recorder, frame(0, 0n), 1n);
    expect(recorder.result('close failed').ok).toBe(false);
  });

  it('counts an image whose verdict never came as corrupt: it was not shown intact', () => {
    const recorder = new SectionRecorder({ ...plan, warmup: 0, imageCount: 1 });
    take(recorder, frame(0, 0n), 1_000_000n, null);
    const result = recorder.result(null);
    expect(result.images[0]).toMatchObject({ status: 'corrupt', timeMs: 1 });
    expect(result.ok).toBe(false);
  });

  it('adds the round trips, their distribution and the Little\'s law ratio', () => {
    // Window 2, four images of 1 MB: stamped at 0, 0, 2 and 2 ms; arrivals at 1.5, 2, 3.5 and 4 ms.
    const recorder = new SectionRecorder({ ...plan, warmup: 0, imageCount: 4, window: 2 });
    [0n, 0n, 2_000_000n, 2_000_000n].forEach((sentAtNs, seq) => take(recorder, frame(seq, sentAtNs), sentAtNs + (seq % 2 === 0 ? 1_500_000n : 2_000_000n)));
    const rttNs = [2_000_000, 2_000_000, 2_000_000, null];
    const result = recorder.result(null, { rttNs, verifyMs: 0.25 });
    expect(result.images.map((i) => i.rttMs)).toEqual([2, 2, 2, null]);
    expect(result.rtt).toMatchObject({ count: 3, minMs: 2, maxMs: 2, meanMs: 2, stdDevMs: 0, p50Ms: 2 });
    expect(result.totalMs).toBe(4);
    // Mean round trip 2 ms against WINDOW × total ÷ images acknowledged = 2 × 4 ÷ 3.
    expect(result.littleRatio).toBeCloseTo(2 / ((2 * 4) / 3), 12);
    expect(result.verifyMs).toBe(0.25);
  });
});

describe('SectionRecorder with a clock offset', () => {
  const clock = { offsetNs: 5_000_000, uncertaintyNs: 100_000, roundTripNs: 200_000, samples: 8 };

  it('moves send times onto the receiver clock when the offset is applied (different kernels)', () => {
    const recorder = new SectionRecorder({ ...plan, warmup: 0, imageCount: 1, clock: { ...clock, applied: true } });
    // Sent at 1 ms on the transmitter clock = 6 ms on the receiver clock; arrived at 8 ms.
    recorder.record(frame(0, 1_000_000n), 8_000_000n);
    expect(recorder.result(null).images[0]?.timeMs).toBe(2);
  });

  it('reports but does not apply the offset on one kernel', () => {
    const recorder = new SectionRecorder({ ...plan, warmup: 0, imageCount: 1, clock: { ...clock, applied: false } });
    recorder.record(frame(0, 1_000_000n), 8_000_000n);
    const result = recorder.result(null);
    expect(result.images[0]?.timeMs).toBe(7);
    expect(result.clock?.offsetNs).toBe(5_000_000);
  });
});
