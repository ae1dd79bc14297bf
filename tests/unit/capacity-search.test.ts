import { describe, expect, it } from 'vitest';
import { nextRate, searchOutcome, searchRate, type SearchBounds } from '../../scripts/bench/capacity-search.js';

// The capacity part's search: from the start rate, doubling while probes pass (to the cap) or halving while they fail
// (to the floor), then bisecting until the failed rate is within the resolution above the passed one.

const BOUNDS: SearchBounds = { startPerSecond: 60, floorPerSecond: 15, capPerSecond: 3840, resolution: 0.125 };

/** The rates a search probes against a transport that sustains every rate up to `most` fps. */
const rates = (bounds: SearchBounds, most: number) => searchRate(bounds, (rate) => rate <= most);

describe('searchRate', () => {
  it('doubles from the start until a rate fails, then bisects between the last passed and the first failed', () => {
    const { probes, outcome } = rates(BOUNDS, 300);
    expect(probes).toEqual([
      { ratePerSecond: 60, sustained: true },
      { ratePerSecond: 120, sustained: true },
      { ratePerSecond: 240, sustained: true },
      { ratePerSecond: 480, sustained: false },
      { ratePerSecond: 360, sustained: false },
      { ratePerSecond: 300, sustained: true },
      { ratePerSecond: 330, sustained: false },
    ]);
    // 330 − 300 = 30 ≤ 12.5 % of 300: no fourth bisection.
    expect(outcome).toEqual({ sustainedPerSecond: 300, failedPerSecond: 330, belowFloor: false, atCap: false });
  });

  it('stops bisecting at its resolution: a coarser one stops sooner', () => {
    const coarse = rates({ ...BOUNDS, resolution: 0.5 }, 300);
    // 360 − 240 = 120 ≤ 50 % of 240.
    expect(coarse.probes.map((p) => p.ratePerSecond)).toEqual([60, 120, 240, 480, 360]);
    expect(coarse.outcome.sustainedPerSecond).toBe(240);
    expect(coarse.outcome.failedPerSecond).toBe(360);
  });

  it('halves from the start down to the floor when the start fails, then bisects above the rate that passed', () => {
    const { probes, outcome } = rates(BOUNDS, 20);
    // (15 + 30) / 2 = 22.5 rounds to 23; then 19; then 21; 21 − 19 = 2 ≤ 12.5 % of 19 (2.375).
    expect(probes.map((p) => [p.ratePerSecond, p.sustained])).toEqual([
      [60, false],
      [30, false],
      [15, true],
      [23, false],
      [19, true],
      [21, false],
    ]);
    expect(outcome).toEqual({ sustainedPerSecond: 19, failedPerSecond: 21, belowFloor: false, atCap: false });
  });

  it('reports a transport that fails at the floor as below it, after halving there from the start', () => {
    const { probes, outcome } = searchRate(BOUNDS, () => false);
    expect(probes.map((p) => p.ratePerSecond)).toEqual([60, 30, 15]);
    expect(outcome).toEqual({ sustainedPerSecond: null, failedPerSecond: 15, belowFloor: true, atCap: false });
  });

  it('stops doubling at the cap when nothing fails, and says the rate is at least the cap', () => {
    const { probes, outcome } = searchRate(BOUNDS, () => true);
    expect(probes.map((p) => p.ratePerSecond)).toEqual([60, 120, 240, 480, 960, 1920, 3840]);
    expect(outcome).toEqual({ sustainedPerSecond: 3840, failedPerSecond: null, belowFloor: false, atCap: true });
  });

  it('probes the cap itself when doubling would pass it', () => {
    const { probes, outcome } = searchRate({ ...BOUNDS, capPerSecond: 1000 }, () => true);
    expect(probes.map((p) => p.ratePerSecond)).toEqual([60, 120, 240, 480, 960, 1000]);
    expect(outcome.atCap).toBe(true);
  });
});

describe('nextRate', () => {
  it('starts at the start rate, and stops at once within the resolution', () => {
    expect(nextRate(BOUNDS, [])).toBe(60);
    // 30 ≤ 12.5 % of 240 = 30: over; 31 is not.
    expect(
      nextRate(BOUNDS, [
        { ratePerSecond: 240, sustained: true },
        { ratePerSecond: 270, sustained: false },
      ]),
    ).toBeNull();
    expect(
      nextRate(BOUNDS, [
        { ratePerSecond: 240, sustained: true },
        { ratePerSecond: 271, sustained: false },
      ]),
    ).toBe(256);
  });

  it('stops when whole frames per second leave nothing between the two rates', () => {
    const probes = [
      { ratePerSecond: 100, sustained: true },
      { ratePerSecond: 101, sustained: false },
    ];
    expect(nextRate({ ...BOUNDS, resolution: 0 }, probes)).toBeNull();
  });

  it('takes the probes in any order: only the highest passed and lowest failed rates count', () => {
    expect(
      searchOutcome(BOUNDS, [
        { ratePerSecond: 480, sustained: false },
        { ratePerSecond: 120, sustained: true },
        { ratePerSecond: 360, sustained: false },
        { ratePerSecond: 240, sustained: true },
      ]),
    ).toEqual({ sustainedPerSecond: 240, failedPerSecond: 360, belowFloor: false, atCap: false });
    expect(searchOutcome(BOUNDS, [])).toEqual({
      sustainedPerSecond: null,
      failedPerSecond: null,
      belowFloor: false,
      atCap: false,
    });
  });
});
