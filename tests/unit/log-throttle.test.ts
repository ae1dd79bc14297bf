import { describe, expect, it } from 'vitest';
import { LogThrottle } from '../../services/core/log-throttle.js';

describe('LogThrottle', () => {
  it('writes the first event of a cause at once and holds the rest of its window', () => {
    const throttle = new LogThrottle(1000);
    expect(throttle.note('pushed out', 0)).toBe(1);
    expect(throttle.note('pushed out', 1)).toBe(0);
    expect(throttle.note('pushed out', 999)).toBe(0);
    expect(throttle.nextDueMs()).toBe(1000);
    expect(throttle.due(999)).toEqual([]);
    expect(throttle.due(1000)).toEqual([{ cause: 'pushed out', count: 2 }]);
    expect(throttle.nextDueMs()).toBeUndefined();
  });

  it('gives one line a second to a flood of 34,130 events over 10 s, their counts adding up to every event', () => {
    const throttle = new LogThrottle(1000);
    const counts: number[] = [];
    for (let i = 0; i < 34_130; i++) {
      const nowMs = Math.floor((i * 10_000) / 34_130);
      // The timer of a held line fires before the next event at or after its time.
      const dueAtMs = throttle.nextDueMs();
      if (dueAtMs !== undefined && nowMs >= dueAtMs) for (const line of throttle.due(dueAtMs)) counts.push(line.count);
      const count = throttle.note('flood', nowMs);
      if (count > 0) counts.push(count);
    }
    for (const line of throttle.due(Infinity)) counts.push(line.count);
    // The first event's own line, one held line per second after it, and the last second's at the end.
    expect(counts.length).toBe(11);
    expect(counts[0]).toBe(1);
    expect(counts.reduce((sum, n) => sum + n, 0)).toBe(34_130);
  });

  it('keeps causes apart', () => {
    const throttle = new LogThrottle(1000);
    expect(throttle.note('a', 0)).toBe(1);
    expect(throttle.note('b', 10)).toBe(1);
    expect(throttle.note('a', 20)).toBe(0);
    expect(throttle.note('b', 30)).toBe(0);
    expect(throttle.note('b', 40)).toBe(0);
    expect(throttle.nextDueMs()).toBe(1000);
    expect(throttle.due(1000)).toEqual([{ cause: 'a', count: 1 }]);
    expect(throttle.due(1010)).toEqual([{ cause: 'b', count: 2 }]);
  });

  it('folds held events into the next line when it comes before the due one is written', () => {
    const throttle = new LogThrottle(1000);
    throttle.note('a', 0);
    throttle.note('a', 500);
    throttle.note('a', 600);
    expect(throttle.note('a', 1500)).toBe(3);
    expect(throttle.nextDueMs()).toBeUndefined();
  });

  it('writes a line held back no sooner than a window after the last one', () => {
    const throttle = new LogThrottle(1000);
    throttle.note('a', 0);
    throttle.note('a', 100);
    expect(throttle.due(1200)).toEqual([{ cause: 'a', count: 1 }]);
    // The held line counts as written at 1200: the next event within a window of it is held again.
    expect(throttle.note('a', 2100)).toBe(0);
    expect(throttle.nextDueMs()).toBe(2200);
    expect(throttle.note('a', 2200)).toBe(2);
  });

  it('forgets a cause quiet for a whole window: its next event is written at once', () => {
    const throttle = new LogThrottle(1000);
    expect(throttle.note('a', 0)).toBe(1);
    expect(throttle.due(1000)).toEqual([]);
    expect(throttle.note('a', 1001)).toBe(1);
    expect(throttle.note('a', 1002)).toBe(0);
  });
});
