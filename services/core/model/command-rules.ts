// The command lane's bounds (COMMAND_RATE, COMMAND_SIZE), apart from its record so that config reads them without
// loading the histograms (command-lane.ts).

/** Most commands per second COMMAND_RATE allows: a lane of small urgent messages, not a second data stream. */
export const MAX_COMMAND_RATE_PER_SECOND = 10_000;
/** COMMAND_SIZE's default: a small command (stop, change mode). */
export const DEFAULT_COMMAND_BYTES = 64;
/** Largest COMMAND_SIZE: a command stays small beside any image. */
export const MAX_COMMAND_BYTES = 64 * 1024;

/**
 * Commands sent alone before each section's recorded images: a second's worth at COMMAND_RATE, at least enough for a
 * p90 and at most 200 (at 10 per second that is 20 s of a section's time before its images).
 */
export function aloneCommandCount(ratePerSecond: number): number {
  return Math.min(200, Math.max(20, Math.round(ratePerSecond)));
}
