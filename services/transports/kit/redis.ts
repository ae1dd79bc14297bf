import { createHash } from 'node:crypto';
import type { Redis, RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { SectionCredential } from '../../core/wire/auth.js';
import type { TransportSetting } from '../../core/config/config.js';
import type { BrokerReading } from '../../core/model/cost.js';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { decodeAck, type Ack } from '../../core/wire/frame.js';
import { answersWith, startLocalProcess } from '../../shared/local-server.js';
import { drainOrClose, settlesWithin } from '../../shared/waits.js';
import type { LocalServer, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { brokerRequirement, type BrokerAddress } from './broker.js';
import { connectWithin } from './connect.js';
import { lazyLibrary } from './library.js';
import { LinkGuard } from './link-guard.js';
import { SendQueue } from './send-queue.js';

// What the Redis transports (redis: streams, redis-list, redis-pubsub, redis-kv) and their ceiling
// pairs share: how a side reaches Redis (one ioredis descriptor) and lets go of it, the
// per-section key names, the transmitter's link (writer, ack list popped, backpressure), the
// broker's readings, and the private redis-server `npm start` and the tests run; their receivers'
// parts are in redis-receiver.ts. The transports share REDIS_URL and one server; each file keeps
// only how its images travel.

/** ioredis, loaded when a Redis transport is first used (library.ts). */
const ioredis = lazyLibrary<typeof import('ioredis')>('ioredis');

/** REDIS_URL: the one setting of every Redis transport, so they all go through the same server. */
export const redisUrlSetting: TransportSetting = {
  kind: 'url',
  envVar: 'REDIS_URL',
  schemes: ['redis', 'rediss'],
  example: 'redis://127.0.0.1:6379',
};

/**
 * The keys of one section: images go through `frames` (a stream, a list or a channel), acks come back on the `acks`
 * list.
 */
export interface SectionKeys {
  frames: string;
  acks: string;
}

/** What every key of a section starts with: its id and a digest of its key (the key itself stays off the server). */
export function sectionKeyPrefix(credential: SectionCredential, receiverIndex = 0): string {
  const tag = createHash('sha256').update(credential.key).digest('base64url').slice(0, 22);
  // RECEIVERS > 1: each receiver has keys of its own (point-to-point: a copy each); the first keeps the plain name.
  return `itb:${credential.sectionId}:${tag}${receiverIndex === 0 ? '' : `:r${receiverIndex}`}`;
}

/** Keys named after the section's credential, so a side reads only the open section's; exported for tests. */
export function sectionKeys(credential: SectionCredential, receiverIndex = 0): SectionKeys {
  const prefix = sectionKeyPrefix(credential, receiverIndex);
  return { frames: `${prefix}:frames`, acks: `${prefix}:acks` };
}

/** Block time of the ack pops: short, so the loop re-checks its link; close() does not wait for it. */
const ACK_BLOCK_SECONDS = 1;
/** Acks taken per BLMPOP: as many as any window leaves waiting. */
const ACK_POP_COUNT = 1024;
/** The receiver has no configured bound, so it gets this one for reaching Redis. */
export const RECEIVER_CONNECT_TIMEOUT_MS = 5000;
const CLOSE_TIMEOUT_MS = 2000;
/** Bound on one INFO (or CONFIG GET) round trip. */
export const INFO_TIMEOUT_MS = 2000;
/** Bound on deleting a section's keys: Redis may be why the section or the listener is closing. */
const DROP_KEYS_TIMEOUT_MS = 500;

/**
 * Redis settings that let one image of the largest MAX_IMAGE_SIZE through: a command carries the
 * image as one bulk string (proto-max-bulk-len, 512 MB by default) inside one command
 * (client-query-buffer-limit, 1 GB by default). docker-compose.yml passes the same arguments.
 */
export const REDIS_IMAGE_LIMIT_ARGS: readonly string[] = [
  '--proto-max-bulk-len',
  '2gb',
  '--client-query-buffer-limit',
  '4gb',
];

/** The Redis server of REDIS_URL (and REDIS_PASSWORD), or a clear error naming the transport when it is not set. */
export const requireBroker = brokerRequirement({
  envVar: 'REDIS_URL',
  broker: 'a Redis server',
  example: 'redis://127.0.0.1:6379',
});

/**
 * A new ioredis client of `url`, not connected yet (lazyConnect), as every Redis connection of the suite is made, the
 * transports' and the ceiling pairs' alike: it never reconnects, queues a command while offline, or resends one by
 * itself, so a connection that drops mid-run is a failure, not something to paper over. `options` adds what only some
 * connections take (credentials, a connect bound).
 */
export function newRedisClient(url: string, options: RedisOptions = {}): Redis {
  return new (ioredis().Redis)(url, {
    ...options,
    lazyConnect: true,
    // RESP2: replies have the nested-array shapes the transports check (stream entries),
    // pub/sub messages arrive as ordinary replies, and the handshake skips HELLO.
    protocol: 2,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
  });
}

/** Opens one ready connection to Redis within `timeoutMs`, retrying refused or failed attempts (newRedisClient). */
export function openClient(broker: BrokerAddress, timeoutMs: number): Promise<Redis> {
  return connectWithin(
    `Redis at ${broker.shown}`,
    timeoutMs,
    async (remainingMs) => {
      const client = newRedisClient(broker.url, {
        username: broker.user,
        password: broker.password,
        connectTimeout: remainingMs,
      });
      try {
        await attemptReady(client, remainingMs);
        return client;
      } catch (err) {
        await closeClient(client);
        throw err;
      }
    },
    (late) => void closeClient(late),
  );
}

/** Opens the two connections a side needs (one blocks in reads or subscribes, one writes): see openTwo. */
export function openPair(broker: BrokerAddress, timeoutMs: number): Promise<[Redis, Redis]> {
  return openTwo(() => openClient(broker, timeoutMs));
}

/** Opens two connections with `open` at once; closes both if either fails. */
export async function openTwo(open: () => Promise<Redis>): Promise<[Redis, Redis]> {
  const opened = await Promise.allSettled([open(), open()]);
  const [first, second] = opened;
  if (first?.status === 'fulfilled' && second?.status === 'fulfilled') return [first.value, second.value];
  await Promise.all(opened.map((r) => (r.status === 'fulfilled' ? closeClient(r.value) : undefined)));
  throw opened.find((r): r is PromiseRejectedResult => r.status === 'rejected')!.reason;
}

// One connect attempt: resolves on 'ready'; rejects with the socket's own error (ECONNREFUSED...)
// rather than ioredis's generic "Connection is closed.", or on the attempt's own timer, which
// also covers a server that accepts and never answers the handshake.
function attemptReady(client: Redis, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let socketError: Error | undefined;
    const onError = (err: Error): void => {
      socketError ??= err;
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`handshake not finished in ${timeoutMs} ms`));
    }, timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      client.off('error', onError);
    };
    // A listener must stay on 'error' for the client's whole life, or ioredis prints to stderr.
    client.on('error', () => {});
    client.on('error', onError);
    client.connect().then(
      () => {
        cleanup();
        resolve();
      },
      (err: unknown) => {
        cleanup();
        reject(socketError ?? err);
      },
    );
  });
}

/** Disconnects and waits until the socket is gone (ioredis's own disconnect timer included). */
export async function closeClient(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
  client.disconnect();
  await settlesWithin(ended, CLOSE_TIMEOUT_MS);
}

/** Fails the link, naming the connection and the last error it saw, when any of `clients` closes. */
export function failLinkOnClose(guard: LinkGuard, clients: readonly (readonly [Redis, string])[]): void {
  for (const [client, role] of clients) {
    let lastError = '';
    client.on('error', (err: Error) => {
      lastError = `: ${err.message}`;
    });
    client.on('close', () => guard.failWith(`${role} connection closed${lastError}`));
  }
}

/** Pops up to `count` items from the right of a list, blocking up to `blockSeconds`; [] when none came. */
export type ListPop = (key: string, blockSeconds: number, count: number) => Promise<Buffer[]>;

/**
 * Right pops on `client`: BLMPOP hands back every item waiting in one round trip (Redis >= 7.0);
 * one BRPOP per item capped the small-image rate at a third. On an older server it falls back to
 * BRPOP for good, and calls `onFallback` once to say so.
 */
export function listPopper(client: Redis, onFallback: () => void): ListPop {
  let popMany = true;
  return async (key, blockSeconds, count) => {
    if (popMany) {
      try {
        const reply = await client.blmpopBuffer(blockSeconds, 1, key, 'RIGHT', 'COUNT', count);
        return reply === null ? [] : reply[1];
      } catch (err) {
        if (!/unknown command/i.test(errorMessage(err))) throw err;
        onFallback();
        popMany = false;
      }
    }
    const reply = await client.brpopBuffer(key, blockSeconds);
    return reply === null ? [] : [reply[1]];
  };
}

/** What the transmitter's ack loop needs. */
export interface AckLoopOptions {
  /** The connection that does nothing but pop acks. */
  reader: Redis;
  key: string;
  guard: LinkGuard;
  onAck(ack: Ack): void;
  log: Logger;
  /** Transport name and the broker as messages name it (BrokerAddress.shown), for the log. */
  transport: string;
  shownUrl: string;
}

/** Pops the section's acks and passes them on until the link ends; a failed pop fails the link. */
export async function popAcksUntilEnded(options: AckLoopOptions): Promise<void> {
  const { guard, log } = options;
  const pop = listPopper(options.reader, () =>
    log.info(
      { url: options.shownUrl },
      `${options.transport}: no BLMPOP on this server (Redis < 7.0), popping acks one at a time`,
    ),
  );
  while (!guard.ended) {
    let items: Buffer[];
    try {
      items = await pop(options.key, ACK_BLOCK_SECONDS, ACK_POP_COUNT);
    } catch (err) {
      guard.failWith(`reading acks failed: ${errorMessage(err)}`, err);
      return;
    }
    if (guard.closed) return;
    for (const item of items) {
      let ack: Ack;
      try {
        ack = decodeAck(item);
      } catch (err) {
        log.warn({ err: errorMessage(err) }, `${options.transport}: ignoring a malformed ack`);
        continue;
      }
      guard.ack(options.onAck, ack);
    }
  }
}

/** Deletes a section's keys, if the connection is up, within a short bound. */
export async function dropKeys(client: Redis, keys: readonly string[]): Promise<void> {
  if (client.status === 'ready') await settlesWithin(client.del(...keys), DROP_KEYS_TIMEOUT_MS);
}

/** Rejects with ITB_ERR_TIMEOUT when `work` takes more than INFO_TIMEOUT_MS: a reading never hangs a report. */
export async function withInfoTimeout<T>(work: Promise<T>, what = 'Redis INFO'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ItbError(ErrorCode.timeout, `${what} unanswered within ${INFO_TIMEOUT_MS} ms`)),
      INFO_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** The server's CPU totals and resident memory, from one INFO round trip. */
async function readInfo(client: Redis): Promise<BrokerReading> {
  const text = await client.info('cpu', 'memory');
  const field = (name: string): number => {
    const value = Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1]);
    if (!Number.isFinite(value)) throw new ItbError(ErrorCode.transport, `Redis INFO has no ${name}`);
    return value;
  };
  return {
    cpuUserMicros: Math.round(field('used_cpu_user') * 1e6),
    cpuSystemMicros: Math.round(field('used_cpu_sys') * 1e6),
    rssBytes: field('used_memory_rss'),
  };
}

/** The broker's reading for the cost report, within INFO_TIMEOUT_MS. */
export function readBroker(client: Redis): Promise<BrokerReading> {
  return withInfoTimeout(readInfo(client));
}

/**
 * A private redis-server on a free loopback port: no persistence, the image limits above, and
 * `extraArgs` (a test's own limits); with `password`, one that refuses clients without it (the
 * URL returned has none: the caller decides where the password goes).
 */
export async function startPrivateRedis(
  extraArgs: readonly string[] = [],
  host = '127.0.0.1',
  password?: string,
): Promise<LocalServer> {
  const server = await startLocalProcess({
    command: 'redis-server',
    // Bound to one non-loopback address (a shaped link's end), Redis would refuse every client
    // without a password (protected mode): only the two sides of this run can reach that address.
    args: (port) => [
      '--port',
      String(port),
      '--bind',
      host,
      ...(host === '127.0.0.1' ? [] : ['--protected-mode', 'no']),
      '--save',
      '',
      '--appendonly',
      'no',
      ...REDIS_IMAGE_LIMIT_ARGS,
      '--loglevel',
      'warning',
      '--logfile',
      '',
      ...(password === undefined ? [] : ['--requirepass', password]),
      ...extraArgs,
    ],
    ready: (port) =>
      password === undefined
        ? answersWith(port, '+PONG', 'PING\r\n', host)
        : answersWith(port, '+OK', `AUTH ${password}\r\n`, host),
  });
  return { url: `redis://${host}:${server.port}`, close: server.close };
}

/** The `localServer` of every Redis transport: one command, one way to start it. */
export const redisLocalServer = {
  command: 'redis-server',
  start: (host?: string): Promise<LocalServer> => startPrivateRedis([], host),
};

/**
 * The `library` and `deployment` of every Redis transport (one package, the REDIS_URL setting, compose's redis
 * service, a private redis-server): only whether `npm start` runs it by default differs.
 */
export function redisDescriptors(defaultRun: boolean): Pick<Transport, 'library' | 'deployment'> {
  return {
    library: { packages: ['ioredis'] },
    deployment: { defaultRun, setting: redisUrlSetting, composeService: 'redis', localServer: redisLocalServer },
  };
}

/** What one Redis transport's transmitter side does of its own; connectRedisLink() does the rest. */
export interface RedisLinkShape {
  /** The transport's name, for messages and logs ("redis-list"). */
  transport: string;
  /** How the link is named in its failures ("Redis list"). */
  label: string;
  /**
   * Checks made before anything is sent (a receiver is there, an image fits); throws to refuse the link. `shownUrl`
   * names the broker in messages.
   */
  check?(writer: Redis, shownUrl: string): Promise<void>;
  /**
   * Made once per link: the function that hands one frame to `writer` without waiting for the
   * reply (replies are checked on the side, failing `guard`).
   */
  writer(writer: Redis, guard: LinkGuard, shownUrl: string): (header: Buffer, payload: Buffer) => void;
}

/**
 * Connects a Redis transport's transmitter side: a writer and an ack reader, the acks popped from
 * `keys.acks`, and every frame written at once as `shape` says (ioredis copies the command into
 * its write buffer, its one copy of the image); the next frame waits only while the socket is
 * over its high-water mark.
 */
export async function connectRedisLink(
  options: TransmitterOptions,
  keys: SectionKeys,
  shape: RedisLinkShape,
): Promise<TransmitterLink> {
  const broker = requireBroker(options, shape.transport);
  const [writer, ackReader] = await openPair(broker, options.connectTimeoutMs);
  try {
    await shape.check?.(writer, broker.shown);
  } catch (err) {
    await Promise.all([closeClient(writer), closeClient(ackReader)]);
    throw err;
  }
  const guard = new LinkGuard(options.onFailure, `${shape.label} link through ${broker.shown}`);
  failLinkOnClose(guard, [
    [writer, 'writer'],
    [ackReader, 'ack reader'],
  ]);
  const ackLoop = popAcksUntilEnded({
    reader: ackReader,
    key: keys.acks,
    guard,
    onAck: options.onAck,
    log: options.log,
    transport: shape.transport,
    shownUrl: broker.shown,
  });
  const write = shape.writer(writer, guard, broker.shown);
  const queue = new SendQueue(
    (header, payload) => {
      write(header, payload);
      return writer.stream.writableNeedDrain && !writer.stream.destroyed ? drainOrClose(writer.stream) : undefined;
    },
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, async () => {
    await Promise.all([closeClient(writer), closeClient(ackReader)]);
    await ackLoop;
  });
}
