import { MIN_GENERATED_PNG_BYTES } from '../model/png.js';
import { formatSize } from './size.js';
import { isLoopbackHost, isShaped, type NetworkShaping } from './link.js';
import { DEFAULT_MAX_IMAGE_BYTES, DEFAULT_IMAGE_COUNT, DEFAULT_RECEIVERS, DEFAULT_WARMUP_MAX_MS } from './bounds.js';
import type { TransportSpec } from './config-types.js';
import { isSet, parsedOk, standIn, type ParsedEnv } from './parsed-env.js';

// The rules that relate two or more variables, one step of parseConfig() per concern. Each runs on whichever values
// did parse and pushes its issues onto the ParsedEnv, in the order the error message lists them.

/** IMAGE_SIZE within MAX_IMAGE_SIZE and above the smallest PNG, and never beside IMAGE_PATH. */
export function checkImageRules(parsed: ParsedEnv): void {
  const { env, values, issues } = parsed;
  const maxImageBytes = (values.MAX_IMAGE_SIZE as number | undefined) ?? DEFAULT_MAX_IMAGE_BYTES;
  const imageSizeBytes = values.IMAGE_SIZE as number | undefined;
  if (imageSizeBytes !== undefined) {
    if (imageSizeBytes > maxImageBytes) {
      issues.push({
        variable: 'IMAGE_SIZE',
        value: env.IMAGE_SIZE,
        allowed:
          `at most MAX_IMAGE_SIZE, ${maxImageBytes} bytes ` +
          `(${formatSize(maxImageBytes)}${standIn(parsed, 'MAX_IMAGE_SIZE')})`,
      });
    } else if (imageSizeBytes < MIN_GENERATED_PNG_BYTES) {
      issues.push({
        variable: 'IMAGE_SIZE',
        value: env.IMAGE_SIZE,
        allowed: `at least ${MIN_GENERATED_PNG_BYTES} bytes, the smallest valid PNG it can generate`,
      });
    }
  }
  if (isSet(parsed, 'IMAGE_SIZE') && isSet(parsed, 'IMAGE_PATH')) {
    issues.push({
      variable: 'IMAGE_PATH',
      value: env.IMAGE_PATH,
      allowed: 'unset when IMAGE_SIZE is set: the image is either a file or generated at a size',
    });
  }
}

/** WARMUP_MIN_MS at most WARMUP_MAX_MS. */
export function checkWarmupRule(parsed: ParsedEnv): void {
  const { env, values, issues } = parsed;
  const warmupMaxMs = (values.WARMUP_MAX_MS as number | undefined) ?? DEFAULT_WARMUP_MAX_MS;
  if (parsedOk(parsed, 'WARMUP_MIN_MS') && (values.WARMUP_MIN_MS as number) > warmupMaxMs) {
    issues.push({
      variable: 'WARMUP_MIN_MS',
      value: env.WARMUP_MIN_MS,
      allowed: `at most WARMUP_MAX_MS (${warmupMaxMs}${standIn(parsed, 'WARMUP_MAX_MS')})`,
    });
  }
}

/**
 * How a section sends and ends: DURATION or IMAGE_COUNT (never both), CLIENTS within the count, a deadline only under
 * RATE, the command lane with one receiver.
 */
export function checkSendingRules(parsed: ParsedEnv): void {
  const { env, values, issues } = parsed;
  // DURATION or IMAGE_COUNT, never both: which one ends a section would be a guess. Judged on what
  // was set, so a DURATION without units is reported together with the clash, not instead of it.
  const byDuration = isSet(parsed, 'DURATION');
  if (byDuration && isSet(parsed, 'IMAGE_COUNT')) {
    issues.push({
      variable: 'IMAGE_COUNT',
      value: env.IMAGE_COUNT,
      allowed:
        `unset when DURATION is set (DURATION=${JSON.stringify(env.DURATION)}): a section runs either IMAGE_COUNT ` +
        `images or for DURATION, so set one of the two`,
    });
  }
  const clients = values.CLIENTS as number | undefined;
  const receivers = values.RECEIVERS as number | undefined;
  // Under DURATION the count is not what ends a section, so it does not bound CLIENTS.
  const imageCount = (values.IMAGE_COUNT as number | undefined) ?? DEFAULT_IMAGE_COUNT;
  if (!byDuration && clients !== undefined && clients > 1 && clients > imageCount) {
    issues.push({
      variable: 'CLIENTS',
      value: env.CLIENTS,
      allowed:
        `at most IMAGE_COUNT (${imageCount}${standIn(parsed, 'IMAGE_COUNT')}): every client sends at least one ` +
        `recorded image`,
    });
  }
  // A deadline is a frame's age from its due time: without RATE no frame has one.
  for (const variable of ['DEADLINE_MS', 'DEADLINE_MISS_PERCENT'] as const) {
    if (isSet(parsed, variable) && !isSet(parsed, 'RATE'))
      issues.push({
        variable,
        value: env[variable],
        allowed: "unset when RATE is unset: a deadline counts from each frame's due time, which only RATE gives",
      });
  }
  // The command lane times one transmitter-receiver pair: its one-way times are one receiver's, its acks one link's.
  if (isSet(parsed, 'COMMAND_RATE') && receivers !== undefined && receivers > 1) {
    issues.push({
      variable: 'COMMAND_RATE',
      value: env.COMMAND_RATE,
      allowed: `unset when RECEIVERS is above 1 (RECEIVERS=${receivers}): the command lane times one receiver`,
    });
  }
}

/**
 * CLIENTS and RECEIVERS within what each transport of the run can take (websocket-push: one); with TRANSPORTS bad,
 * each transport it does name is held to its limit all the same.
 */
export function checkTransportLimits(parsed: ParsedEnv): void {
  const { env, values, issues, specs } = parsed;
  const chosen =
    (values.TRANSPORTS as string[] | undefined) ?? (env.TRANSPORTS ?? '').split(',').map((s) => s.trim().toLowerCase());
  const limits = [
    {
      variable: 'CLIENTS',
      value: values.CLIENTS as number | undefined,
      most: (spec: TransportSpec) =>
        spec.traits.maxClients && { count: spec.traits.maxClients.clients, why: spec.traits.maxClients.why },
    },
    {
      variable: 'RECEIVERS',
      value: values.RECEIVERS as number | undefined,
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
}

/** ITB_RECEIVERS ("host:port,host:port", one per receiver, set by npm start) read and checked; undefined: unset. */
export function receiverAddressesOf(parsed: ParsedEnv): { host: string; controlPort: number }[] | undefined {
  const { env, values, issues } = parsed;
  const listed = env.ITB_RECEIVERS?.trim();
  if (!listed) return undefined;
  const receiverAddresses = listed.split(',').map((entry) => {
    const match = /^(.+):(\d{1,5})$/.exec(entry.trim());
    return { host: (match?.[1] ?? '').replace(/^\[(.*)\]$/, '$1'), controlPort: Number(match?.[2] ?? 0) };
  });
  const expected = (values.RECEIVERS as number | undefined) ?? DEFAULT_RECEIVERS;
  if (
    receiverAddresses.some((a) => a.host === '' || a.controlPort < 1 || a.controlPort > 65535) ||
    receiverAddresses.length !== expected
  ) {
    issues.push({
      variable: 'ITB_RECEIVERS',
      value: env.ITB_RECEIVERS,
      allowed:
        `host:port of each of the RECEIVERS (${expected}${standIn(parsed, 'RECEIVERS')}) receivers, comma-separated ` +
        `(npm start sets it)`,
    });
  }
  return receiverAddresses;
}

/**
 * NETWORK_* and the link they give, checked: only where the shaping is applied (`shapesLink`, or ITB_LINK says so),
 * and never with a transport that goes through a socket file. `link` is the link in words, for every report.
 */
export function linkOf(parsed: ParsedEnv, shapesLink: boolean): { network: NetworkShaping; link: string } {
  const { env, values, issues, specs } = parsed;
  const network: NetworkShaping = {
    rateBitsPerSecond: values.NETWORK_RATE as number | undefined,
    delayMs: values.NETWORK_DELAY as number | undefined,
    lossPercent: values.NETWORK_LOSS as number | undefined,
  };
  // ITB_LINK says the shaping was applied (npm start or the compose override set it): a service
  // started on its own with NETWORK_* would report a link it does not have.
  const appliedLink = env.ITB_LINK?.trim() || undefined;
  if (isShaped(network) && appliedLink === undefined && !shapesLink) {
    for (const variable of ['NETWORK_RATE', 'NETWORK_DELAY', 'NETWORK_LOSS'] as const) {
      if (values[variable] === undefined) continue;
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
  const unshapeable = ((values.TRANSPORTS as string[] | undefined) ?? []).filter(
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
  const receiverHost = (values.RECEIVER_HOST as string | undefined) ?? '127.0.0.1';
  const link =
    appliedLink ??
    (isLoopbackHost(receiverHost)
      ? 'loopback, not shaped'
      : `the network to ${receiverHost}, not shaped by image-transfer-bench`);
  return { network, link };
}
