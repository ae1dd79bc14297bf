import type { z } from 'zod';
import { errorMessage, ErrorCode, ItbError } from '../errors.js';
import { MIN_GENERATED_PNG_BYTES } from '../model/png.js';
import { formatSize } from './size.js';
import { isLoopbackHost, isShaped, type NetworkShaping } from './link.js';
import { REDACTED, redactUrl, urlCredentials } from './redact.js';
import { socketPathIn } from './socket-dir.js';

import {
  DEFAULT_MAX_IMAGE_BYTES,
  DEFAULT_IMAGE_COUNT,
  DEFAULT_DEADLINE_MISS_PERCENT,
  DEFAULT_RECEIVERS,
  DEFAULT_CONTROL_PORT,
  DEFAULT_WARMUP_MAX_MS,
  DEFAULT_AUTH_TOKEN_FILE,
} from './bounds.js';
import type { Config, TransportSpec } from './config-types.js';
import { passwordVariables, schemaFor, urlVariables, type Env } from './schema.js';

// What the config is made of, from the files it is cut into (by concern: descriptors, bounds, schema), for callers
// that import it from here.
export * from './config-types.js';
export * from './bounds.js';
export { brokerVariables, configVariables, passwordVariables, variableDefaults, type Env } from './schema.js';

// Configuration comes only from environment variables. One zod schema holds every variable, its
// default and what it allows; parsing collects every bad variable at once, then cross-variable
// rules run over the parsed values. The result is frozen and passed down: nothing deeper reads
// process.env.

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

/** One bad variable: its name, the value found, and what is allowed. */
export interface ConfigIssue {
  variable: string;
  value: string | undefined;
  allowed: string;
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
