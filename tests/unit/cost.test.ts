import { describe, expect, it } from 'vitest';
import { brokerCost, busyShare, sideCost } from '../../services/core/model/cost.js';

describe('sideCost', () => {
  it('turns two readings into CPU, per-image CPU and event-loop utilization', () => {
    const start = { cpuUserMicros: 1_000_000, cpuSystemMicros: 200_000, eluIdleMs: 500, eluActiveMs: 100 };
    const end = { cpuUserMicros: 1_030_000, cpuSystemMicros: 210_000, eluIdleMs: 510, eluActiveMs: 140 };
    expect(sideCost(start, end, 123_456_789, 10)).toEqual({
      cpuUserMs: 30,
      cpuSystemMs: 10,
      cpuMs: 40,
      cpuMsPerImage: 4,
      peakRssBytes: 123_456_789,
      eventLoopUtilization: 0.8,
    });
  });

  it('gives zeros, not NaN, for an empty span', () => {
    const reading = { cpuUserMicros: 1, cpuSystemMicros: 1, eluIdleMs: 1, eluActiveMs: 1 };
    expect(sideCost(reading, reading, 0, 0)).toEqual({
      cpuUserMs: 0,
      cpuSystemMs: 0,
      cpuMs: 0,
      cpuMsPerImage: 0,
      peakRssBytes: 0,
      eventLoopUtilization: 0,
    });
  });
});

describe('brokerCost', () => {
  it("turns two of the broker's own readings into CPU and the larger RSS, with no event loop", () => {
    const start = { cpuUserMicros: 2_000_000, cpuSystemMicros: 500_000, rssBytes: 30_000_000 };
    const end = { cpuUserMicros: 2_012_000, cpuSystemMicros: 508_000, rssBytes: 28_000_000 };
    expect(brokerCost(start, end, 4)).toEqual({
      cpuUserMs: 12,
      cpuSystemMs: 8,
      cpuMs: 20,
      cpuMsPerImage: 5,
      peakRssBytes: 30_000_000,
      eventLoopUtilization: null,
    });
  });
});

describe('busyShare', () => {
  const start = { cpuUserMicros: 0, cpuSystemMicros: 0, eluIdleMs: 500, eluActiveMs: 100 };
  it("divides the part by the loop's busy time in the span, idle time left out", () => {
    const end = { ...start, eluIdleMs: 900, eluActiveMs: 180 };
    expect(busyShare(20, start, end)).toBe(0.25);
    expect(busyShare(0, start, end)).toBe(0);
  });

  it('caps at 1 (two clocks) and is null when the loop was never busy', () => {
    expect(busyShare(81, start, { ...start, eluActiveMs: 180 })).toBe(1);
    expect(busyShare(5, start, { ...start, eluIdleMs: 600 })).toBeNull();
  });
});
