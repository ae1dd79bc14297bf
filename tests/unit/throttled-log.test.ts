import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { throttledWarn } from '../../services/shared/throttled-log.js';

describe('throttledWarn', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it(
    'writes the first event at once, one line for the rest ' + 'of its second when it is over, and the held at close',
    () => {
      const lines: { msg: string; count: number; from: string; why: string }[] = [];
      const log = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
      const warn = throttledWarn(log, 1000);
      for (let i = 1; i <= 500; i++)
        warn('pushed out', { from: `host:${i}`, why: 'pushed out' }, 'control connection closed');
      warn('headers timeout', { from: 'host:0', why: 'headers timeout' }, 'control connection closed');
      expect(lines.map((l) => [l.why, l.count, l.from])).toEqual([
        ['pushed out', 1, 'host:1'],
        ['headers timeout', 1, 'host:0'],
      ]);
      vi.advanceTimersByTime(999);
      expect(lines).toHaveLength(2);
      vi.advanceTimersByTime(1);
      // The 499 held, with the fields of the last of them.
      expect(lines.slice(2).map((l) => [l.why, l.count, l.from])).toEqual([['pushed out', 499, 'host:500']]);
      warn('pushed out', { from: 'host:501', why: 'pushed out' }, 'control connection closed');
      warn('pushed out', { from: 'host:502', why: 'pushed out' }, 'control connection closed');
      expect(lines).toHaveLength(3);
      warn.close();
      expect(lines.slice(3).map((l) => [l.why, l.count, l.from])).toEqual([['pushed out', 2, 'host:502']]);
      warn.close();
      expect(lines).toHaveLength(4);
    },
  );
});
