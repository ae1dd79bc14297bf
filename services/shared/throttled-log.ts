import type { Logger } from 'pino';
import { LogThrottle } from '../core/log-throttle.js';

/**
 * A warning that a flood can repeat: written at most once per cause per window, with `count`, how many events the
 * line stands for. A held-back line is written when its window is over, with the fields of its cause's last event.
 */
export interface ThrottledWarn {
  (cause: string, fields: Record<string, unknown>, msg: string): void;
  /** Writes every line still held back and stops the timer; safe to call twice. */
  close(): void;
}

/** {@link ThrottledWarn} onto `log` at warn, one line per cause per `windowMs`. */
export function throttledWarn(log: Logger, windowMs = 1000): ThrottledWarn {
  const throttle = new LogThrottle(windowMs);
  const last = new Map<string, { fields: Record<string, unknown>; msg: string }>();
  let timer: NodeJS.Timeout | undefined;
  const write = (cause: string, count: number): void => {
    const event = last.get(cause);
    if (event !== undefined) log.warn({ ...event.fields, count }, event.msg);
  };
  const flushDue = (): void => {
    timer = undefined;
    for (const line of throttle.due(performance.now())) write(line.cause, line.count);
    schedule();
  };
  const schedule = (): void => {
    const dueMs = throttle.nextDueMs();
    if (dueMs === undefined || timer !== undefined) return;
    timer = setTimeout(flushDue, Math.max(0, dueMs - performance.now())).unref();
  };
  const warn = ((cause, fields, msg) => {
    last.set(cause, { fields, msg });
    const count = throttle.note(cause, performance.now());
    if (count > 0) write(cause, count);
    else schedule();
  }) as ThrottledWarn;
  warn.close = () => {
    clearTimeout(timer);
    timer = undefined;
    for (const line of throttle.due(Infinity)) write(line.cause, line.count);
  };
  return warn;
}
