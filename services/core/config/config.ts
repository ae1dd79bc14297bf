import { z } from 'zod';
import { AUTH_TOKEN_PATTERN } from '../wire/auth.js';
import { errorMessage, ErrorCode, ItbError } from '../errors.js';
import { DURATION_UNITS_HELP, formatDurationMs, parseDurationMs } from './duration.js';
import { MIN_GENERATED_PNG_BYTES } from '../model/png.js';
import { formatSize, parseSize, SIZE_UNITS_HELP } from './size.js';
import {
  DELAY_ALLOWED,
  isLoopbackHost,
  isShaped,
  LOSS_ALLOWED,
  parseBitRate,
  parseDelayMs,
  parseLossPercent,
  RATE_ALLOWED,
  type NetworkShaping,
} from './link.js';
import { REDACTED, redactUrl, urlCredentials } from './redact.js';
import { DEFAULT_SOCKET_DIR, parseSocketDir, socketDirAllowed, socketPathIn } from './socket-dir.js';
import { MAX_RATE_PER_SECOND } from '../model/schedule.js';
import { DEFAULT_COMMAND_BYTES, MAX_COMMAND_BYTES, MAX_COMMAND_RATE_PER_SECOND } from '../model/command-rules.js';
import { MAX_FIXED_WARMUP_IMAGES } from '../model/warmup.js';

// Configuration comes only from environment variables. One zod schema holds every variable, its
// default and what it allows; parsing collects every bad variable at once, then cross-variable
// rules run over the parsed values. The result is frozen and passed down: nothing deeper reads
// process.env.

/**
 * The one setting that says where a transport's peer is: a port of the receiver's, or the URL of a broker.
 * `nextPorts`: ports after this one the transport binds too (zeromq-pubsub's acks: 1). `description`: what binds the
 * port, for the README's table and .env.example's comment, when "<label> listener" says less (what it carries, the
 * next ports it binds): `HTTP listener (raw image bodies)`.
 */
export type TransportSetting =
  | { kind: 'port'; envVar: string; defaultPort: number; nextPorts?: number; description?: string }
  | { kind: 'url'; envVar: string; schemes: readonly string[]; example: string }
  | {
      /** A socket file `fileName` in the directory `envVar` names, which both services share (same host only). */
      kind: 'socket';
      envVar: string;
      fileName: string;
    };

/** What the config needs to know about a transport: its name and its setting. */
export interface TransportSpec {
  name: string;
  traits: {
    /**
     * Most CLIENTS the transport can run (websocket-push: 1, its receiver dials one connection back); undefined:
     * MAX_CLIENTS.
     */
    maxClients?: { clients: number; why: string };
    /** Most RECEIVERS the transport can run (websocket-push: 1); undefined: MAX_RECEIVERS. */
    maxReceivers?: { receivers: number; why: string };
  };
  deployment: {
    /** In the run TRANSPORTS gives when unset. */
    defaultRun: boolean;
    setting: TransportSetting;
  };
}

/** Levels LOG_LEVEL accepts (pino's). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The validated configuration both services run with. */
export interface Config {
  /**
   * IMAGE_COUNT: recorded images per section; when durationMs is set, IMAGE_COUNT is unset and this is its default,
   * unused.
   */
  imageCount: number;
  /**
   * DURATION: each section sends its recorded images for this long instead of imageCount (under
   * RATE, a soak at a fixed rate); undefined: a count of images, the default.
   */
  durationMs: number | undefined;
  /** Requested image size; undefined means the bundled asset as it is. */
  imageSizeBytes: number | undefined;
  imagePath: string | undefined;
  transports: readonly string[];
  window: number;
  /**
   * RATE: images per second on an open-loop schedule, whatever the acks do; undefined: a closed
   * loop (the next image goes when the window has room). Under RATE, WINDOW bounds the images in
   * flight: one due while WINDOW are unacknowledged waits for a slot and goes late (nothing is dropped), its wait
   * counted in its age from the due time.
   */
  ratePerSecond: number | undefined;
  /**
   * Under RATE: DEADLINE_MS (default one frame interval, 1000 ÷ RATE), the age past which a frame is late, and
   * DEADLINE_MISS_PERCENT ÷ 100 (default 1 %), the share of frames that may miss it; undefined in a closed loop.
   */
  deadline: { deadlineMs: number; allowedLateShare: number } | undefined;
  /**
   * COMMAND_RATE: commands per second sent beside each section's images (and alone before them), timed and reported
   * apart from the images; undefined: no command lane, the default.
   */
  commandRatePerSecond: number | undefined;
  /** COMMAND_SIZE: bytes per command. */
  commandSizeBytes: number;
  /**
   * CLIENTS: connections the transmitter opens per section, each with its own WINDOW; the section's images are dealt to
   * whichever has room.
   */
  clients: number;
  /** RECEIVERS: receivers every image goes to (point-to-point transports send a copy to each, pub/sub ones fan out). */
  receivers: number;
  /**
   * Each receiver's control address when `npm start` runs several on this machine (ITB_RECEIVERS,
   * which it sets); undefined: RECEIVER_HOST names them all (every address it resolves to, as
   * compose's --scale gives), on CONTROL_PORT.
   */
  receiverAddresses: readonly { host: string; controlPort: number }[] | undefined;
  /** NETWORK_RATE, NETWORK_DELAY, NETWORK_LOSS: how `npm start` shapes the link (each undefined: not). */
  network: NetworkShaping;
  /**
   * The link between the two sides, in words, for every report: as `npm start` (or the compose
   * override) applied it (ITB_LINK, which they set), else loopback or the network to RECEIVER_HOST.
   */
  link: string;
  /** 'auto': each section warms up until its round trips are steady; a number: exactly that many warm-up images. */
  warmup: number | 'auto';
  /** Least and most time an automatic warm-up takes. */
  warmupMinMs: number;
  warmupMaxMs: number;
  /** Sections per transport, interleaved across transports. */
  repeat: number;
  /** Whether the receiver hashes every image; off only to measure what verification costs. */
  verify: boolean;
  receiverHost: string;
  bindHost: string;
  controlPort: number;
  /** Port of every transport whose setting is a port, by transport name. */
  ports: Readonly<Record<string, number>>;
  /** Socket file of every transport whose setting is a socket (SOCKET_DIR and its file name), by transport name. */
  socketPaths: Readonly<Record<string, string>>;
  /**
   * URL of every transport whose setting is a URL, by transport name; undefined when unset. May hold a user and
   * password: reports show it through redactUrl().
   */
  urls: Readonly<Record<string, string | undefined>>;
  /**
   * Password of the broker of every transport whose setting is a URL, by transport name, from its
   * <NAME>_PASSWORD or <NAME>_PASSWORD_FILE (REDIS_PASSWORD for REDIS_URL); undefined: none apart
   * from the URL. Never reported.
   */
  brokerPasswords: Readonly<Record<string, string | undefined>>;
  outputDir: string;
  logLevel: (typeof LOG_LEVELS)[number];
  maxImageBytes: number;
  imageTimeoutMs: number;
  connectTimeoutMs: number;
  /** The secret transmitter and receiver share; undefined: it is in the file at authTokenFile. Never reported. */
  authToken: string | undefined;
  /**
   * Where the secret is when AUTH_TOKEN is unset: the receiver creates the file if it is missing, the transmitter reads
   * it.
   */
  authTokenFile: string;
}

/** The configuration as reports show it: everything but the secrets, broker URLs without user and password. */
export type PublicConfig = Omit<Config, 'authToken' | 'brokerPasswords'>;

/**
 * `config` without its secrets, for results.json and the control protocol: passwords dropped, every URL through
 * redactUrl().
 */
export function publicConfig(config: Readonly<Config>): PublicConfig {
  const { authToken: _secret, brokerPasswords: _passwords, ...rest } = config;
  // The receiver runs this on a transmitter's announced config too, which the control protocol
  // leaves open: a missing `urls`, or one holding other than strings, must not throw.
  const given: unknown = rest.urls;
  const entries = typeof given === 'object' && given !== null ? Object.entries(given) : [];
  const urls = Object.fromEntries(
    entries.map(([name, url]) => [name, typeof url === 'string' ? redactUrl(url) : undefined]),
  );
  return { ...rest, urls };
}

/**
 * The two variables that give the password of the broker a URL setting names apart from the URL: REDIS_URL →
 * REDIS_PASSWORD, REDIS_PASSWORD_FILE.
 */
export function passwordVariables(urlEnvVar: string): { password: string; file: string } {
  const password = `${urlEnvVar.replace(/_URL$/, '')}_PASSWORD`;
  return { password, file: `${password}_FILE` };
}

/** What AUTH_TOKEN (and the content of AUTH_TOKEN_FILE) may be, in words. */
export const AUTH_TOKEN_ALLOWED =
  '16 to 256 characters from A-Z a-z 0-9 . _ ~ + / - (optionally ending in =), e.g. `openssl rand -base64 32`';

/** One bad variable: its name, the value found, and what is allowed. */
export interface ConfigIssue {
  variable: string;
  value: string | undefined;
  allowed: string;
}

/** Outcome of {@link parseConfig}: a config, or every issue found. */
export type ConfigResult = { ok: true; config: Readonly<Config> } | { ok: false; issues: ConfigIssue[] };

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
const DEFAULT_MAX_IMAGE_BYTES = 256 * 1024 * 1024;
const DEFAULT_IMAGE_COUNT = 10;
/** The longest DEADLINE_MS: an hour, as IMAGE_TIMEOUT_MS. */
const MAX_DEADLINE_MS = 3_600_000;
/** DEADLINE_MISS_PERCENT when unset: a frame in a hundred, as `npm run bench -- capacity` allows by default. */
export const DEFAULT_DEADLINE_MISS_PERCENT = 1;
const DEFAULT_RECEIVERS = 1;
const DEFAULT_CONTROL_PORT = 8080;
/**
 * Least time an automatic warm-up takes: docs/measurement.md, "Warm-up and sample size", has the measurements behind
 * it.
 */
export const DEFAULT_WARMUP_MIN_MS = 500;
/** Most time an automatic warm-up takes before the section goes on, marked not steady. */
export const DEFAULT_WARMUP_MAX_MS = 10_000;
/** Relative to the working directory, like .env: both services started from the project find it. */
export const DEFAULT_AUTH_TOKEN_FILE = '.itb-auth-token';

type Env = Readonly<Record<string, string | undefined>>;

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

const text = (fallback: string | undefined) =>
  variable<string | undefined>('a non-empty string', (raw) => raw, fallback);

// A password is kept as given (a space may belong to it); only an empty or blank one counts as unset.
const password = () =>
  z
    .string()
    .optional()
    .transform((raw) => (raw === undefined || raw.trim() === '' ? undefined : raw));

/** Names of the URL settings of `specs` (REDIS_URL once for the three Redis transports). */
function urlVariables(specs: readonly TransportSpec[]): string[] {
  return [...new Set(specs.flatMap(({ deployment: { setting } }) => (setting.kind === 'url' ? [setting.envVar] : [])))];
}

function schemaFor(specs: readonly TransportSpec[]) {
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
    VERIFY: variable(
      'true or false',
      (raw) => ({ true: true, false: false, '1': true, '0': false, yes: true, no: false })[raw.toLowerCase()],
      true,
    ),
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

/** What parseConfig() is told besides the environment. */
export interface ParseOptions {
  /** The caller is the one that applies NETWORK_* (npm start), not a service. */
  shapesLink?: boolean;
  /** Reads a *_PASSWORD_FILE (the caller's I/O; throws with the reason); without it such a variable is refused. */
  readSecretFile?: (filePath: string) => string;
}

/** Parses and checks the environment; every bad variable is reported at once, none is guessed. */
export function parseConfig(env: Env, specs: readonly TransportSpec[], options: ParseOptions = {}): ConfigResult {
  // Each variable on its own, so one bad value never hides another, including in the rules that
  // relate two variables (those run on whichever values did parse).
  const shape = schemaFor(specs).shape as Record<string, z.ZodType<unknown, string | undefined>>;
  const issues: ConfigIssue[] = [];
  const v: Record<string, unknown> = {};
  const urlVars = urlVariables(specs);
  // AUTH_TOKEN too: a refused secret is still someone's secret, perhaps with one character wrong.
  const secretVars = new Set(['AUTH_TOKEN', ...urlVars.map((envVar) => passwordVariables(envVar).password)]);
  // What an issue shows of a value (the message goes to stderr): never a password, a URL without its credentials.
  const shown = (name: string): string | undefined => {
    const raw = env[name];
    if (raw === undefined) return raw;
    if (secretVars.has(name)) return REDACTED;
    return urlVars.includes(name) ? redactUrl(raw) : raw;
  };
  for (const [name, schema] of Object.entries(shape)) {
    const parsed = schema.safeParse(env[name]);
    if (parsed.success) v[name] = parsed.data;
    else
      issues.push({ variable: name, value: shown(name), allowed: parsed.error.issues[0]?.message ?? 'a valid value' });
  }
  const parsedOk = (name: string): boolean => name in v;
  const passwordsByUrlVar = new Map(
    urlVars.map((envVar) => [envVar, brokerPassword(envVar, v, shown, options.readSecretFile, issues)] as const),
  );
  // A rule relating a variable to one that is itself bad judges it against that one's default
  // (what runs once the bad one is unset) and says so, so that no bad variable hides another.
  const standIn = (name: string): string => (parsedOk(name) ? '' : `, its default: ${name} itself is bad`);
  // Rules about two variables set together are judged on what was set, whatever its value.
  const isSet = (name: string): boolean => (env[name]?.trim() ?? '') !== '';
  const maxImageBytes = (v.MAX_IMAGE_SIZE as number | undefined) ?? DEFAULT_MAX_IMAGE_BYTES;
  const imageSizeBytes = v.IMAGE_SIZE as number | undefined;
  if (imageSizeBytes !== undefined) {
    if (imageSizeBytes > maxImageBytes) {
      issues.push({
        variable: 'IMAGE_SIZE',
        value: env.IMAGE_SIZE,
        allowed:
          `at most MAX_IMAGE_SIZE, ${maxImageBytes} bytes ` +
          `(${formatSize(maxImageBytes)}${standIn('MAX_IMAGE_SIZE')})`,
      });
    } else if (imageSizeBytes < MIN_GENERATED_PNG_BYTES) {
      issues.push({
        variable: 'IMAGE_SIZE',
        value: env.IMAGE_SIZE,
        allowed: `at least ${MIN_GENERATED_PNG_BYTES} bytes, the smallest valid PNG it can generate`,
      });
    }
  }
  if (isSet('IMAGE_SIZE') && isSet('IMAGE_PATH')) {
    issues.push({
      variable: 'IMAGE_PATH',
      value: env.IMAGE_PATH,
      allowed: 'unset when IMAGE_SIZE is set: the image is either a file or generated at a size',
    });
  }
  const warmupMaxMs = (v.WARMUP_MAX_MS as number | undefined) ?? DEFAULT_WARMUP_MAX_MS;
  if (parsedOk('WARMUP_MIN_MS') && (v.WARMUP_MIN_MS as number) > warmupMaxMs) {
    issues.push({
      variable: 'WARMUP_MIN_MS',
      value: env.WARMUP_MIN_MS,
      allowed: `at most WARMUP_MAX_MS (${warmupMaxMs}${standIn('WARMUP_MAX_MS')})`,
    });
  }
  // DURATION or IMAGE_COUNT, never both: which one ends a section would be a guess. Judged on what
  // was set, so a DURATION without units is reported together with the clash, not instead of it.
  const byDuration = isSet('DURATION');
  if (byDuration && isSet('IMAGE_COUNT')) {
    issues.push({
      variable: 'IMAGE_COUNT',
      value: env.IMAGE_COUNT,
      allowed:
        `unset when DURATION is set (DURATION=${JSON.stringify(env.DURATION)}): a section runs either IMAGE_COUNT ` +
        `images or for DURATION, so set one of the two`,
    });
  }
  const clients = v.CLIENTS as number | undefined;
  const receivers = v.RECEIVERS as number | undefined;
  // Under DURATION the count is not what ends a section, so it does not bound CLIENTS.
  const imageCount = (v.IMAGE_COUNT as number | undefined) ?? DEFAULT_IMAGE_COUNT;
  if (!byDuration && clients !== undefined && clients > 1 && clients > imageCount) {
    issues.push({
      variable: 'CLIENTS',
      value: env.CLIENTS,
      allowed:
        `at most IMAGE_COUNT (${imageCount}${standIn('IMAGE_COUNT')}): every client sends at least one recorded ` +
        `image`,
    });
  }
  // A deadline is a frame's age from its due time: without RATE no frame has one.
  for (const variable of ['DEADLINE_MS', 'DEADLINE_MISS_PERCENT'] as const) {
    if (isSet(variable) && !isSet('RATE'))
      issues.push({
        variable,
        value: env[variable],
        allowed: "unset when RATE is unset: a deadline counts from each frame's due time, which only RATE gives",
      });
  }
  // The command lane times one transmitter-receiver pair: its one-way times are one receiver's, its acks one link's.
  if (isSet('COMMAND_RATE') && receivers !== undefined && receivers > 1) {
    issues.push({
      variable: 'COMMAND_RATE',
      value: env.COMMAND_RATE,
      allowed: `unset when RECEIVERS is above 1 (RECEIVERS=${receivers}): the command lane times one receiver`,
    });
  }
  // CLIENTS and RECEIVERS within what each transport of the run can take (websocket-push: one);
  // with TRANSPORTS bad, each transport it does name is held to its limit all the same.
  const chosen =
    (v.TRANSPORTS as string[] | undefined) ?? (env.TRANSPORTS ?? '').split(',').map((s) => s.trim().toLowerCase());
  const limits = [
    {
      variable: 'CLIENTS',
      value: clients,
      most: (spec: TransportSpec) =>
        spec.traits.maxClients && { count: spec.traits.maxClients.clients, why: spec.traits.maxClients.why },
    },
    {
      variable: 'RECEIVERS',
      value: receivers,
      most: (spec: TransportSpec) =>
        spec.traits.maxReceivers && { count: spec.traits.maxReceivers.receivers, why: spec.traits.maxReceivers.why },
    },
  ];
  for (const { variable, value, most } of limits) {
    for (const spec of specs) {
      const limit = most(spec);
      if (value === undefined || limit === undefined || !chosen.includes(spec.name) || value <= limit.count) continue;
      issues.push({
        variable,
        value: env[variable],
        allowed: `at most ${limit.count} with ${spec.name} in TRANSPORTS (${limit.why})`,
      });
    }
  }
  // ITB_RECEIVERS: "host:port,host:port", one per receiver, set by npm start.
  let receiverAddresses: { host: string; controlPort: number }[] | undefined;
  const listed = env.ITB_RECEIVERS?.trim();
  if (listed) {
    receiverAddresses = listed.split(',').map((entry) => {
      const match = /^(.+):(\d{1,5})$/.exec(entry.trim());
      return { host: (match?.[1] ?? '').replace(/^\[(.*)\]$/, '$1'), controlPort: Number(match?.[2] ?? 0) };
    });
    const expected = receivers ?? DEFAULT_RECEIVERS;
    if (
      receiverAddresses.some((a) => a.host === '' || a.controlPort < 1 || a.controlPort > 65535) ||
      receiverAddresses.length !== expected
    ) {
      issues.push({
        variable: 'ITB_RECEIVERS',
        value: env.ITB_RECEIVERS,
        allowed:
          `host:port of each of the RECEIVERS (${expected}${standIn('RECEIVERS')}) receivers, comma-separated ` +
          `(npm start sets it)`,
      });
    }
  }
  const network: NetworkShaping = {
    rateBitsPerSecond: v.NETWORK_RATE as number | undefined,
    delayMs: v.NETWORK_DELAY as number | undefined,
    lossPercent: v.NETWORK_LOSS as number | undefined,
  };
  // ITB_LINK says the shaping was applied (npm start or the compose override set it): a service
  // started on its own with NETWORK_* would report a link it does not have.
  const appliedLink = env.ITB_LINK?.trim() || undefined;
  if (isShaped(network) && appliedLink === undefined && options.shapesLink !== true) {
    for (const variable of ['NETWORK_RATE', 'NETWORK_DELAY', 'NETWORK_LOSS'] as const) {
      if (v[variable] === undefined) continue;
      issues.push({
        variable,
        value: env[variable],
        allowed:
          'unset when a service is started on its own: `npm start` (or the compose override, see ' +
          'docs/clusters.md, Shaped links) shapes the link and tells the services so',
      });
    }
  }
  // A same-host socket never crosses the network the shaping applies to: its figures would pass for a shaped link's.
  const unshapeable = ((v.TRANSPORTS as string[] | undefined) ?? []).filter(
    (name) => specs.find((s) => s.name === name)?.deployment.setting.kind === 'socket',
  );
  if (isShaped(network) && unshapeable.length > 0)
    issues.push({
      variable: 'TRANSPORTS',
      value: env.TRANSPORTS,
      allowed:
        `transports a shaped link can carry: ${unshapeable.join(' and ')} ` +
        `${unshapeable.length === 1 ? 'goes' : 'go'} through a socket file on this host, ` +
        'never the network NETWORK_RATE, NETWORK_DELAY or NETWORK_LOSS shape (leave them out, or the shaping)',
    });
  const receiverHost = (v.RECEIVER_HOST as string | undefined) ?? '127.0.0.1';
  const link =
    appliedLink ??
    (isLoopbackHost(receiverHost)
      ? 'loopback, not shaped'
      : `the network to ${receiverHost}, not shaped by image-transfer-bench`);
  const ports: Record<string, number> = {};
  const socketPaths: Record<string, string> = {};
  const urls: Record<string, string | undefined> = {};
  const brokerPasswords: Record<string, string | undefined> = {};
  // A bad port variable's default stands in for it, taken first, so a port set to it is named.
  const portOwners = new Map<number, string>([
    [
      (v.CONTROL_PORT as number | undefined) ?? DEFAULT_CONTROL_PORT,
      parsedOk('CONTROL_PORT') ? 'CONTROL_PORT' : "CONTROL_PORT's default",
    ],
  ]);
  for (const {
    deployment: { setting },
  } of specs) {
    if (setting.kind !== 'port' || parsedOk(setting.envVar)) continue;
    for (let offset = 0; offset <= (setting.nextPorts ?? 0); offset++)
      portOwners.set(setting.defaultPort + offset, `${setting.envVar}'s default${offset === 0 ? '' : ` + ${offset}`}`);
  }
  for (const {
    name,
    deployment: { setting },
  } of specs) {
    if (!parsedOk(setting.envVar)) continue;
    if (setting.kind === 'url') {
      urls[name] = v[setting.envVar] as string | undefined;
      brokerPasswords[name] = passwordsByUrlVar.get(setting.envVar);
      continue;
    }
    if (setting.kind === 'socket') {
      socketPaths[name] = socketPathIn(v[setting.envVar] as string, setting.fileName);
      continue;
    }
    const port = v[setting.envVar] as number;
    ports[name] = port;
    // The ports after it that the transport binds too (zeromq-pubsub's acks) are taken as well.
    const taken = Array.from({ length: 1 + (setting.nextPorts ?? 0) }, (_, offset) => port + offset);
    const clash = taken.find((p) => portOwners.has(p));
    if (clash !== undefined) {
      const owner = portOwners.get(clash)!;
      const which =
        clash === port
          ? `${owner} is ${port} too`
          : `it binds ${setting.envVar} + ${clash - port} as well, ${clash}, and ${owner} is ${clash}`;
      issues.push({
        variable: setting.envVar,
        value: String(port),
        allowed: `a port no other variable uses (${which})`,
      });
    } else {
      for (const p of taken) portOwners.set(p, p === port ? setting.envVar : `${setting.envVar} + ${p - port}`);
    }
  }
  if (issues.length > 0) return { ok: false, issues };
  return {
    ok: true,
    config: Object.freeze({
      imageCount: v.IMAGE_COUNT as number,
      durationMs: v.DURATION as number | undefined,
      imageSizeBytes,
      imagePath: v.IMAGE_PATH as string | undefined,
      transports: Object.freeze([...(v.TRANSPORTS as string[])]),
      window: v.WINDOW as number,
      ratePerSecond: v.RATE as number | undefined,
      commandRatePerSecond: v.COMMAND_RATE as number | undefined,
      deadline:
        v.RATE === undefined
          ? undefined
          : Object.freeze({
              deadlineMs: (v.DEADLINE_MS as number | undefined) ?? 1000 / (v.RATE as number),
              allowedLateShare:
                ((v.DEADLINE_MISS_PERCENT as number | undefined) ?? DEFAULT_DEADLINE_MISS_PERCENT) / 100,
            }),
      commandSizeBytes: v.COMMAND_SIZE as number,
      clients: v.CLIENTS as number,
      receivers: v.RECEIVERS as number,
      receiverAddresses: receiverAddresses === undefined ? undefined : Object.freeze(receiverAddresses),
      network: Object.freeze(network),
      link,
      warmup: v.WARMUP as number | 'auto',
      warmupMinMs: v.WARMUP_MIN_MS as number,
      warmupMaxMs: v.WARMUP_MAX_MS as number,
      repeat: v.REPEAT as number,
      verify: v.VERIFY as boolean,
      receiverHost,
      bindHost: (v.BIND_HOST as string | undefined) ?? '127.0.0.1',
      controlPort: v.CONTROL_PORT as number,
      ports: Object.freeze(ports),
      socketPaths: Object.freeze(socketPaths),
      urls: Object.freeze(urls),
      brokerPasswords: Object.freeze(brokerPasswords),
      outputDir: (v.OUTPUT_DIR as string | undefined) ?? './output',
      logLevel: v.LOG_LEVEL as Config['logLevel'],
      maxImageBytes,
      imageTimeoutMs: v.IMAGE_TIMEOUT_MS as number,
      connectTimeoutMs: v.CONNECT_TIMEOUT_MS as number,
      authToken: v.AUTH_TOKEN as string | undefined,
      authTokenFile: (v.AUTH_TOKEN_FILE as string | undefined) ?? DEFAULT_AUTH_TOKEN_FILE,
    }),
  };
}

/**
 * The password of the broker `urlVar` names, from <NAME>_PASSWORD or the file <NAME>_PASSWORD_FILE
 * names (its trailing newlines dropped, as the official images' `_FILE` variables do); pushes an
 * issue when both are set, the file cannot be read or is empty, the password has no URL to go
 * with, or the URL carries a password too (which one wins would be the library's choice).
 */
function brokerPassword(
  urlVar: string,
  v: Record<string, unknown>,
  shown: (name: string) => string | undefined,
  readSecretFile: ParseOptions['readSecretFile'],
  issues: ConfigIssue[],
): string | undefined {
  const names = passwordVariables(urlVar);
  const given = v[names.password] as string | undefined;
  const file = v[names.file] as string | undefined;
  let found = given;
  if (file !== undefined && given !== undefined) {
    issues.push({
      variable: names.file,
      value: shown(names.file),
      allowed: `unset when ${names.password} is set: the password comes from one of the two`,
    });
  } else if (file !== undefined) {
    try {
      if (readSecretFile === undefined) throw new ItbError(ErrorCode.config, 'this program reads no password file');
      found = readSecretFile(file).replace(/[\r\n]+$/, '');
      if (found === '') throw new ItbError(ErrorCode.config, 'the file is empty');
    } catch (err) {
      found = undefined;
      issues.push({
        variable: names.file,
        value: shown(names.file),
        allowed: `a readable file holding the password of the server ${urlVar} names (${errorMessage(err)})`,
      });
    }
  }
  if (found === undefined || !(urlVar in v)) return found;
  const source = given !== undefined ? names.password : names.file;
  const url = v[urlVar] as string | undefined;
  if (url === undefined) {
    issues.push({
      variable: source,
      value: shown(source),
      allowed:
        `unset while ${urlVar} is unset: it is the password of the server ${urlVar} names (a private server npm ` +
        `start runs has none)`,
    });
  } else if (urlCredentials(url).password !== undefined) {
    issues.push({
      variable: urlVar,
      value: shown(urlVar),
      allowed: `a URL without a password when ${source} is set: the password comes from one place`,
    });
  }
  return found;
}

/** The message printed for bad configuration: one line per bad variable. */
export function formatConfigIssues(issues: readonly ConfigIssue[]): string {
  const lines = issues.map(
    (i) => `  ${i.variable}=${i.value === undefined ? '(unset)' : JSON.stringify(i.value)}: expected ${i.allowed}`,
  );
  return `Invalid configuration (${issues.length} bad variable${issues.length === 1 ? '' : 's'}):\n${lines.join('\n')}`;
}
