import type { NetworkShaping } from './link.js';
import { redactUrl } from './redact.js';
import { DEFAULT_MAX_IMAGE_BYTES, DEFAULT_DEADLINE_MISS_PERCENT, DEFAULT_AUTH_TOKEN_FILE } from './bounds.js';
import type { Config, ConfigIssue, TransportSpec } from './config-types.js';
import type { Env } from './schema.js';
import { parseEachVariable } from './parsed-env.js';
import {
  checkImageRules,
  checkSendingRules,
  checkTransportLimits,
  checkWarmupRule,
  linkOf,
  receiverAddressesOf,
} from './config-rules.js';
import { brokerPassword, transportSettings, type TransportSettings } from './transport-settings.js';

// What the config is made of, from the files it is cut into (by concern: descriptors, bounds, schema), for callers
// that import it from here.
export * from './config-types.js';
export * from './bounds.js';
export { brokerVariables, configVariables, passwordVariables, variableDefaults, type Env } from './schema.js';

// Configuration comes only from environment variables. One zod schema holds every variable, its
// default and what it allows; parsing collects every bad variable at once (parsed-env.ts), then
// cross-variable rules (config-rules.ts) and the transports' settings (transport-settings.ts) run
// over the parsed values. The result is frozen and passed down: nothing deeper reads process.env.

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

/** Outcome of {@link parseConfig}: a config, or every issue found. */
export type ConfigResult = { ok: true; config: Readonly<Config> } | { ok: false; issues: ConfigIssue[] };

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
  const parsed = parseEachVariable(env, specs);
  const passwordsByUrlVar = new Map(
    parsed.urlVars.map((envVar) => [envVar, brokerPassword(parsed, envVar, options.readSecretFile)] as const),
  );
  checkImageRules(parsed);
  checkWarmupRule(parsed);
  checkSendingRules(parsed);
  checkTransportLimits(parsed);
  const receiverAddresses = receiverAddressesOf(parsed);
  const { network, link } = linkOf(parsed, options.shapesLink === true);
  const settings = transportSettings(parsed, passwordsByUrlVar);
  if (parsed.issues.length > 0) return { ok: false, issues: parsed.issues };
  return { ok: true, config: frozenConfig(parsed.values, { receiverAddresses, network, link, ...settings }) };
}

/** What the steps of parseConfig() worked out beside the variables' own values. */
interface DerivedSettings extends TransportSettings {
  receiverAddresses: { host: string; controlPort: number }[] | undefined;
  network: NetworkShaping;
  link: string;
}

/** The Config of variables that all parsed and passed every rule, frozen with each of its objects. */
function frozenConfig(values: Record<string, unknown>, derived: DerivedSettings): Readonly<Config> {
  const { receiverAddresses, network, link, ports, socketPaths, urls, brokerPasswords } = derived;
  return Object.freeze({
    imageCount: values.IMAGE_COUNT as number,
    durationMs: values.DURATION as number | undefined,
    imageSizeBytes: values.IMAGE_SIZE as number | undefined,
    imagePath: values.IMAGE_PATH as string | undefined,
    transports: Object.freeze([...(values.TRANSPORTS as string[])]),
    window: values.WINDOW as number,
    ratePerSecond: values.RATE as number | undefined,
    commandRatePerSecond: values.COMMAND_RATE as number | undefined,
    deadline:
      values.RATE === undefined
        ? undefined
        : Object.freeze({
            deadlineMs: (values.DEADLINE_MS as number | undefined) ?? 1000 / (values.RATE as number),
            allowedLateShare:
              ((values.DEADLINE_MISS_PERCENT as number | undefined) ?? DEFAULT_DEADLINE_MISS_PERCENT) / 100,
          }),
    commandSizeBytes: values.COMMAND_SIZE as number,
    clients: values.CLIENTS as number,
    receivers: values.RECEIVERS as number,
    receiverAddresses: receiverAddresses === undefined ? undefined : Object.freeze(receiverAddresses),
    network: Object.freeze(network),
    link,
    warmup: values.WARMUP as number | 'auto',
    warmupMinMs: values.WARMUP_MIN_MS as number,
    warmupMaxMs: values.WARMUP_MAX_MS as number,
    repeat: values.REPEAT as number,
    verify: values.VERIFY as boolean,
    profile: values.PROFILE as boolean,
    receiverHost: (values.RECEIVER_HOST as string | undefined) ?? '127.0.0.1',
    bindHost: (values.BIND_HOST as string | undefined) ?? '127.0.0.1',
    controlPort: values.CONTROL_PORT as number,
    ports: Object.freeze(ports),
    socketPaths: Object.freeze(socketPaths),
    urls: Object.freeze(urls),
    brokerPasswords: Object.freeze(brokerPasswords),
    outputDir: (values.OUTPUT_DIR as string | undefined) ?? './output',
    logLevel: values.LOG_LEVEL as Config['logLevel'],
    maxImageBytes: (values.MAX_IMAGE_SIZE as number | undefined) ?? DEFAULT_MAX_IMAGE_BYTES,
    imageTimeoutMs: values.IMAGE_TIMEOUT_MS as number,
    connectTimeoutMs: values.CONNECT_TIMEOUT_MS as number,
    authToken: values.AUTH_TOKEN as string | undefined,
    authTokenFile: (values.AUTH_TOKEN_FILE as string | undefined) ?? DEFAULT_AUTH_TOKEN_FILE,
  });
}

/** The message printed for bad configuration: one line per bad variable. */
export function formatConfigIssues(issues: readonly ConfigIssue[]): string {
  const lines = issues.map(
    (i) => `  ${i.variable}=${i.value === undefined ? '(unset)' : JSON.stringify(i.value)}: expected ${i.allowed}`,
  );
  return `Invalid configuration (${issues.length} bad variable${issues.length === 1 ? '' : 's'}):\n${lines.join('\n')}`;
}
