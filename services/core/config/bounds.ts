import { DURATION_UNITS_HELP, formatDurationMs } from './duration.js';

// The limits and defaults of the variables, in one place: the schema (schema.ts), the cross-variable rules
// (config-rules.ts) and the docs read them.

/** Most CLIENTS. */
export const MAX_CLIENTS = 1000;
/**
 * Most RECEIVERS: a receiver's index travels in one byte of the ack, and 32 processes is already many for one machine.
 */
export const MAX_RECEIVERS = 32;

/**
 * Most images IMAGE_COUNT allows in a section (and a DURATION section sends at most). Neither side
 * holds anything per image, so memory does not bound it; the frame's u32 seq does (warm-up
 * included), and the disk: output.log and the section's CSV take about 70 bytes per image.
 */
export const MAX_IMAGE_COUNT = 1_000_000_000;

/** Shortest DURATION: the run's series are per second, and a shorter section has not one point. */
export const MIN_DURATION_MS = 1000;
/** Longest DURATION: a week, already a soak per section (times transports, times REPEAT). */
export const MAX_DURATION_MS = 7 * 24 * 3_600_000;
/** What DURATION allows, in words. */
export const DURATION_ALLOWED =
  `${DURATION_UNITS_HELP}; from ${formatDurationMs(MIN_DURATION_MS)} (the figures are per second) to 7 days ` +
  `(${formatDurationMs(MAX_DURATION_MS)})`;

/** Largest MAX_IMAGE_SIZE: gRPC's message limits are signed 32-bit. */
export const MAX_IMAGE_SIZE_LIMIT = 2 ** 31 - 1 - 1024 * 1024;
/** MAX_IMAGE_SIZE when unset: 256 MiB, far above a camera frame, far below gRPC's limit. */
export const DEFAULT_MAX_IMAGE_BYTES = 256 * 1024 * 1024;
/** IMAGE_COUNT when unset: a quick first run (its notes say when a run is too short to compare). */
export const DEFAULT_IMAGE_COUNT = 10;
/** The longest DEADLINE_MS: an hour, as IMAGE_TIMEOUT_MS. */
export const MAX_DEADLINE_MS = 3_600_000;
/** DEADLINE_MISS_PERCENT when unset: a frame in a hundred, as `npm run bench -- capacity` allows by default. */
export const DEFAULT_DEADLINE_MISS_PERCENT = 1;
/** RECEIVERS when unset: one. */
export const DEFAULT_RECEIVERS = 1;
/** CONTROL_PORT when unset. */
export const DEFAULT_CONTROL_PORT = 8080;
/**
 * Least time an automatic warm-up takes: docs/measurement.md, "Warm-up and sample size", has the measurements behind
 * it.
 */
export const DEFAULT_WARMUP_MIN_MS = 500;
/** Most time an automatic warm-up takes before the section goes on, marked not steady. */
export const DEFAULT_WARMUP_MAX_MS = 10_000;
/** Relative to the working directory, like .env: both services started from the project find it. */
export const DEFAULT_AUTH_TOKEN_FILE = '.itb-auth-token';

/** What AUTH_TOKEN (and the content of AUTH_TOKEN_FILE) may be, in words. */
export const AUTH_TOKEN_ALLOWED =
  '16 to 256 characters from A-Z a-z 0-9 . _ ~ + / - (optionally ending in =), e.g. `openssl rand -base64 32`';
