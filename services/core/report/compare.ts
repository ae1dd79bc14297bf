import { nodeDescription, sectionTitle } from './wording.js';
import { renderTable } from './text/format.js';
import type { HostFacts, RunReport, TransportSummary } from './report.js';
import type { SectionResult } from '../model/section.js';
import { formatSize } from '../config/size.js';
import type { Range } from '../model/stats.js';
import { describeWarmup } from '../model/warmup.js';

// Two runs' results side by side: per transport, how the median repeat's p50, p99 and MB/s moved,
// and whether the move is larger than the runs' own repeat-to-repeat spread. Pure: the CLI
// (scripts/compare.ts) reads the files.

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
}

/** One transport's comparison across the two runs. */
export interface ComparisonRow {
  transport: string;
  label: string;
  baseline: boolean;
  before: RunPresence;
  after: RunPresence;
  figures: Record<ComparedFigure, FigureChange>;
  /** Why figures are missing, or that some repeat failed; null when both runs were clean. */
  note: string | null;
}

const LOWER_IS_BETTER: Record<ComparedFigure, boolean> = { p50Ms: true, p99Ms: true, throughputMBps: false };

function figureOf(section: SectionResult, figure: ComparedFigure): number | null {
  return figure === 'throughputMBps' ? section.throughputMBps : (section.latency?.[figure] ?? null);
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
 * Width of the figure's spread over one run's completed repeats; null when fewer than two
 * completed repeats produced it, since one value says nothing about noise (its min–max is 0).
 */
function spreadWidth(side: Side, transport: string, figure: ComparedFigure): number | null {
  const range: Range | null | undefined = side.summary?.spread[figure];
  if (range === null || range === undefined) return null;
  const valued = side.report.sections.filter(
    (s) => s.transport === transport && s.ok && figureOf(s, figure) !== null,
  ).length;
  return valued > 1 ? range.max - range.min : null;
}

function changeOf(before: Side, after: Side, transport: string, figure: ComparedFigure): FigureChange {
  const b = before.median === undefined ? null : figureOf(before.median, figure);
  const a = after.median === undefined ? null : figureOf(after.median, figure);
  const widths = [spreadWidth(before, transport, figure), spreadWidth(after, transport, figure)].filter(
    (w): w is number => w !== null,
  );
  const spread = widths.length > 0 ? Math.max(...widths) : null;
  const change = a !== null && b !== null ? a - b : null;
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
    const notes = [sideNote('before', b), sideNote('after', a)].filter((n): n is string => n !== null);
    return {
      transport,
      label: named.label,
      baseline: named.baseline,
      before: b.presence,
      after: a.presence,
      figures: {
        p50Ms: changeOf(b, a, transport, 'p50Ms'),
        p99Ms: changeOf(b, a, transport, 'p99Ms'),
        throughputMBps: changeOf(b, a, transport, 'throughputMBps'),
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

/** The change cell: signed change, percent, faster/slower, and the spread mark ("*", "?" or a blank). */
export function changeCell(f: FigureChange, digits: number): string {
  if (f.change === null) return '-';
  const percent = f.changePercent === null ? 'n/a' : `${signed(f.changePercent, 1)}%`;
  const mark = f.beyondSpread === null ? '?' : f.beyondSpread ? '*' : ' ';
  return `${signed(f.change, digits)} (${percent}) ${f.direction} ${mark}`;
}

/** One run in a line: its start, images, window, warm-up and repeat. */
export function describeRun(report: RunReport): string {
  const { run } = report;
  return (
    `${run.startedAt}, ${run.imageCount} images of ${formatSize(run.imageSizeBytes)}, window ${run.window}, ` +
    `warm-up ${describeWarmup(run.warmup)}, repeat ${run.repeat}`
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

/**
 * Every setting compared between the runs, in a fixed order: the run's knobs, the image, both hosts
 * and every library version. A setting an older results.json lacks reads "unset".
 */
export function settingPairs(before: RunReport, after: RunReport): SettingPair[] {
  const b = before.run;
  const a = after.run;
  const pairs: [string, unknown, unknown][] = [
    ['VERIFY', b.config?.verify, a.config?.verify],
    ['WINDOW', b.window, a.window],
    ['image size', formatSize(b.imageSizeBytes), formatSize(a.imageSizeBytes)],
    ['image', b.imageDescription, a.imageDescription],
    ['IMAGE_COUNT', b.imageCount, a.imageCount],
    ['WARMUP', describeWarmup(b.warmup), describeWarmup(a.warmup)],
    ['REPEAT', b.repeat, a.repeat],
    ['MAX_IMAGE_SIZE', b.config?.maxImageBytes, a.config?.maxImageBytes],
    ['transmitter host', hostLine(b.hosts?.transmitter), hostLine(a.hosts?.transmitter)],
    ['receiver host', hostLine(b.hosts?.receiver), hostLine(a.hosts?.receiver)],
  ];
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
  'Figures are the median completed repeat (every image intact; by total transfer time) of each run; change = ' +
  'after − before.';

/** The legend under a comparison: signs, faster/slower and the spread marks. */
export const COMPARISON_LEGEND = [
  'Sign as measured; faster/slower: for p50 and p99 lower is faster, for MB/s higher is faster.',
  "Marks: *  beyond the repeat spread (the change is larger than the wider of the two runs' max − min across " +
    'completed repeats)',
  '       ?  spread unknown (REPEAT=1): rerun with REPEAT=3 for a verdict',
  '       no mark: within the repeat spread, not told apart from noise',
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
