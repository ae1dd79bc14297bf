import { nodeDescription, sectionTitle } from './wording.js';
import { renderTable } from './text/format.js';
import type { HostFacts, RunReport, TransportSummary } from './report.js';
import type { SectionResult } from '../model/section.js';
import { formatSize } from '../config/size.js';
import { rangeOf, type Range } from '../model/stats.js';
import { describeWarmup } from '../model/warmup.js';
import { formatDurationMs } from '../config/duration.js';
import { runImages, runImagesPhrase } from './images-sent.js';

// Two runs' results side by side: per transport, how the median repeat's p50, p99 and MB/s moved,
// and whether the move is larger than the runs' own repeat-to-repeat spread. Pure: the CLI
// (scripts/compare.ts) reads the files. Two sections sent differently (a closed loop and RATE, or
// two rates) measure different things: under RATE the p50 and p99 are frame age from the due time,
// and MB/s is the load offered, so no change is given between them, only why.

/** The figures compared, as named in TransportSummary.spread and SectionResult. */
export const COMPARED_FIGURES = ['p50Ms', 'p99Ms', 'throughputMBps'] as const;

/** One of {@link COMPARED_FIGURES}. */
export type ComparedFigure = (typeof COMPARED_FIGURES)[number];

/** How a transport stands in one run: it has a median section, it was not run, or no repeat completed. */
export type RunPresence = 'measured' | 'absent' | 'no-result';

/** One figure of one transport in both runs. */
export interface FigureChange {
  /** The figure in each run's median section; null when that run has none. */
  before: number | null;
  after: number | null;
  /** after − before, in the figure's unit; null unless both runs have it. */
  change: number | null;
  /** change as a percentage of before; null when before is missing or 0. */
  changePercent: number | null;
  /** The wider of the two runs' max − min across repeats; null when neither run has two repeats with the figure. */
  spread: number | null;
  /** |change| > spread; null when change or spread is unknown. */
  beyondSpread: boolean | null;
  /** Better or worse for the user: lower is faster for latency, higher is faster for MB/s; null without a change. */
  direction: 'faster' | 'slower' | 'same' | null;
  /** Why no change is given though both runs have the figure ("not comparable: closed loop vs RATE 30/s"); or null. */
  notComparable: string | null;
}

/** One transport's comparison across the two runs. */
export interface ComparisonRow {
  transport: string;
  label: string;
  baseline: boolean;
  before: RunPresence;
  after: RunPresence;
  figures: Record<ComparedFigure, FigureChange>;
  /** Why figures are missing or not compared, or that some repeat failed; null when both runs were clean. */
  note: string | null;
}

const LOWER_IS_BETTER: Record<ComparedFigure, boolean> = { p50Ms: true, p99Ms: true, throughputMBps: false };

/**
 * The figure as the section's headline states it: under RATE p50 and p99 are frame age from the due time (files
 * written before frameAge hold the same distribution as openLoop.latencyFromDue), in a closed loop the one-way time.
 */
function figureOf(section: SectionResult, figure: ComparedFigure): number | null {
  if (figure === 'throughputMBps') return section.throughputMBps;
  const latency =
    section.ratePerSecond === null ? section.latency : (section.frameAge ?? section.openLoop?.latencyFromDue);
  return latency?.[figure] ?? null;
}

/** How a section sent its images: "closed loop" or "RATE 30/s". */
export function sendingOf(section: Pick<SectionResult, 'ratePerSecond'>): string {
  return section.ratePerSecond === null ? 'closed loop' : `RATE ${rateText(section.ratePerSecond)}`;
}

/** "30/s", with up to 3 decimals for a fractional rate. */
const rateText = (ratePerSecond: number): string => `${Number(ratePerSecond.toFixed(3)).toLocaleString('en-US')}/s`;

/**
 * Why two sections' figures get no change (sent differently: a closed loop against RATE, or two rates), as
 * "not comparable: closed loop vs RATE 30/s"; null when they are comparable or either is missing.
 */
export function notComparableReason(
  before: Pick<SectionResult, 'ratePerSecond'> | undefined,
  after: Pick<SectionResult, 'ratePerSecond'> | undefined,
): string | null {
  if (before === undefined || after === undefined) return null;
  const [b, a] = [sendingOf(before), sendingOf(after)];
  return b === a ? null : `not comparable: ${b} vs ${a}`;
}

/** A transport's summary and median section in one run, as far as they exist. */
interface Side {
  summary: TransportSummary | undefined;
  median: SectionResult | undefined;
  presence: RunPresence;
  report: RunReport;
}

function sideOf(report: RunReport, transport: string): Side {
  const summary = report.transports.find((t) => t.transport === transport);
  const median =
    summary?.medianSection === null || summary === undefined ? undefined : report.sections[summary.medianSection];
  const presence: RunPresence = summary === undefined ? 'absent' : median === undefined ? 'no-result' : 'measured';
  return { summary, median, presence, report };
}

/**
 * Width of the figure's spread over one run's completed repeats (every image intact, timed), as the median was
 * picked from; null when fewer than two produced it, since one value says nothing about noise (its min–max is 0).
 */
function spreadWidth(side: Side, transport: string, figure: ComparedFigure): number | null {
  const values = side.report.sections.flatMap((s) => {
    const value = s.transport === transport && s.ok && s.totalMs !== null ? figureOf(s, figure) : null;
    return value === null ? [] : [value];
  });
  const range: Range | undefined = rangeOf(values);
  return range !== undefined && values.length > 1 ? range.max - range.min : null;
}

function changeOf(
  before: Side,
  after: Side,
  transport: string,
  figure: ComparedFigure,
  notComparable: string | null,
): FigureChange {
  const b = before.median === undefined ? null : figureOf(before.median, figure);
  const a = after.median === undefined ? null : figureOf(after.median, figure);
  const widths = [spreadWidth(before, transport, figure), spreadWidth(after, transport, figure)].filter(
    (w): w is number => w !== null,
  );
  const spread = widths.length > 0 ? Math.max(...widths) : null;
  const change = a !== null && b !== null && notComparable === null ? a - b : null;
  let direction: FigureChange['direction'] = null;
  if (change !== null) direction = change === 0 ? 'same' : change < 0 === LOWER_IS_BETTER[figure] ? 'faster' : 'slower';
  return {
    before: b,
    after: a,
    change,
    changePercent: change !== null && b !== null && b !== 0 ? (change / b) * 100 : null,
    spread,
    beyondSpread: change !== null && spread !== null ? Math.abs(change) > spread : null,
    direction,
    notComparable: a !== null && b !== null ? notComparable : null,
  };
}

function sideNote(run: 'before' | 'after', side: Side): string | null {
  if (side.presence === 'absent') return `not in ${run} run`;
  const s = side.summary!;
  const failure = s.failure === null ? '' : `: ${s.failure}`;
  if (side.presence === 'no-result') return `${run}: no repeat completed${failure}`;
  if (!s.ok)
    return (
      `${run}: FAILED (${s.okCount} ok, ${s.lostCount} lost, ${s.corruptCount} corrupt across ${s.repeats} ` +
      `repeats)${failure}`
    );
  return null;
}

/**
 * Compares two runs transport by transport (after's transports first, then those only in
 * before): each figure of the median repeat before and after, the change, and whether the change
 * is larger than the repeat spread.
 */
export function compareRuns(before: RunReport, after: RunReport): ComparisonRow[] {
  const order = [...after.transports.map((t) => t.transport)];
  for (const t of before.transports) if (!order.includes(t.transport)) order.push(t.transport);
  return order.map((transport) => {
    const b = sideOf(before, transport);
    const a = sideOf(after, transport);
    const named = (a.summary ?? b.summary)!;
    const notComparable = notComparableReason(b.median, a.median);
    const notes = [notComparable, sideNote('before', b), sideNote('after', a)].filter((n): n is string => n !== null);
    return {
      transport,
      label: named.label,
      baseline: named.baseline,
      before: b.presence,
      after: a.presence,
      figures: {
        p50Ms: changeOf(b, a, transport, 'p50Ms', notComparable),
        p99Ms: changeOf(b, a, transport, 'p99Ms', notComparable),
        throughputMBps: changeOf(b, a, transport, 'throughputMBps', notComparable),
      },
      note: notes.length > 0 ? notes.join('; ') : null,
    };
  });
}

/** Decimals each figure is shown with. */
export const FIGURE_DIGITS: Record<ComparedFigure, number> = { p50Ms: 3, p99Ms: 3, throughputMBps: 1 };

/** A figure as shown: its decimals, or "-" for no value. */
export const figureValue = (v: number | null, digits: number): string => (v === null ? '-' : v.toFixed(digits));
// A real minus sign, as output.log prints offsets: "-" alone means "no value".
const signed = (v: number, digits: number): string => `${v < 0 ? '−' : '+'}${Math.abs(v).toFixed(digits)}`;

/**
 * The change cell: signed change, percent, faster/slower, and the spread mark ("*", "?" or a blank); "not comparable"
 * between sections sent differently.
 */
export function changeCell(f: FigureChange, digits: number): string {
  if (f.notComparable !== null) return 'not comparable';
  if (f.change === null) return '-';
  const percent = f.changePercent === null ? 'n/a' : `${signed(f.changePercent, 1)}%`;
  const mark = f.beyondSpread === null ? '?' : f.beyondSpread ? '*' : ' ';
  return `${signed(f.change, digits)} (${percent}) ${f.direction} ${mark}`;
}

/** One run in a line: its start, images (under DURATION what each transport sent), window, warm-up, repeat, sending. */
export function describeRun(report: RunReport): string {
  const { run } = report;
  const rate = run.config?.ratePerSecond;
  return (
    `${run.startedAt}, ${runImagesPhrase(runImages(run, report.sections), formatSize(run.imageSizeBytes))}, ` +
    `window ${run.window}, warm-up ${describeWarmup(run.warmup)}, repeat ${run.repeat}, ` +
    (rate == null ? 'closed loop' : `RATE ${rateText(rate)}`)
  );
}

/** What a figure's value reads as in a warning; a setting an older results.json lacks is "unset". */
const shown = (value: unknown): string => (value === undefined || value === null ? 'unset' : String(value));

function hostLine(host: HostFacts | undefined): string {
  return host === undefined
    ? 'unknown'
    : `${host.hostname}, ${host.cpuModel}, ${host.cores} cores, ${formatSize(host.totalMemoryBytes)}` +
        `, ${host.platform} ${host.kernel}, ${nodeDescription(host)}`;
}

/** A setting of both runs: its name and each run's value, as a warning shows them. */
export interface SettingPair {
  name: string;
  before: string;
  after: string;
}

/** A number as a setting shows it: at most 3 decimals, so 1000 ÷ 30 reads 33.333. */
const decimals = (value: number): string => Number(value.toFixed(3)).toLocaleString('en-US');

/** Each knob of one run as a warning shows it, in the order the pairs list them; undefined: the file lacks it. */
function knobsOf(report: RunReport): [string, unknown][] {
  const { run } = report;
  const config: Partial<RunReport['run']['config']> = run.config ?? {};
  const { ratePerSecond, durationMs, deadline, commandRatePerSecond } = config;
  const lane = commandRatePerSecond != null;
  return [
    ['RATE', ratePerSecond == null ? 'unset (closed loop)' : rateText(ratePerSecond)],
    ['DURATION', durationMs == null ? 'unset' : formatDurationMs(durationMs)],
    ['IMAGE_COUNT', durationMs == null ? run.imageCount : 'unused (DURATION)'],
    ['DEADLINE_MS', deadline == null ? 'unset' : `${decimals(deadline.deadlineMs)} ms`],
    ['DEADLINE_MISS_PERCENT', deadline == null ? 'unset' : `${decimals(deadline.allowedLateShare * 100)} %`],
    ['COMMAND_RATE', lane ? rateText(commandRatePerSecond) : 'unset'],
    [
      'COMMAND_SIZE',
      !lane
        ? 'unused (no COMMAND_RATE)'
        : config.commandSizeBytes === undefined
          ? undefined
          : formatSize(config.commandSizeBytes),
    ],
    ['TRANSPORTS', Array.isArray(run.transports) ? run.transports.join(',') : undefined],
    ['CLIENTS', config.clients],
    ['RECEIVERS', run.receivers],
    ['WINDOW', run.window],
    ['image size', formatSize(run.imageSizeBytes)],
    ['image', run.imageDescription],
    ['WARMUP', describeWarmup(run.warmup)],
    ['REPEAT', run.repeat],
    ['VERIFY', config.verify],
    // A profiled run is slowed by its profiler: its figures compare with another's only as such.
    ['PROFILE', config.profile === true],
    ['MAX_IMAGE_SIZE', config.maxImageBytes],
    ['link', config.link],
    ['transmitter host', hostLine(run.hosts?.transmitter)],
    ['receiver host', hostLine(run.hosts?.receiver)],
  ];
}

/**
 * Every setting compared between the runs, in a fixed order: how the images were sent (RATE, DURATION, deadlines,
 * the command lane), the run's other knobs, the image, the link, both hosts and every library version. A setting an
 * older results.json lacks reads "unset".
 */
export function settingPairs(before: RunReport, after: RunReport): SettingPair[] {
  const afterKnobs = knobsOf(after);
  const pairs: [string, unknown, unknown][] = knobsOf(before).map(([name, value], i) => [
    name,
    value,
    afterKnobs[i]![1],
  ]);
  const libraries = (r: RunReport): Record<string, string> => ({
    ...r.run.hosts?.transmitter?.libraries,
    ...r.run.hosts?.receiver?.libraries,
  });
  const bLibraries = libraries(before);
  const aLibraries = libraries(after);
  for (const name of [...new Set([...Object.keys(bLibraries), ...Object.keys(aLibraries)])])
    pairs.push([name, bLibraries[name], aLibraries[name]]);
  return pairs.map(([name, x, y]) => ({ name, before: shown(x), after: shown(y) }));
}

/**
 * Every setting that differs between the runs, as "NAME: before → after" (see {@link settingPairs}).
 * A change between such runs mixes the code with the setting.
 */
export function settingDifferences(before: RunReport, after: RunReport): string[] {
  return settingPairs(before, after)
    .filter((p) => p.before !== p.after)
    .map((p) => `${p.name}: ${p.before} → ${p.after}`);
}

/** The warning above differing settings: a change between such runs may come from them. */
export const SETTINGS_WARNING =
  'Warning: the runs differ in these settings; a change may come from them rather than from the code:';

/** What the figures are, under the runs compared. */
export const FIGURES_NOTE =
  'Figures are the median completed repeat (every image intact; by total transfer time) of each run: p50 and p99 ' +
  "are the one-way time in a closed loop and, under RATE, each frame's age from its due time; change = after − " +
  'before.';

/** The legend under a comparison: signs, faster/slower and the spread marks. */
export const COMPARISON_LEGEND = [
  'Sign as measured; faster/slower: for p50 and p99 lower is faster, for MB/s higher is faster.',
  "Marks: *  beyond the repeat spread (the change is larger than the wider of the two runs' max − min across " +
    'completed repeats)',
  '       ?  spread unknown (REPEAT=1): rerun with REPEAT=3 for a verdict',
  '       no mark: within the repeat spread, not told apart from noise',
  'Not comparable: a closed loop against a RATE, or two different RATEs, measure different things (frame age ' +
    'against one-way time, a load offered against a capacity): no change is given.',
] as const;

/** The comparison as text: the two runs, one table row per transport, and the legend. */
export function renderComparison(rows: readonly ComparisonRow[], before: RunReport, after: RunReport): string {
  const header = ['Transport'];
  for (const name of ['p50 ms', 'p99 ms', 'MB/s']) header.push(`${name} before → after`, `${name} change`);
  header.push('Note');
  const tableRows = rows.map((row) => {
    const cells = [sectionTitle(row)];
    for (const figure of COMPARED_FIGURES) {
      const f = row.figures[figure];
      const digits = FIGURE_DIGITS[figure];
      cells.push(
        f.before === null && f.after === null
          ? '-'
          : `${figureValue(f.before, digits)} → ${figureValue(f.after, digits)}`,
        changeCell(f, digits),
      );
    }
    cells.push(row.note ?? '');
    return cells;
  });
  const differences = settingDifferences(before, after);
  const lines = [
    `Comparing before: ${describeRun(before)}`,
    `     with after:  ${describeRun(after)}`,
    ...(differences.length > 0 ? [SETTINGS_WARNING, ...differences.map((d) => `  ${d}`)] : []),
    FIGURES_NOTE,
    '',
    renderTable(header, tableRows),
    '',
    ...COMPARISON_LEGEND,
  ];
  return lines.join('\n') + '\n';
}
