import { medianOf } from '../../services/core/model/stats.js';

// How the bench's tables write a figure: '-' where there is none.

/** The median, null for no values. */
export const median = (values: readonly number[]): number | null => medianOf(values) ?? null;
/** `value` with `digits` decimals, '-' for none. */
export const fixed = (value: number | null | undefined, digits: number): string =>
  value === null || value === undefined ? '-' : value.toFixed(digits);
/** Bytes as whole MiB, '-' for none. */
export const mib = (bytes: number | undefined): string =>
  bytes === undefined ? '-' : (bytes / 1024 / 1024).toFixed(0);
