import { describe, expect, it } from 'vitest';
import { hostNoiseLines, timeHostTask } from '../../scripts/bench/host-noise.js';

// The ceiling part's host noise: a fixed CPU task timed each round, its spread said beside the overheads.

describe('host noise', () => {
  it('says the median task time and its spread as ± half the range over the median', () => {
    expect(hostNoiseLines([100, 90, 110, 104, 96])).toEqual([
      'Host noise: a fixed CPU task (xxHash64 of 2000 MiB), timed before each round, took 100.0 ms (median of 5; ' +
        '90.0–110.0 ms, ±10.0 %): figures that differ between rounds by less than that differ by the host’s own noise.',
    ]);
  });

  it('says nothing without a round', () => {
    expect(hostNoiseLines([])).toEqual([]);
  });

  it('times the task', () => {
    expect(timeHostTask()).toBeGreaterThan(0);
  });
});
