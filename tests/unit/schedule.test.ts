import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { achievedRate, OpenLoopSchedule } from '../../services/core/model/schedule.js';

describe('OpenLoopSchedule', () => {
  it('makes image i due at start + i ÷ rate, image 0 at the start', () => {
    const schedule = new OpenLoopSchedule(100, 1_000_000_000n);
    expect([0, 1, 2, 199].map((i) => schedule.dueNs(i))).toEqual([
      1_000_000_000n,
      1_010_000_000n,
      1_020_000_000n,
      2_990_000_000n,
    ]);
  });

  it('rounds a fractional period to the nanosecond without drifting', () => {
    const schedule = new OpenLoopSchedule(3, 0n);
    expect([1, 2, 3, 3_000].map((i) => schedule.dueNs(i))).toEqual([
      333_333_333n,
      666_666_667n,
      1_000_000_000n,
      1_000_000_000_000n,
    ]);
  });

  it('counts the images due at a time: none before the start, image 0 at it, the next exactly at its due time', () => {
    const schedule = new OpenLoopSchedule(100, 5_000n);
    expect(schedule.dueCount(4_999n)).toBe(0);
    expect(schedule.dueCount(5_000n)).toBe(1);
    expect(schedule.dueCount(5_000n + 9_999_999n)).toBe(1);
    expect(schedule.dueCount(5_000n + 10_000_000n)).toBe(2);
    expect(schedule.dueCount(5_000n + 1_990_000_000n)).toBe(200);
  });

  it('never counts an image due before its rounded due time', () => {
    const schedule = new OpenLoopSchedule(3, 0n);
    expect(schedule.dueCount(666_666_666n)).toBe(2);
    expect(schedule.dueCount(666_666_667n)).toBe(3);
  });

  it('refuses a rate of 0, a negative one or one above the maximum', () => {
    for (const rate of [0, -1, Number.NaN, 1_000_001]) expect(() => new OpenLoopSchedule(rate, 0n)).toThrow(RangeError);
  });
});

describe('achievedRate', () => {
  it('counts the images after the first over the span from the first send to the last', () => {
    expect(achievedRate([0n, 10_000_000n, 20_000_000n, 40_000_000n])).toBe(75);
    expect(achievedRate([40_000_000n, 0n])).toBe(25);
  });

  it('is null with fewer than two sends or no span', () => {
    expect([achievedRate([]), achievedRate([5n]), achievedRate([5n, 5n])]).toEqual([null, null, null]);
  });
});

// dueCount as it was computed on bigints, due time by due time.
function dueCountOnBigints(schedule: OpenLoopSchedule, nowNs: bigint): number {
  if (nowNs < schedule.startNs) return 0;
  let count = Math.floor(Number(nowNs - schedule.startNs) / (1e9 / schedule.ratePerSecond)) + 1;
  while (schedule.dueNs(count) <= nowNs) count++;
  while (count > 0 && schedule.dueNs(count - 1) > nowNs) count--;
  return count;
}

describe('OpenLoopSchedule without bigints', () => {
  it("gives a stamp's lag behind image i's due time, and the images due, as the bigint due times do", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.bigInt({ min: 0n, max: 2n ** 50n }),
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.bigInt({ min: -(10n ** 9n), max: 10n ** 12n }),
        (rate, startNs, index, offsetNs) => {
          const schedule = new OpenLoopSchedule(rate, startNs);
          const atNs = startNs + offsetNs;
          expect(schedule.lagNs(index, atNs)).toBe(Number(atNs - schedule.dueNs(index)));
          expect(schedule.dueCount(atNs)).toBe(dueCountOnBigints(schedule, atNs));
        },
      ),
      { numRuns: 300 },
    );
  });
});
