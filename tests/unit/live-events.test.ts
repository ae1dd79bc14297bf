import { describe, expect, it } from 'vitest';
import {
  LiveEventHistory,
  parseLastEventId,
  sseMessage,
  type LiveEvent,
} from '../../services/core/live/event-history.js';
import {
  etaSeconds,
  mergeSeconds,
  runEndData,
  secondEventData,
  sectionStartData,
  type LiveSecondData,
  type LiveSectionStartData,
} from '../../services/core/live/live-events.js';
import type { SectionPlan } from '../../services/core/model/section.js';

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
