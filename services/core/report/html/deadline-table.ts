import type { DeadlineFigures } from '../../model/section.js';
import { renderFigureTable, type TableColumn } from './figure-table.js';
import type { RunView, TransportInRun, TransportView } from './views.js';

// Under RATE, the frames against their deadline and their schedule, per transport: the figures and words of
// output.log's "Deadline and jitter" table, from the section the summary's figures come from.

/** A section's deadline figures: the median completed repeat's, as every figure of the summary; null without. */
export function deadlineOf(r: TransportInRun): DeadlineFigures | null {
  return r.median?.openLoop?.deadline ?? null;
}

const share = (count: (d: DeadlineFigures) => number) => (r: TransportInRun) => {
  const d = deadlineOf(r);
  return d === null || d.framesSent === 0 ? null : (100 * count(d)) / d.framesSent;
};

const count = (pick: (d: DeadlineFigures) => number | null) => (r: TransportInRun) => {
  const d = deadlineOf(r);
  return d === null ? null : pick(d);
};

/** The deadline table's columns, in output.log's order. */
export const DEADLINE_COLUMNS: readonly TableColumn[] = [
  {
    header: 'Deadline ms',
    hint: 'DEADLINE_MS: the age from its due time past which a frame is late (default one frame interval)',
    digits: 3,
    lowerIsBetter: null,
    value: count((d) => d.deadlineMs),
  },
  {
    header: 'Sent',
    hint: 'frames sent: what the shares are of',
    digits: 0,
    lowerIsBetter: null,
    value: count((d) => d.framesSent),
  },
  {
    header: 'Late',
    hint: 'intact frames older than the deadline at arrival, counted from their due time',
    digits: 0,
    lowerIsBetter: true,
    value: count((d) => d.lateCount),
  },
  {
    header: 'Late %',
    hint: 'late frames of those sent',
    digits: 1,
    lowerIsBetter: true,
    value: share((d) => d.lateCount),
  },
  {
    header: '> 3 intervals',
    hint: 'intact frames older than three frame intervals (3 × 1000 ÷ RATE ms) at arrival',
    digits: 0,
    lowerIsBetter: true,
    value: count((d) => d.veryLateCount),
  },
  {
    header: 'Undelivered',
    hint: 'frames sent that never arrived intact (lost, corrupt, written over): they missed the deadline too',
    digits: 0,
    lowerIsBetter: true,
    value: count((d) => d.undeliveredCount),
  },
  {
    header: 'Missed %',
    hint: 'late and undelivered frames of those sent: over DEADLINE_MISS_PERCENT, the deadline is missed',
    digits: 1,
    lowerIsBetter: true,
    value: share((d) => d.lateCount + d.undeliveredCount),
  },
  {
    header: 'Longest gap ms',
    hint: 'longest time between two consecutive arrivals',
    digits: 3,
    lowerIsBetter: true,
    value: count((d) => d.longestGapMs),
  },
  ...(
    [
      ['mean', 'mean', (d: DeadlineFigures) => d.jitter?.meanMs],
      ['sd', 'sample standard deviation', (d: DeadlineFigures) => d.jitter?.stdDevMs],
      ['p99', '99th percentile', (d: DeadlineFigures) => d.jitter?.p99Ms],
      ['max', 'largest', (d: DeadlineFigures) => d.jitter?.maxMs],
    ] as const
  ).map(
    ([figure, what, pick]): TableColumn => ({
      header: `Jitter ${figure} ms`,
      hint: `inter-arrival jitter, ${what}: |gap − frame interval| over every two consecutive arrivals`,
      digits: 3,
      lowerIsBetter: true,
      value: count((d) => pick(d) ?? null),
    }),
  ),
  {
    header: 'Verdict',
    hint: 'MISSED: late and undelivered frames over DEADLINE_MISS_PERCENT of those sent; met otherwise',
    text: (r) => {
      const d = deadlineOf(r);
      return d === null ? null : d.overDeadline ? 'MISSED' : 'met';
    },
    bad: (r) => deadlineOf(r)?.overDeadline === true,
  },
];

/** The deadline card under RATE; '' when no section shown ran at a RATE. */
export function renderDeadlineSection(views: readonly RunView[], transports: readonly TransportView[]): string {
  const rows = transports.filter((t) => t.perRun.some((r) => r?.drawn?.openLoop != null));
  if (rows.length === 0) return '';
  const figures = rows.flatMap((t) => t.perRun.flatMap((r) => (r === undefined ? [] : (deadlineOf(r) ?? []))));
  const first = figures[0];
  const setting =
    first === undefined
      ? ''
      : ` Deadline ${settingText(first.deadlineMs)} ms (DEADLINE_MS; one frame interval is ` +
        (`${settingText(first.intervalMs)} ms), at most ` +
          settingText(first.allowedLateShare * 100) +
          ` % of frames late or `) +
        `undelivered (DEADLINE_MISS_PERCENT).`;
  const repeats = Math.max(...views.map((v) => v.report.run.repeat));
  return renderFigureTable({
    className: 'deadline',
    title: 'Deadline and jitter',
    note:
      `Under RATE, each frame’s age at arrival counted from its due time, against the deadline, and the gaps ` +
      `between arrivals, ${repeats > 1 ? 'from the median completed repeat' : 'per transport'}; none for a ` +
      `transport without a completed repeat.${setting} Late: older than the deadline; > 3 intervals: older than ` +
      `three frame intervals; undelivered: never arrived intact; missed %: late and undelivered of those sent, ` +
      `MISSED when over DEADLINE_MISS_PERCENT; gap: time between two consecutive arrivals; jitter: |gap − frame ` +
      `interval|.`,
    columns: DEADLINE_COLUMNS,
    rows,
    twoRuns: views.length > 1,
  });
}

/** A setting as the notes give it: up to three decimals, none trailing (33.333, 1, 0.5). */
export function settingText(value: number): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: 3 });
}
