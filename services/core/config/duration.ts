// Durations as k6 and wrk write them: "30s", "10m", "1h30m", "500ms". Strict on purpose: whole
// numbers, lowercase units, each unit at most once and the largest first, no spaces. A bare
// number is refused: "5" could mean seconds or minutes, and a soak's length is no place to guess.
// (npm's `ms` takes no "1h30m" and reads "5" as 5 ms; `parse-duration` takes noise, negatives and
// exponents.)

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;
const SECOND_MS = 1000;

// The "m" group's (?!s) keeps "500ms" from reading as 500 minutes and a stray "s".
const DURATION_PATTERN = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/;

/** Units parseDurationMs accepts, for error messages. */
export const DURATION_UNITS_HELP =
  'a time with units (a bare number has none): whole numbers with h, m, s or ms, largest first, e.g. 30s, 10m, ' +
  '1h30m, 2m30s, 1500ms';

/** Milliseconds of "1h30m", "30s", "500ms"; undefined when it is not a duration in that grammar. */
export function parseDurationMs(text: string): number | undefined {
  const match = DURATION_PATTERN.exec(text);
  if (!match) return undefined;
  const [, hours, minutes, seconds, millis] = match;
  // Every group is optional, so "" matches too: at least one must be there.
  if (hours === undefined && minutes === undefined && seconds === undefined && millis === undefined) return undefined;
  const durationMs =
    Number(hours ?? 0) * HOUR_MS +
    Number(minutes ?? 0) * MINUTE_MS +
    Number(seconds ?? 0) * SECOND_MS +
    Number(millis ?? 0);
  return Number.isSafeInteger(durationMs) ? durationMs : undefined;
}

/** Formats whole milliseconds in the grammar parseDurationMs reads: 5_400_000 is "1h30m", 0 is "0s". */
export function formatDurationMs(durationMs: number): string {
  const parts: string[] = [];
  let restMs = durationMs;
  for (const [unit, unitMs] of [
    ['h', HOUR_MS],
    ['m', MINUTE_MS],
    ['s', SECOND_MS],
    ['ms', 1],
  ] as const) {
    const count = Math.floor(restMs / unitMs);
    if (count > 0) parts.push(`${count}${unit}`);
    restMs -= count * unitMs;
  }
  return parts.length > 0 ? parts.join('') : '0s';
}
