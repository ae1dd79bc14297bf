import { describe, expect, it } from 'vitest';
import { loadBetween, parseProcessHeader, processHeaderValue } from '../../services/core/live/process-load.js';

// The transmitter's snapshot as it travels in a round-trip POST's header, and the load between two.

describe('the process header', () => {
  it('round-trips a snapshot, atMs to the microsecond', () => {
    const value = processHeaderValue({ cpuMicros: 1_234_567, rssBytes: 98_765_432, atMs: 4567.890123 });
    expect(value).toBe('cpuMicros=1234567;rssBytes=98765432;atMs=4567.890');
    expect(parseProcessHeader(value)).toEqual({ cpuMicros: 1_234_567, rssBytes: 98_765_432, atMs: 4567.89 });
  });

  it('takes nothing but that exact form', () => {
    for (const bad of [
      undefined,
      ['cpuMicros=1;rssBytes=2;atMs=3'],
      '',
      'cpuMicros=1;rssBytes=2',
      'cpuMicros=-1;rssBytes=2;atMs=3',
      'cpuMicros=1;rssBytes=2;atMs=3;x=4',
      'rssBytes=2;cpuMicros=1;atMs=3',
      'cpuMicros=1e3;rssBytes=2;atMs=3',
      `cpuMicros=${'9'.repeat(17)};rssBytes=2;atMs=3`,
    ])
      expect(parseProcessHeader(bad)).toBeUndefined();
  });
});

describe('loadBetween', () => {
  it('gives CPU ms per second of wall clock and the later RSS', () => {
    expect(
      loadBetween(
        { cpuMicros: 1_000_000, rssBytes: 10, atMs: 1000 },
        { cpuMicros: 1_500_000, rssBytes: 20, atMs: 3000 },
      ),
    ).toEqual({ cpuMsPerSecond: 250, rssBytes: 20 });
  });

  it('gives nothing when no time passed, time went back, or the CPU went back (another process)', () => {
    const at = { cpuMicros: 5, rssBytes: 1, atMs: 10 };
    expect(loadBetween(at, at)).toBeUndefined();
    expect(loadBetween(at, { ...at, atMs: 9 })).toBeUndefined();
    expect(loadBetween(at, { ...at, cpuMicros: 4, atMs: 11 })).toBeUndefined();
  });
});
