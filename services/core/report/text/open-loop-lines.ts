import { OVERLOAD_RATE_SHARE, type DeadlineFigures, type OpenLoopFigures } from '../../model/section.js';
import { fixed, ms } from './format.js';

// output.log's lines of an open-loop section (RATE): its schedule kept or not, and its frames against their deadline.

/** "100 images/s", with up to 3 decimals for fractional rates. */
export function rateText(ratePerSecond: number): string {
  return `${Number(ratePerSecond.toFixed(3)).toLocaleString('en-US')} images/s`;
}

/** "RATE 100 images/s offered, sent at 99.9 and delivered at 99.9 images/s: kept up" (or OVERLOADED). */
export function openLoopText(open: OpenLoopFigures): string {
  const rates =
    `RATE ${rateText(open.ratePerSecond)} offered, sent at ${fixed(open.achievedRatePerSecond, 1)} and delivered at ` +
    fixed(open.deliveredRatePerSecond, 1) +
    ` images/s`;
  return open.overloaded
    ? `${rates}: OVERLOADED (under ${OVERLOAD_RATE_SHARE * 100} % of RATE; images waited for a window slot and ` +
        `went late: see the send lag and the times from due)`
    : `${rates}: kept up`;
}

/** "33.333 ms (one frame interval)" or "50.000 ms (1.5 frame intervals)". */
function deadlineText(d: DeadlineFigures): string {
  const intervals = d.deadlineMs / d.intervalMs;
  const of =
    Math.abs(intervals - 1) < 1e-9
      ? 'one frame interval'
      : `${fixed(intervals, 2)} frame intervals of ${ms(d.intervalMs)} ms`;
  return `${ms(d.deadlineMs)} ms (${of})`;
}

/** A section's lines on its deadline, its longest gap and its jitter (RATE). */
export function deadlineLines(d: DeadlineFigures): string[] {
  const of = (count: number): string => `${count} of ${d.framesSent} (${percentOf(count, d.framesSent)})`;
  const verdict = d.overDeadline
    ? `MISSED ITS DEADLINE: ${percentOf(d.lateCount + d.undeliveredCount, d.framesSent)} of frames late or not ` +
      `delivered, over the ${fixed(d.allowedLateShare * 100, 1)} % allowed (DEADLINE_MISS_PERCENT)`
    : `met: at most ${fixed(d.allowedLateShare * 100, 1)} % allowed (DEADLINE_MISS_PERCENT)`;
  return [
    `Deadline ${deadlineText(d)}: late ${of(d.lateCount)}, older than three intervals ${of(d.veryLateCount)}` +
      (d.undeliveredCount > 0 ? `, never delivered intact ${of(d.undeliveredCount)}` : '') +
      `; ${verdict}`,
    `Arrivals: longest gap ${ms(d.longestGapMs)} ms (interval ${ms(d.intervalMs)} ms); jitter, |gap − interval|: ` +
      (d.jitter === null
        ? '- (fewer than two arrivals)'
        : `mean ${ms(d.jitter.meanMs)} ± ${ms(d.jitter.stdDevMs)} (sd), p99 ${ms(d.jitter.p99Ms)}, max ` +
          `${ms(d.jitter.maxMs)} ms`),
  ];
}

/** "1.5 %" of a count over a total, one decimal; "-" with no total. */
function percentOf(count: number, total: number): string {
  return total === 0 ? '-' : `${fixed((100 * count) / total, 1)} %`;
}
