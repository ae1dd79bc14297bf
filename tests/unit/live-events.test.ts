import { describe, expect, it } from 'vitest';
import {
  LiveEventHistory,
  parseLastEventId,
  sseMessage,
  type LiveEvent,
} from '../../services/core/live/event-history.js';
import {
  commandLaneData,
  etaSeconds,
  mergeSeconds,
  partialSecondSpan,
  runEndData,
  secondEventData,
  sectionEndData,
  sectionStartData,
  type LiveSecondData,
  type LiveSectionStartData,
} from '../../services/core/live/live-events.js';
import type { CommandLaneResult, CommandPhaseResult } from '../../services/core/model/command-lane.js';
import type { DeadlineFigures, SectionPlan } from '../../services/core/model/section.js';
import type { LatencySummary } from '../../services/core/model/stats.js';
import { fixturePlan, fixtureSection } from '../helpers/fixtures.js';

// GET /events' history: ids from 1, since() gives exactly what a client missed, the seconds merged
// as they age within a bound, and merged figures that say what they are.

const PLAN: SectionPlan = {
  sectionId: 7,
  transport: 'tcp',
  label: 'TCP',
  baseline: true,
  repeat: 1,
  imageCount: 1000,
  durationMs: null,
  warmup: { mode: 'images', images: 0 },
  imageSizeBytes: 1_000_000,
  window: 4,
  ratePerSecond: null,
  clients: 1,
  receivers: 1,
  receiverIndex: 0,
  clock: null,
};

const START = { sectionId: 7 } as LiveSectionStartData;

/** Second `second` of section `sectionId`: `second + 1` images of 1 MB, p50 = second, p99 = 10 × second. */
function second(second: number, sectionId = 7, seconds = 1): LiveSecondData {
  return {
    ...secondEventData(
      { ...PLAN, sectionId },
      {
        sample: {
          second,
          images: second + 1,
          intactBytes: (second + 1) * 1_000_000,
          times: { minMs: 0, p50Ms: second, p99Ms: 10 * second, maxMs: 20 * second },
        },
        recorded: 100 * (second + 1),
        receiverCpuMsPerSecond: second,
        receiverRssBytes: 1000 + second,
      },
    ),
    seconds,
  };
}

const ids = (events: readonly LiveEvent[]): number[] => events.map((e) => e.id);

describe('the live event history', () => {
  it('gives ids from 1 in order, and since() exactly the events after the one a client last had', () => {
    const history = new LiveEventHistory();
    expect([history.lastId, history.empty, history.ended]).toEqual([0, true, false]);
    history.append('run', {} as never);
    history.append('section-start', START);
    for (let s = 0; s < 3; s++) history.append('second', second(s));
    history.append('section-end', {} as never);
    history.append('run-end', runEndData({ sections: [], stopReason: null }));
    expect(ids(history.since(undefined))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(history.since(undefined).map((e) => e.event)).toEqual([
      'run',
      'section-start',
      'second',
      'second',
      'second',
      'section-end',
      'run-end',
    ]);
    expect(ids(history.since(0))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(ids(history.since(4))).toEqual([5, 6, 7]);
    expect(history.since(7)).toEqual([]);
    expect(history.since(99)).toEqual([]);
    expect([history.lastId, history.ended, history.empty]).toEqual([7, true, false]);
    // A new run starts a new history; ids go on, so an old client's Last-Event-ID hides nothing of it.
    history.append('run', {} as never);
    expect(ids(history.since(undefined))).toEqual([8]);
    expect(ids(history.since(5))).toEqual([8]);
    expect(history.ended).toBe(false);
  });

  it('writes each event as id, event and one JSON data line', () => {
    const event: LiveEvent = {
      id: 3,
      firstId: 3,
      event: 'run-end',
      data: { stopReason: 'a\nb', succeeded: false, sections: 2 },
    };
    expect(sseMessage(event)).toBe(
      'id: 3\nevent: run-end\ndata: {"stopReason":"a\\nb","succeeded":false,"sections":2}\n\n',
    );
  });

  it('reads a Last-Event-ID only when it is a whole number', () => {
    expect([parseLastEventId('12'), parseLastEventId(' 5 '), parseLastEventId(undefined)]).toEqual([12, 5, undefined]);
    expect([parseLastEventId('x'), parseLastEventId('-1'), parseLastEventId('1.5'), parseLastEventId('')]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('merges the oldest seconds pairwise past its bound, keeping the recent ones whole', () => {
    const history = new LiveEventHistory({ maxStoredSeconds: 6, recentSeconds: 2 });
    history.append('run', {} as never); // id 1
    history.append('section-start', START); // id 2
    for (let s = 0; s < 8; s++) history.append('second', second(s)); // ids 3..10
    const stored = history.since(undefined);
    expect(history.storedSeconds).toBe(6);
    // Seconds 0+1 and 2+3 merged (the shortest spans first, oldest of equals), 4..7 whole.
    expect(stored.map((e) => [e.firstId, e.id])).toEqual([
      [1, 1],
      [2, 2],
      [3, 4],
      [5, 6],
      [7, 7],
      [8, 8],
      [9, 9],
      [10, 10],
    ]);
    expect(stored.slice(2).map((e) => [(e.data as LiveSecondData).second, (e.data as LiveSecondData).seconds])).toEqual(
      [
        [0, 2],
        [2, 2],
        [4, 1],
        [5, 1],
        [6, 1],
        [7, 1],
      ],
    );
    // A Last-Event-ID inside a merged span (5 of 5..6): nothing of it again, the rest after it.
    expect(ids(history.since(5))).toEqual([7, 8, 9, 10]);
    expect(ids(history.since(4))).toEqual([6, 7, 8, 9, 10]);
    expect(ids(history.since(2))).toEqual([4, 6, 7, 8, 9, 10]);
    // Two more: the 2 s buckets are next to merge only once no two whole aged seconds are left.
    for (let s = 8; s < 10; s++) history.append('second', second(s));
    expect(
      history
        .since(2)
        .map((e) => [(e.data as LiveSecondData).second, (e.data as LiveSecondData).seconds, e.firstId, e.id]),
    ).toEqual([
      [0, 2, 3, 4],
      [2, 2, 5, 6],
      [4, 2, 7, 8],
      [6, 2, 9, 10],
      [8, 1, 11, 11],
      [9, 1, 12, 12],
    ]);
  });

  it("keeps every non-second event, so no two sections' seconds are ever neighbours to merge", () => {
    const history = new LiveEventHistory({ maxStoredSeconds: 3, recentSeconds: 1 });
    history.append('run', {} as never);
    for (const sectionId of [1, 2, 3, 4]) {
      history.append('section-start', { sectionId } as LiveSectionStartData);
      history.append('second', second(0, sectionId));
      history.append('section-end', {} as never);
    }
    // One aged second per section: none can merge, so the bound is recentSeconds + sections.
    expect(history.storedSeconds).toBe(4);
    expect(history.size).toBe(1 + 4 * 3);
  });

  it('holds a day-long section and more in a constant bound: 100,000 seconds in, at most 1,000 kept', () => {
    const history = new LiveEventHistory();
    history.append('run', {} as never);
    history.append('section-start', START);
    let images = 0;
    for (let s = 0; s < 100_000; s++) {
      history.append('second', second(s));
      images += s + 1;
    }
    history.append('section-end', {} as never);
    // Merged an eighth of the aged seconds at a time: between 1,000 − 87 and 1,000 kept.
    expect(history.storedSeconds).toBeLessThanOrEqual(1000);
    expect(history.storedSeconds).toBeGreaterThan(1000 - 88);
    expect(history.size).toBe(history.storedSeconds + 3);
    const seconds = history.since(undefined).flatMap((e) => (e.event === 'second' ? [e.data as LiveSecondData] : []));
    // Nothing lost in the merging: every image counted once, the spans tile the section without a gap.
    expect(seconds.reduce((sum, s) => sum + s.images, 0)).toBe(images);
    expect(seconds.reduce((sum, s) => sum + s.seconds, 0)).toBe(100_000);
    for (let i = 1; i < seconds.length; i++)
      expect(seconds[i]!.second).toBe(seconds[i - 1]!.second + seconds[i - 1]!.seconds);
    // The last 300 seconds whole; the oldest in buckets of at most 512 s.
    expect(seconds.slice(-300).every((s) => s.seconds === 1)).toBe(true);
    expect(Math.max(...seconds.map((s) => s.seconds))).toBeLessThanOrEqual(512);
    // The ids of all stored events still rise along the list, firsts after the previous newest.
    const events = history.since(undefined);
    for (let i = 1; i < events.length; i++) expect(events[i]!.firstId).toBe(events[i - 1]!.id + 1);
  });
});

describe('merged seconds', () => {
  it('sum counts, take rates over the span covered, and give p50/p99 as the larger of the two', () => {
    // Seconds 3 (4 images) and 6 (7 images): a span of 4 s, two of them without an arrival.
    const merged = mergeSeconds(second(3), second(6));
    expect(merged).toEqual({
      ...second(6),
      second: 3,
      seconds: 4,
      images: 11,
      intactBytes: 11_000_000,
      throughputMBps: 11 / 4,
      imagesPerSecond: 11 / 4,
      oneWayP50Ms: 6,
      oneWayP99Ms: 60,
      recorded: 700,
      receiverCpuMsPerSecond: 4.5,
      receiverRssBytes: 1006,
    });
    // A missing percentile does not hide the other's; CPU per second weighted by the seconds each covered.
    const withoutTimes = { ...second(0, 7, 3), oneWayP50Ms: null, oneWayP99Ms: null, receiverCpuMsPerSecond: 10 };
    expect(mergeSeconds(withoutTimes, second(3))).toMatchObject({
      second: 0,
      seconds: 4,
      oneWayP50Ms: 3,
      oneWayP99Ms: 30,
      receiverCpuMsPerSecond: (10 * 3 + 3) / 4,
    });
  });

  it('give one second its rates and an ETA at its rate, or the rest of a DURATION', () => {
    const data = second(4);
    expect([data.throughputMBps, data.imagesPerSecond, data.imageCount, data.etaSeconds]).toEqual([5, 5, 1000, 100]);
    expect(etaSeconds({ imageCount: 1000, durationMs: null }, 1000, 9, 0)).toBe(0);
    expect(etaSeconds({ imageCount: 1000, durationMs: null }, 10, 9, 0)).toBeNull();
    expect(etaSeconds({ imageCount: 1000, durationMs: 60_000 }, 10, 15, 3)).toBe(45);
    expect(etaSeconds({ imageCount: 1000, durationMs: 60_000 }, 10, 65, 3)).toBe(0);
    expect(secondEventData({ ...PLAN, durationMs: 5000 }, { ...readingOf(second(1)), recorded: 3 }).imageCount).toBe(
      null,
    );
  });
});

describe('the other sides in a second', () => {
  const times = (p50Ms: number, p99Ms: number | null) => ({ minMs: 0, p50Ms, p99Ms, maxMs: 99 });
  const withSides = (at: number, reading: Partial<Parameters<typeof secondEventData>[1]>): LiveSecondData =>
    secondEventData(PLAN, { ...readingOf(second(at)), ...reading });

  it("carry the round trips taken, the transmitter's load and the broker's, or say there were none", () => {
    const data = withSides(2, {
      roundTrips: { count: 50, times: times(2, null) },
      transmitter: { cpuMsPerSecond: 100, rssBytes: 50e6 },
    });
    expect(data).toMatchObject({
      roundTrips: 50,
      roundTripP50Ms: 2,
      roundTripP99Ms: null,
      transmitter: { cpuMsPerSecond: 100, rssBytes: 50e6 },
      broker: null,
    });
    expect(withSides(3, {})).toMatchObject({ roundTrips: 0, roundTripP50Ms: null, transmitter: null, broker: null });
  });

  it(
    'merge as one span: round trips summed, their percentiles ' + 'the larger, CPU weighted by seconds, RSS the larger',
    () => {
      const older = {
        ...withSides(2, {
          roundTrips: { count: 50, times: times(2, null) },
          transmitter: { cpuMsPerSecond: 100, rssBytes: 50e6 },
        }),
        seconds: 3,
      };
      const newer = withSides(5, {
        roundTrips: { count: 150, times: times(1.5, 9) },
        transmitter: { cpuMsPerSecond: 300, rssBytes: 40e6 },
        broker: { cpuMsPerSecond: 5, rssBytes: 7e6 },
      });
      expect(mergeSeconds(older, newer)).toMatchObject({
        seconds: 4,
        roundTrips: 200,
        roundTripP50Ms: 2,
        roundTripP99Ms: 9,
        transmitter: { cpuMsPerSecond: (100 * 3 + 300) / 4, rssBytes: 50e6 },
        // Only the newer had a broker reading: it stands for the span.
        broker: { cpuMsPerSecond: 5, rssBytes: 7e6 },
      });
    },
  );

  it("give a section's clock offset bound only where its times were moved by the offset", () => {
    const clock = { offsetNs: 3e9, uncertaintyNs: 250_000, roundTripNs: 500_000, samples: 8 };
    expect(sectionStartData({ ...PLAN, clock: { ...clock, applied: true } }).clockOffsetBoundMs).toBe(0.25);
    expect(sectionStartData({ ...PLAN, clock: { ...clock, applied: false } }).clockOffsetBoundMs).toBeNull();
    expect(sectionStartData(PLAN).clockOffsetBoundMs).toBeNull();
  });
});

function readingOf(data: LiveSecondData): Parameters<typeof secondEventData>[1] {
  return {
    sample: { second: data.second, images: data.images, intactBytes: data.intactBytes, times: null },
    recorded: data.recorded,
    receiverCpuMsPerSecond: data.receiverCpuMsPerSecond,
    receiverRssBytes: data.receiverRssBytes,
  };
}

describe('a partial last second', () => {
  it.each([
    // second, its images, last arrival (ms into the span), the section's images → the part of the second covered
    ['to the last arrival', 2, 10, 2500, 100, 0.5],
    ['at the mean gap, for one image that came just after the second began', 3, 1, 3125, 4, 0.78125],
    ['at most the whole second', 2, 8, 2500, 10, 1],
    ['whole without a last arrival', 2, 8, null, 10, 1],
    ['whole without an image', 0, 0, 0, 0, 1],
  ])('is covered %s', (_name, second, images, lastArrivalMs, recordedImages, covered) => {
    expect(partialSecondSpan(second, images, lastArrivalMs, recordedImages)).toBe(covered);
  });

  it('gives its rates over the part covered, says it is partial, and merges as the end of a span', () => {
    const sample = { second: 4, images: 10, intactBytes: 10_000_000, times: null };
    const reading = { sample, recorded: 510, receiverCpuMsPerSecond: 1, receiverRssBytes: 1 };
    const last = secondEventData({ ...PLAN, durationMs: 4500 }, { ...reading, coveredSeconds: 0.5 });
    expect(last).toMatchObject({
      second: 4,
      seconds: 0.5,
      partial: true,
      images: 10,
      throughputMBps: 20,
      imagesPerSecond: 20,
      etaSeconds: 0,
    });
    // Covered whole (the last arrival on the second's end): not partial.
    expect(secondEventData(PLAN, { ...reading, coveredSeconds: 1 })).toMatchObject({ seconds: 1, partial: false });
    expect(secondEventData(PLAN, reading)).toMatchObject({ seconds: 1, partial: false, throughputMBps: 10 });
    // Merged with the second before it: 1.5 s covered, 14 images, still the section's partial end.
    const merged = mergeSeconds(second(3), last);
    expect(merged).toMatchObject({ second: 3, seconds: 1.5, partial: true, images: 14, imagesPerSecond: 14 / 1.5 });
    expect(mergeSeconds(last, second(5))).toMatchObject({ partial: false });
  });
});

describe('an open-loop section in its events', () => {
  const RATE_PLAN: SectionPlan = { ...PLAN, ratePerSecond: 50, deadline: { deadlineMs: 40, allowedLateShare: 0.01 } };
  const jitter: LatencySummary = {
    count: 119,
    p50Ms: 0.5,
    p90Ms: 2,
    p99Ms: 9,
    p999Ms: null,
    minMs: 0,
    maxMs: 55,
    meanMs: 1.25,
    stdDevMs: 4.5,
  };
  const counts = { agedFrames: 120, lateCount: 3, veryLateCount: 1, longestGapMs: 75, jitter };
  const reading = {
    sample: { second: 2, images: 50, intactBytes: 50_000_000, times: { minMs: 1, p50Ms: 2, p99Ms: null, maxMs: 3 } },
    recorded: 150,
    receiverCpuMsPerSecond: 10,
    receiverRssBytes: 1000,
  };

  it('gives a deadline and an interval at its start, none in a closed loop', () => {
    expect(sectionStartData(RATE_PLAN)).toMatchObject({ ratePerSecond: 50, deadlineMs: 40, intervalMs: 20 });
    // A plan from before deadlines: one interval.
    expect(sectionStartData({ ...RATE_PLAN, deadline: undefined })).toMatchObject({ deadlineMs: 20, intervalMs: 20 });
    expect(sectionStartData(PLAN)).toMatchObject({ deadlineMs: null, intervalMs: null });
  });

  it('leads each second with the frame ages taken since the last, and carries the deadline counts so far', () => {
    const data = secondEventData(RATE_PLAN, {
      ...reading,
      frameAges: { count: 48, times: { minMs: 5, p50Ms: 12, p99Ms: null, maxMs: 61 } },
      deadline: counts,
    });
    expect(Object.keys(data).indexOf('frameAgeP50Ms')).toBeLessThan(Object.keys(data).indexOf('oneWayP50Ms'));
    expect(data).toMatchObject({ frameAges: 48, frameAgeP50Ms: 12, frameAgeP99Ms: null, oneWayP50Ms: 2 });
    expect(data.deadline).toEqual({
      deadlineMs: 40,
      intervalMs: 20,
      agedFrames: 120,
      lateCount: 3,
      veryLateCount: 1,
      longestGapMs: 75,
      jitterMeanMs: 1.25,
      jitterSdMs: 4.5,
      jitterP99Ms: 9,
      jitterMaxMs: 55,
    });
    // Before two arrivals: the counts, no gap, no jitter.
    expect(
      secondEventData(RATE_PLAN, { ...reading, deadline: { ...counts, longestGapMs: null, jitter: null } }).deadline,
    ).toMatchObject({ longestGapMs: null, jitterMeanMs: null, jitterSdMs: null, jitterP99Ms: null, jitterMaxMs: null });
    // A closed loop has neither, whatever the reading holds.
    expect(secondEventData(PLAN, { ...reading, deadline: counts })).toMatchObject({
      frameAges: 0,
      frameAgeP50Ms: null,
      frameAgeP99Ms: null,
      deadline: null,
    });
  });

  it('merges frame ages as round trips (summed, the larger percentile) and keeps the newer deadline counts', () => {
    const older = secondEventData(RATE_PLAN, {
      ...reading,
      frameAges: { count: 40, times: { minMs: 5, p50Ms: 12, p99Ms: null, maxMs: 61 } },
      deadline: counts,
    });
    const newer = secondEventData(RATE_PLAN, {
      ...reading,
      sample: { ...reading.sample, second: 3 },
      frameAges: { count: 60, times: { minMs: 5, p50Ms: 10, p99Ms: 30, maxMs: 31 } },
      deadline: { ...counts, lateCount: 5 },
    });
    expect(mergeSeconds(older, newer)).toMatchObject({
      frameAges: 100,
      frameAgeP50Ms: 12,
      frameAgeP99Ms: 30,
      deadline: { lateCount: 5 },
    });
  });

  it('ends with the frame age first, the deadline figures and shares, and the command lane', () => {
    const base = fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP', ratePerSecond: 50 }), [2, 4]);
    const deadline: DeadlineFigures = {
      deadlineMs: 40,
      intervalMs: 20,
      allowedLateShare: 0.01,
      framesSent: 200,
      ...counts,
      undeliveredCount: 2,
      missedShare: 0.025,
      lateShare: 0.015,
      veryLateShare: 0.005,
      overDeadline: true,
    };
    const end = sectionEndData({
      ...base,
      frameAge: three(20, 30),
      openLoop: { ...base.openLoop!, deadline },
      commands: lane({ interleaves: false, delayFactorP50: 3.5 }),
    });
    expect(Object.keys(end).indexOf('frameAgeP50Ms')).toBeLessThan(Object.keys(end).indexOf('oneWayP50Ms'));
    expect(end).toMatchObject({ frameAgeP50Ms: 20, frameAgeP99Ms: null, oneWayP50Ms: base.latency!.p50Ms });
    expect(end.deadline).toEqual({
      deadlineMs: 40,
      intervalMs: 20,
      agedFrames: 120,
      lateCount: 3,
      veryLateCount: 1,
      longestGapMs: 75,
      jitterMeanMs: 1.25,
      jitterSdMs: 4.5,
      jitterP99Ms: 9,
      jitterMaxMs: 55,
      allowedLateShare: 0.01,
      framesSent: 200,
      undeliveredCount: 2,
      missedShare: 0.025,
      lateShare: 0.015,
      veryLateShare: 0.005,
      overDeadline: true,
    });
    expect(end.commands).toEqual(commandLaneData(lane({ interleaves: false, delayFactorP50: 3.5 })));
    // A closed-loop section without a lane: none of them.
    const closed = sectionEndData(fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP' }), [2, 4]));
    expect(closed).toMatchObject({ frameAgeP50Ms: null, frameAgeP99Ms: null, deadline: null, commands: null });
  });
});

/** Three times of median `p50Ms` and largest `maxMs`, as a summary gives them (too few for p90 and above). */
function three(p50Ms: number, maxMs: number): LatencySummary {
  return { count: 3, p50Ms, p90Ms: null, p99Ms: null, p999Ms: null, minMs: 0, maxMs, meanMs: p50Ms, stdDevMs: 1 };
}

/** A command lane: alone, one-way p50 2 ms and round trip 3 ms; beside, 6 and 7 ms. */
function lane(overrides: Partial<CommandLaneResult>): CommandLaneResult {
  const phase = (oneWay: LatencySummary, rtt: LatencySummary): CommandPhaseResult => ({
    sent: 3,
    acked: 3,
    rtt,
    sendLag: null,
    received: 3,
    corrupt: 0,
    unacknowledged: 0,
    oneWay,
    paired: 3,
    arrivalsAfterAck: 0,
  });
  return {
    ratePerSecond: 100,
    sizeBytes: 64,
    how: 'between images',
    interleaves: true,
    notRun: null,
    alone: phase(three(2, 3), three(3, 4)),
    beside: phase(three(6, 8), three(7, 9)),
    delayFactorP50: 3,
    ...overrides,
  };
}

describe("a section's command lane in its end", () => {
  it("gives each phase's counts and times, the × factor, and how the lane went: behind, beside, or not run", () => {
    expect(commandLaneData(lane({}))).toEqual({
      ratePerSecond: 100,
      sizeBytes: 64,
      lane: 'beside',
      notRun: null,
      alone: {
        sent: 3,
        acked: 3,
        received: 3,
        corrupt: 0,
        unacknowledged: 0,
        oneWayP50Ms: 2,
        oneWayP99Ms: null,
        oneWayMaxMs: 3,
        roundTripP50Ms: 3,
        roundTripP99Ms: null,
        arrivalsAfterAck: 0,
      },
      beside: {
        sent: 3,
        acked: 3,
        received: 3,
        corrupt: 0,
        unacknowledged: 0,
        oneWayP50Ms: 6,
        oneWayP99Ms: null,
        oneWayMaxMs: 8,
        roundTripP50Ms: 7,
        roundTripP99Ms: null,
        arrivalsAfterAck: 0,
      },
      delayFactorP50: 3,
    });
    expect(commandLaneData(lane({ interleaves: false })).lane).toBe('behind');
    const notRun = commandLaneData(lane({ interleaves: null, how: null, notRun: 'no second stream' }));
    expect([notRun.lane, notRun.notRun]).toEqual([null, 'no second stream']);
    // Across two clocks the arrivals-after-ack check is not made: null, not 0.
    const twoClocks = lane({});
    twoClocks.beside.arrivalsAfterAck = null;
    expect(commandLaneData(twoClocks).beside.arrivalsAfterAck).toBeNull();
  });
});
