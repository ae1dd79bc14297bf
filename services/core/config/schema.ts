import { z } from 'zod';
import { AUTH_TOKEN_PATTERN } from '../wire/auth.js';
import { parseDurationMs } from './duration.js';
import { formatSize, parseSize, SIZE_UNITS_HELP } from './size.js';
import { DELAY_ALLOWED, LOSS_ALLOWED, parseBitRate, parseDelayMs, parseLossPercent, RATE_ALLOWED } from './link.js';
import { DEFAULT_SOCKET_DIR, parseSocketDir, socketDirAllowed } from './socket-dir.js';
import { MAX_RATE_PER_SECOND } from '../model/schedule.js';
import { DEFAULT_COMMAND_BYTES, MAX_COMMAND_BYTES, MAX_COMMAND_RATE_PER_SECOND } from '../model/command-rules.js';
import { MAX_FIXED_WARMUP_IMAGES } from '../model/warmup.js';

import {
  MAX_CLIENTS,
  MAX_RECEIVERS,
  MAX_IMAGE_COUNT,
  MIN_DURATION_MS,
  MAX_DURATION_MS,
  DURATION_ALLOWED,
  MAX_IMAGE_SIZE_LIMIT,
  DEFAULT_MAX_IMAGE_BYTES,
  DEFAULT_IMAGE_COUNT,
  MAX_DEADLINE_MS,
  DEFAULT_DEADLINE_MISS_PERCENT,
  DEFAULT_RECEIVERS,
  DEFAULT_CONTROL_PORT,
  DEFAULT_WARMUP_MIN_MS,
  DEFAULT_WARMUP_MAX_MS,
  DEFAULT_AUTH_TOKEN_FILE,
  AUTH_TOKEN_ALLOWED,
} from './bounds.js';
import { LOG_LEVELS, type TransportSpec } from './config-types.js';
// One zod schema holds every variable, its default and what it allows (config-rules.ts adds the rules between
// variables).

/**
 * The two variables that give the password of the broker a URL setting names apart from the URL: REDIS_URL →
 * REDIS_PASSWORD, REDIS_PASSWORD_FILE.
 */
export function passwordVariables(urlEnvVar: string): { password: string; file: string } {
  const password = `${urlEnvVar.replace(/_URL$/, '')}_PASSWORD`;
  return { password, file: `${password}_FILE` };
}

/** The environment as parseConfig() reads it. */
export type Env = Readonly<Record<string, string | undefined>>;

// Each variable is parsed from its raw string; an empty string counts as unset, as in .env files,
// unless `blankIsUnset` is false (TRANSPORTS: an empty list is a mistake, not a wish for the default).
function variable<T>(allowed: string, parse: (raw: string) => T | undefined, fallback: T, blankIsUnset = true) {
  return z
    .string()
    .optional()
    .transform((raw, ctx): T => {
      if (raw === undefined || (blankIsUnset && raw.trim() === '')) return fallback;
      const value = parse(raw.trim());
      if (value === undefined) {
        ctx.addIssue({ code: 'custom', message: allowed });
        return z.NEVER;
      }
      return value;
    });
}

function wholeNumber(min: number, max: number, fallback: number) {
  return variable(
    `a whole number from ${min.toLocaleString('en-US')} to ${max.toLocaleString('en-US')}`,
    (raw) => {
      const value = /^-?\d+$/.test(raw) ? Number(raw) : NaN;
      return Number.isSafeInteger(value) && value >= min && value <= max ? value : undefined;
    },
    fallback,
  );
}

/** A rate, unset by default: `what` per second above 0 and at most `most`, fractions allowed. */
function perSecond(what: string, most: number) {
  return variable<number | undefined>(
    `${what} per second above 0 and at most ${most.toLocaleString('en-US')}, e.g. 100 or 2.5`,
    (raw) => {
      const value = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : NaN;
      return value > 0 && value <= most ? value : undefined;
    },
    undefined,
  );
}

function size(fallback: number | undefined, mostBytes = Infinity) {
  return variable<number | undefined>(
    `${SIZE_UNITS_HELP}, at least 1 byte` +
      (mostBytes === Infinity ? '' : ` and at most ${formatSize(mostBytes)} (${mostBytes} bytes)`),
    (raw) => {
      const bytes = parseSize(raw);
      return bytes !== undefined && bytes >= 1 && bytes <= mostBytes ? bytes : undefined;
    },
    fallback,
  );
}

/** A directory for socket files up to `longestFileName`; DEFAULT_SOCKET_DIR by default. */
function socketDir(longestFileName: string) {
  return variable<string>(
    socketDirAllowed(longestFileName),
    (raw) => parseSocketDir(raw, longestFileName),
    DEFAULT_SOCKET_DIR,
  );
}

/** The longest socket file name of the transports whose setting is the directory `envVar`. */
function longestSocketFile(specs: readonly TransportSpec[], envVar: string): string {
  return specs
    .flatMap(({ deployment: { setting } }) =>
      setting.kind === 'socket' && setting.envVar === envVar ? [setting.fileName] : [],
    )
    .reduce((longest, name) => (Buffer.byteLength(name) > Buffer.byteLength(longest) ? name : longest), '');
}

/** A URL with one of `schemes`; unset by default. */
function url(schemes: readonly string[], example: string) {
  return variable<string | undefined>(
    `a ${schemes.map((scheme) => `${scheme}://`).join(' or ')} URL, e.g. ${example}`,
    (raw) =>
      schemes.some((scheme) => raw.startsWith(`${scheme}://`)) && /^\S+:\/\/\S+$/.test(raw) && URL.canParse(raw)
        ? raw
        : undefined,
    undefined,
  );
}

// What a switch (VERIFY, PROFILE) accepts, in any case: a Map, so that no name of Object's own (`constructor`) passes.
const ON_OFF_WORDS: ReadonlyMap<string, boolean> = new Map([
  ['1', true],
  ['true', true],
  ['yes', true],
  ['0', false],
  ['false', false],
  ['no', false],
]);

/** A switch: 1, true or yes turn it on, 0, false or no off; `allowed` says so in the words its docs use. */
function onOff(allowed: string, fallback: boolean) {
  return variable(allowed, (raw) => ON_OFF_WORDS.get(raw.toLowerCase()), fallback);
}

const text = (fallback: string | undefined) =>
  variable<string | undefined>('a non-empty string', (raw) => raw, fallback);

// A password is kept as given (a space may belong to it); only an empty or blank one counts as unset.
const password = () =>
  z
    .string()
    .optional()
    .transform((raw) => (raw === undefined || raw.trim() === '' ? undefined : raw));

/** Names of the URL settings of `specs` (REDIS_URL once for the three Redis transports). */
export function urlVariables(specs: readonly TransportSpec[]): string[] {
  return [...new Set(specs.flatMap(({ deployment: { setting } }) => (setting.kind === 'url' ? [setting.envVar] : [])))];
}

export function schemaFor(specs: readonly TransportSpec[]) {
  const names = specs.map((s) => s.name);
  const defaultNames = specs.filter((s) => s.deployment.defaultRun).map((s) => s.name);
  const settingVars = Object.fromEntries(
    specs.map(
      ({ deployment: { setting } }) =>
        [
          setting.envVar,
          setting.kind === 'port'
            ? wholeNumber(1, 65535 - (setting.nextPorts ?? 0), setting.defaultPort)
            : setting.kind === 'url'
              ? url(setting.schemes, setting.example)
              : socketDir(longestSocketFile(specs, setting.envVar)),
        ] as const,
    ),
  );
  const passwordVars = Object.fromEntries(
    urlVariables(specs).flatMap((envVar) => {
      const names = passwordVariables(envVar);
      return [
        [names.password, password()],
        [names.file, text(undefined)],
      ] as const;
    }),
  );
  return z.object({
    IMAGE_COUNT: wholeNumber(1, MAX_IMAGE_COUNT, DEFAULT_IMAGE_COUNT),
    DURATION: variable<number | undefined>(
      DURATION_ALLOWED,
      (raw) => {
        const durationMs = parseDurationMs(raw);
        return durationMs !== undefined && durationMs >= MIN_DURATION_MS && durationMs <= MAX_DURATION_MS
          ? durationMs
          : undefined;
      },
      undefined,
    ),
    IMAGE_SIZE: size(undefined),
    IMAGE_PATH: text(undefined),
    // Set but empty ("", " ", ",", "websocket,") is refused: an empty entry is most often a name
    // deleted by mistake, and running other transports than meant would be a guess.
    TRANSPORTS: variable(
      `all, or a comma-separated list of distinct transports from: ${names.join(', ')}; no entry empty (unset ` +
        `for the default run: ` +
        (defaultNames.length > 0 ? defaultNames : names).join(',') +
        `)`,
      (raw) => {
        if (raw.toLowerCase() === 'all') return names;
        const list = raw.split(',').map((s) => s.trim().toLowerCase());
        const valid = list.every((n) => names.includes(n)) && new Set(list).size === list.length;
        return valid && list.length > 0 ? list : undefined;
      },
      defaultNames.length > 0 ? defaultNames : names,
      false,
    ),
    WINDOW: wholeNumber(1, 1024, 1),
    CLIENTS: wholeNumber(1, MAX_CLIENTS, 1),
    RECEIVERS: wholeNumber(1, MAX_RECEIVERS, DEFAULT_RECEIVERS),
    RATE: perSecond('unset (a closed loop), or images', MAX_RATE_PER_SECOND),
    COMMAND_RATE: perSecond('unset (no command lane), or commands', MAX_COMMAND_RATE_PER_SECOND),
    DEADLINE_MS: variable<number | undefined>(
      `unset (one frame interval, 1000 ÷ RATE), or milliseconds above 0 and at most ` +
        `${MAX_DEADLINE_MS.toLocaleString('en-US')}, e.g. 33 or 16.7; only with RATE`,
      (raw) => {
        const value = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : NaN;
        return value > 0 && value <= MAX_DEADLINE_MS ? value : undefined;
      },
      undefined,
    ),
    DEADLINE_MISS_PERCENT: variable<number | undefined>(
      `unset (${DEFAULT_DEADLINE_MISS_PERCENT}), or a percentage from 0 to 100, e.g. 1 or 0.5; only with RATE`,
      (raw) => {
        const value = /^\d+(\.\d+)?%?$/.test(raw) ? Number(raw.replace('%', '')) : NaN;
        return value >= 0 && value <= 100 ? value : undefined;
      },
      undefined,
    ),
    COMMAND_SIZE: size(DEFAULT_COMMAND_BYTES, MAX_COMMAND_BYTES),
    WARMUP: variable<number | 'auto'>(
      `auto, or a whole number of images from 0 to ` +
        MAX_FIXED_WARMUP_IMAGES.toLocaleString('en-US') +
        ` (0: a cold run on purpose)`,
      (raw) => {
        if (raw.toLowerCase() === 'auto') return 'auto';
        const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
        return Number.isSafeInteger(value) && value <= MAX_FIXED_WARMUP_IMAGES ? value : undefined;
      },
      'auto',
    ),
    WARMUP_MIN_MS: wholeNumber(0, 600_000, DEFAULT_WARMUP_MIN_MS),
    WARMUP_MAX_MS: wholeNumber(1, 3_600_000, DEFAULT_WARMUP_MAX_MS),
    REPEAT: wholeNumber(1, 100, 1),
    VERIFY: onOff('true or false', true),
    PROFILE: onOff('1 or 0 (or true or false)', false),
    RECEIVER_HOST: text('127.0.0.1'),
    BIND_HOST: text('127.0.0.1'),
    CONTROL_PORT: wholeNumber(1, 65535, DEFAULT_CONTROL_PORT),
    ...settingVars,
    ...passwordVars,
    OUTPUT_DIR: text('./output'),
    LOG_LEVEL: variable(
      `one of ${LOG_LEVELS.join(', ')}`,
      (raw) => LOG_LEVELS.find((l) => l === raw.toLowerCase()),
      'info',
    ),
    MAX_IMAGE_SIZE: size(DEFAULT_MAX_IMAGE_BYTES, MAX_IMAGE_SIZE_LIMIT),
    IMAGE_TIMEOUT_MS: wholeNumber(1, 3_600_000, 10_000),
    CONNECT_TIMEOUT_MS: wholeNumber(1, 3_600_000, 30_000),
    NETWORK_RATE: variable<number | undefined>(RATE_ALLOWED, parseBitRate, undefined),
    NETWORK_DELAY: variable<number | undefined>(DELAY_ALLOWED, parseDelayMs, undefined),
    NETWORK_LOSS: variable<number | undefined>(LOSS_ALLOWED, parseLossPercent, undefined),
    AUTH_TOKEN: variable<string | undefined>(
      AUTH_TOKEN_ALLOWED,
      (raw) => (AUTH_TOKEN_PATTERN.test(raw) ? raw : undefined),
      undefined,
    ),
    AUTH_TOKEN_FILE: text(DEFAULT_AUTH_TOKEN_FILE),
  });
}

/**
 * Every variable that names a broker or gives its password (REDIS_URL, REDIS_PASSWORD, REDIS_PASSWORD_FILE...): what a
 * run on private brokers does not inherit.
 */
export function brokerVariables(specs: readonly TransportSpec[]): string[] {
  return urlVariables(specs).flatMap((envVar) => {
    const names = passwordVariables(envVar);
    return [envVar, names.password, names.file];
  });
}

/** Names of every variable the config reads, given the transports' specs. */
export function configVariables(specs: readonly TransportSpec[]): string[] {
  return Object.keys(schemaFor(specs).shape);
}

/** Each variable's default as the schema gives it when unset (undefined: none), by name: what generated files write. */
export function variableDefaults(specs: readonly TransportSpec[]): Record<string, unknown> {
  const shape = schemaFor(specs).shape as Record<string, z.ZodType<unknown, string | undefined>>;
  return Object.fromEntries(Object.entries(shape).map(([name, schema]) => [name, schema.safeParse(undefined).data]));
}
