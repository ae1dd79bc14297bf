// Sizes: SI units are powers of 1000 and IEC units powers of 1024, as their names say, so
// "4MB" is 4,000,000 bytes and "4MiB" is 4,194,304. Shown sizes use IEC units.

const UNIT_BYTES: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  k: 1e3,
  m: 1e6,
  g: 1e9,
};

/** Units parseSize accepts, for error messages. */
export const SIZE_UNITS_HELP =
  'a whole number of bytes, or a number with B, KB, MB, GB (×1000) or KiB, MiB, GiB (×1024), e.g. 533KB, 4MB, 1MiB';

/** Parses "545792", "533KB", "1.5MiB" into whole bytes; undefined when it is not a size. */
export function parseSize(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!match) return undefined;
  const unitBytes = UNIT_BYTES[(match[2] ?? '').toLowerCase() || 'b'];
  if (unitBytes === undefined) return undefined;
  const bytes = Number(match[1]) * unitBytes;
  // "1.5B" or "0.0001KB" name a fraction of a byte: not a size.
  if (!Number.isSafeInteger(bytes)) return undefined;
  return bytes;
}

/** Formats bytes for people: "533.0 KiB", "4.0 MiB", "999 B". */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
