import { describe, expect, it } from 'vitest';
import { sideCost } from '../../services/core/cost.js';

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
    expect(sideCost(reading, reading, 0, 0)).toEqual({ cpuUserMs: 0, cpuSystemMs: 0, cpuMs: 0, cpuMsPerImage: 0, peakRssBytes: 0, eventLoopUtilization: 0 });
  });
});
