import type { Range } from '../../model/stats.js';

// The plain-text renderers' number formats ('-' for a figure missing) and their aligned table.

/** A time in ms with three decimals. */
export const ms = (value: number | null | undefined): string =>
  value === null || value === undefined ? '-' : value.toFixed(3);
/** A figure with `digits` decimals. */
export const fixed = (value: number | null | undefined, digits: number): string =>
  value === null || value === undefined ? '-' : value.toFixed(digits);
/** Bytes as MiB with one decimal. */
export const mib = (bytes: number | undefined): string =>
  bytes === undefined ? '-' : (bytes / 1024 / 1024).toFixed(1);
/** A share (0–1) as a whole percentage. */
export const percent = (share: number | undefined): string =>
  share === undefined ? '-' : `${(share * 100).toFixed(0)}%`;
/** "min–max" of a spread across repeats. */
export const range = (r: Range | null, digits: number): string =>
  r === null ? '-' : `${r.min.toFixed(digits)}–${r.max.toFixed(digits)}`;
/** Nanoseconds as signed ms with three decimals ("+5.000", "−0.012"; "0.000" unsigned). */
export const signedMs = (ns: number): string => {
  const magnitude = (Math.abs(ns) / 1e6).toFixed(3);
  return magnitude === '0.000' ? magnitude : `${ns > 0 ? '+' : '−'}${magnitude}`;
};

/** Renders rows as a text table: first column left-aligned, numbers right-aligned, last column free text. */
export function renderTable(header: readonly string[], rows: readonly string[][], freeLastColumn = true): string {
  const widths = header.map((h, col) => Math.max(h.length, ...rows.map((r) => r[col]!.length)));
  const last = header.length - 1;
  const format = (cells: readonly string[]): string =>
    cells
      .map((cell, col) =>
        col === last && freeLastColumn ? cell : col === 0 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!),
      )
      .join('  ')
      .trimEnd();
  const rule = widths.map((w, col) => '-'.repeat(col === last && freeLastColumn ? header[col]!.length : w));
  return [format(header), format(rule), ...rows.map(format)].join('\n');
}
