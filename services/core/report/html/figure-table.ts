import { notComparableReason } from '../compare.js';
import { escapeHtml } from './page.js';
import type { Column } from './summary-columns.js';
import type { TransportInRun, TransportView } from './views.js';

// The cells every sortable table of the page shares (the summary, deadline and command tables): a number with the
// before value and its change for two runs, a text with the before text when it differs, and the table around them.

/** A text column of a sortable table: a word or two per transport (a verdict, a lane). */
export interface TextColumn {
  header: string;
  hint: string;
  /** The cell's text for one run's figures; null shows –. */
  text: (r: TransportInRun) => string | null;
  /** True when the text reports a fault: it is shown as one. */
  bad?: (r: TransportInRun) => boolean;
}

/** A column of a sortable table: a number ({@link Column}) or a text. */
export type TableColumn = Column | TextColumn;

const isText = (column: TableColumn): column is TextColumn => 'text' in column;

/** A figure with `digits` decimals and thousands separators; – for none. */
export const formatNumber = (value: number | null, digits: number): string =>
  value === null
    ? '–'
    : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function changeHtml(before: number | null, after: number | null, column: Column): string {
  if (before === null || after === null || column.lowerIsBetter === null) return '';
  const change = after - before;
  // Counts move by whole images: a percentage of 0 lost images says nothing.
  if (column.digits === 0) {
    if (change === 0) return '';
    return (
      `<span class="change ` +
      (change < 0 === column.lowerIsBetter ? 'better' : 'worse') +
      `">${change > 0 ? '+' : '−'}${Math.abs(change)}</span>`
    );
  }
  if (before === 0) return change === 0 ? '<span class="change same">±0</span>' : '';
  const percent = (change / before) * 100;
  const rounded = Math.abs(percent) < 0.05 ? 0 : percent;
  const direction = Math.abs(rounded) < 1 ? 'same' : change < 0 === column.lowerIsBetter ? 'better' : 'worse';
  const text = rounded === 0 ? '±0%' : `${rounded > 0 ? '+' : '−'}${Math.abs(rounded).toFixed(1)}%`;
  return `<span class="change ${direction}">${text}</span>`;
}

function numberCell(t: TransportView, column: Column, twoRuns: boolean): string {
  const last = t.perRun.length - 1;
  const latest = t.perRun[last];
  const values = t.perRun.map((r) => (r === undefined ? null : column.value(r)));
  const now = values[last]!;
  const spread = latest === undefined ? null : (column.spread?.(latest) ?? null);
  const title =
    spread !== null && spread.min !== spread.max
      ? ` title="completed repeats: ` +
        formatNumber(spread.min, column.digits) +
        `–${formatNumber(spread.max, column.digits)}"`
      : '';
  const mark = latest !== undefined && now !== null && column.indicative?.(latest) ? '~' : '';
  const main = `<span class="now">${mark}${formatNumber(now, column.digits)}</span>`;
  // Sent differently (a closed loop against RATE, or two rates): no change, as compare gives none.
  const apart = twoRuns ? notComparableReason(t.perRun[0]?.drawn, t.perRun[last]?.drawn) : null;
  const change =
    apart === null
      ? changeHtml(values[0]!, now, column)
      : `<span class="change same" title="${escapeHtml(apart)}">not comparable</span>`;
  const was = twoRuns ? `<span class="was">${formatNumber(values[0]!, column.digits)}</span>${change}` : '';
  return `<td class="num" data-sort="${now ?? ''}"${title}>${main}${was}</td>`;
}

function textCell(t: TransportView, column: TextColumn, twoRuns: boolean): string {
  const last = t.perRun.length - 1;
  const text = (r: TransportInRun | undefined): string => (r === undefined ? '–' : (column.text(r) ?? '–'));
  const span = (r: TransportInRun | undefined): string => {
    const bad = r !== undefined && column.bad?.(r) === true;
    return bad ? `<span class="reason">${escapeHtml(text(r))}</span>` : escapeHtml(text(r));
  };
  const now = text(t.perRun[last]);
  const before = twoRuns && text(t.perRun[0]) !== now ? `<span class="was">before: ${span(t.perRun[0])}</span>` : '';
  return `<td class="text" data-sort="${escapeHtml(now)}">${span(t.perRun[last])}${before}</td>`;
}

/** A row's cells under `columns`, for a transport across the runs shown. */
export function figureCells(t: TransportView, columns: readonly TableColumn[], twoRuns: boolean): string[] {
  return columns.map((column) => (isText(column) ? textCell(t, column, twoRuns) : numberCell(t, column, twoRuns)));
}

/** A header cell per column, after the Transport one. */
export function headerCells(columns: readonly TableColumn[]): string[] {
  return [
    `<th scope="col" data-type="text" class="text"><button type="button">Transport</button></th>`,
    ...columns.map(
      (c) =>
        `<th scope="col" ${isText(c) ? 'data-type="text" class="text"' : 'data-type="number"'} title="` +
        `${escapeHtml(c.hint)}"><button type="button">${escapeHtml(c.header)}</button></th>`,
    ),
  ];
}

/** The Transport cell that starts every row: its colour and title. */
export function transportCell(t: TransportView): string {
  return (
    `<td class="text transport" data-sort="${escapeHtml(t.title)}"><span class="swatch" style="background:` +
    `${t.color}"></span>${escapeHtml(t.title)}</td>`
  );
}

/** A card with a sortable table of `columns`, one row per transport of `rows`. */
export function renderFigureTable(options: {
  /** The card's class and accessible name. */
  className: string;
  title: string;
  note: string;
  columns: readonly TableColumn[];
  rows: readonly TransportView[];
  twoRuns: boolean;
}): string {
  const { className, title, note, columns, rows, twoRuns } = options;
  const body = rows.map((t, index) => {
    const latest = t.perRun.at(-1);
    const failed = latest !== undefined && !latest.summary.ok;
    return (
      `<tr data-transport="${escapeHtml(t.key)}" data-index="${index}"${failed ? ' class="failed"' : ''}>\n` +
      `${transportCell(t)}\n` +
      `${figureCells(t, columns, twoRuns).join('')}\n</tr>`
    );
  });
  return `<section class="card summary ${className}" aria-label="${escapeHtml(title)}">
<h2>${escapeHtml(title)}</h2>
<p class="note">${escapeHtml(note)}</p>
<div class="table-scroll">
<table class="summary-table sortable ${className}-table${twoRuns ? ' two-runs' : ''}">
<thead><tr>${headerCells(columns).join('')}</tr></thead>
<tbody>
${body.join('\n')}
</tbody>
</table>
</div>
</section>`;
}
