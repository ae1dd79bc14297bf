import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { FrameHeader } from '../../services/core/wire/frame.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import type { SectionPlan } from '../../services/core/model/section.js';
import { AsciiLines } from '../../services/receiver/run-output/ascii-lines.js';
import { NO_WARMUP } from '../helpers/fixtures.js';

// Issue 53: the receiver's record makes no garbage per image (no object, bigint or string from a frame's record to its
// CSV line), so the collector has nothing to do for it. Measured as the JS heap allocated per image (what the
// collector freed plus what it kept) over many images, once the code is warm: it was 300–430 bytes an image.

/** JS heap bytes allocated per call of `step` over `times` calls (freed by the collector, plus kept). */
function heapBytesPerCall(step: () => void, times: number): number {
  const profiler = new v8.GCProfiler();
  const before = v8.getHeapStatistics().used_heap_size;
  profiler.start();
  for (let i = 0; i < times; i++) step();
  const { statistics } = profiler.stop();
  const after = v8.getHeapStatistics().used_heap_size;
  let freed = 0;
  for (const gc of statistics)
    freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
  return (freed + after - before) / times;
}

describe('the receiver record, per image', () => {
  it('allocates nothing from the frame to its output.log and CSV lines, round trips in batches', () => {
    const imageCount = 2_000_000;
    const plan = { imageCount, imageSizeBytes: 1000, window: 16, ratePerSecond: null, clock: null } as SectionPlan;
    const log = new AsciiLines(() => undefined);
    const csv = new AsciiLines(() => undefined);
    const recorder = new SectionRecorder(
      { ...plan, sectionId: 1, warmup: { mode: 'images', images: 0 } },
      {
        arrived: (image, oneWayNs, intact) => log.imageLine(image, oneWayNs, intact ? 'ok' : 'corrupt', false),
        recorded: (image, status, oneWayNs, rttNs, dueLagNs) => csv.csvLine(image, status, oneWayNs, rttNs, dueLagNs),
      },
    );
    recorder.beginRecording(NO_WARMUP, 0n);
    // The gate's headers and stamps, made before the measure (the gate makes them, not the record).
    const headers: FrameHeader[] = [];
    const arrivals: bigint[] = [];
    for (let i = 0; i < 1024; i++) {
      headers.push({ sectionId: 1, seq: 0, sizeBytes: 1000, checksum: 5n, sentAtNs: 10n ** 12n + BigInt(i) * 1000n });
      arrivals.push(10n ** 12n + BigInt(i) * 1000n + 250_000n + BigInt(i % 7));
    }
    const batch = new Float64Array(3 * 64);
    let seq = 0;
    const image = (): void => {
      const header = headers[seq & 1023]!;
      header.seq = seq;
      recorder.record(header, arrivals[seq & 1023]!);
      recorder.verified(seq, true);
      const at = (seq & 63) * 3;
      batch[at] = seq + 1;
      batch[at + 1] = 400_000 + (seq & 255);
      batch[at + 2] = Number.NaN;
      if ((seq & 63) === 63) recorder.roundTrips(batch);
      seq++;
    };
    // Warm: the record's code optimised, its columns at their size (whole batches: nothing is left held).
    heapBytesPerCall(image, 294_400);
    const bytesPerImage = heapBytesPerCall(image, 409_600);
    expect(recorder.heldImages).toBe(0);
    // Below a bigint's or an object's size: what is left is the engine's own (a boxed number now and then).
    expect(bytesPerImage).toBeLessThan(16);
  });
});
