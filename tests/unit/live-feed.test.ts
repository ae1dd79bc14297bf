import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LiveEvent } from '../../services/core/live/event-history.js';
import type { LiveEventData } from '../../services/core/live/live-events.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import type { RunInfo } from '../../services/core/report/report.js';
import { LiveFeed } from '../../services/receiver/live-feed.js';
import { fixturePlan, NO_WARMUP } from '../helpers/fixtures.js';
import { testLog } from '../helpers/harness.js';

// GET /events' feed over a real recorder, its once-a-second read driven by fake timers: the round trips and frame
// ages taken each second, and those that came after the last read go out with the section's last second, which is
// marked partial (its rates over the part the images covered), before the section's end.

const MS = 1_000_000;
// 10 frames a second (an interval of 100 ms), DEADLINE_MS 120: 25 frames, the last five 150 ms late on their send.
const plan = fixturePlan({
  transport: 'tcp',
  label: 'TCP',
  sectionId: 4,
  imageCount: 25,
  imageSizeBytes: 1000,
  ratePerSecond: 10,
  deadline: { deadlineMs: 120, allowedLateShare: 0.01 },
});
const INFO = {
  startedAt: '2026-01-02T03:04:05.678Z',
  imageDescription: 'zeros',
  imageSizeBytes: 1000,
  imageCount: 25,
  window: 1,
  warmup: { mode: 'images', images: 0 },
  repeat: 1,
  transports: ['tcp'],
  receivers: 1,
  receiverIndex: 0,
  config: { ratePerSecond: 10, deadline: { deadlineMs: 120, allowedLateShare: 0.01 }, commandRatePerSecond: 50 },
} as unknown as RunInfo;

/** Frame `seq` stamped at seq × 100 ms, arriving 1 ms later, verified intact. */
function arrive(recorder: SectionRecorder, seq: number): void {
  const sentAtNs = BigInt(seq * 100 * MS);
  recorder.record({ sectionId: 4, seq, sizeBytes: 1000, checksum: 0n, sentAtNs }, sentAtNs + BigInt(MS));
  recorder.verified(seq, true);
}

/**
 * The round trips (2 ms each) of images `from` to `to`, the last five stamped 150 ms after they were due; in a closed
 * loop (`openLoop` false) no frame has a due time.
 */
function roundTrips(recorder: SectionRecorder, from: number, to: number, openLoop = true): void {
  const records: number[] = [];
  for (let image = from; image <= to; image++)
    records.push(image, 2 * MS, openLoop ? (image > 20 ? 150 * MS : 0) : Number.NaN);
  recorder.roundTrips(Float64Array.from(records));
}

describe("the live feed at a section's end", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends the round trips and frame ages taken after the last read with its last second, marked partial', () => {
    const feed = new LiveFeed(testLog);
    const events: LiveEvent[] = [];
    feed.listen((event) => events.push(event));
    const recorder = new SectionRecorder(plan);
    feed.runStarted(INFO);
    feed.sectionOpened(plan, recorder);
    recorder.beginRecording(NO_WARMUP, 0n);
    // Seconds 0 and 1 (up to 1.401 s): a read once a second sends the closed one with the round trips in so far.
    for (let seq = 0; seq < 15; seq++) arrive(recorder, seq);
    roundTrips(recorder, 1, 12);
    vi.advanceTimersByTime(1000);
    // The rest arrive, and their round trips come in the transmitter's last batch, after the last read.
    for (let seq = 15; seq < 25; seq++) arrive(recorder, seq);
    roundTrips(recorder, 13, 25);
    feed.sectionEnding(recorder);
    const result = recorder.result(null);
    feed.sectionEnded(result);
    feed.close();

    expect(events.map((e) => e.event)).toEqual(['run', 'section-start', 'second', 'second', 'second', 'section-end']);
    expect(events[0]!.data).toMatchObject({
      ratePerSecond: 10,
      deadline: { deadlineMs: 120, allowedLateShare: 0.01 },
      commandRatePerSecond: 50,
    });
    const seconds = events.filter((e) => e.event === 'second').map((e) => e.data as LiveEventData['second']);
    expect(seconds.map((s) => [s.second, s.images, s.roundTrips, s.frameAges, s.partial])).toEqual([
      [0, 10, 12, 12, false],
      [1, 10, 0, 0, false],
      [2, 5, 13, 13, true],
    ]);
    // Every round trip and frame age reached the stream once, the last batch with the last second.
    expect(seconds.reduce((sum, s) => sum + s.roundTrips, 0)).toBe(result.rtt!.count);
    expect(seconds.reduce((sum, s) => sum + s.frameAges, 0)).toBe(result.frameAge!.count);
    // The last second: five frames to 2.401 s, at the section's mean gap (2.401 s over 25) 0.4802 s: its rate
    // over that part is the section's, not half of it.
    const last = seconds[2]!;
    expect(last.seconds).toBeCloseTo(0.4802, 12);
    expect(last.imagesPerSecond).toBeCloseTo(5 / 0.4802, 9);
    // Deadline counts: 12 aged at the read, none late; all 25 at the end, the last five over the deadline (151 ms)
    // but not over three intervals (300 ms).
    expect(seconds[0]!.deadline).toMatchObject({ deadlineMs: 120, intervalMs: 100, agedFrames: 12, lateCount: 0 });
    expect(last.deadline).toMatchObject({ agedFrames: 25, lateCount: 5, veryLateCount: 0, longestGapMs: 100 });
    // Of the last batch's 13 ages, 8 are 1 ms and 5 are 151 ms: its p50 is the former.
    expect(last.frameAgeP50Ms).toBeLessThan(2);
    const end = events.at(-1)!.data as LiveEventData['section-end'];
    expect(end.deadline).toMatchObject({ framesSent: 25, lateCount: 5, missedShare: 0.2, overDeadline: true });
  });

  it('sends a closed-loop section as before: no frame age, no deadline, its last second still partial', () => {
    const closed = { ...plan, ratePerSecond: null, deadline: null };
    const feed = new LiveFeed(testLog);
    const events: LiveEvent[] = [];
    feed.listen((event) => events.push(event));
    const recorder = new SectionRecorder(closed);
    feed.runStarted(INFO);
    feed.sectionOpened(closed, recorder);
    recorder.beginRecording(NO_WARMUP, 0n);
    for (let seq = 0; seq < 15; seq++) arrive(recorder, seq);
    roundTrips(recorder, 1, 15, false);
    feed.sectionEnding(recorder);
    feed.sectionEnded(recorder.result(null));
    feed.close();
    const seconds = events.filter((e) => e.event === 'second').map((e) => e.data as LiveEventData['second']);
    expect(seconds.map((s) => [s.second, s.roundTrips, s.frameAges, s.deadline, s.partial])).toEqual([
      [0, 0, 0, null, false],
      [1, 15, 0, null, true],
    ]);
  });
});
