import type { Redis } from 'ioredis';
import { ErrorCode, errorMessage, ItbError } from '../../core/errors.js';
import {
  ackSeq,
  type CeilingConnectOptions,
  type CeilingReceiveOptions,
  type CeilingReceiver,
  type CeilingSender,
} from '../ceiling-contract.js';
import { closeClient, dropKeys, listPopper, newRedisClient, openTwo } from './redis.js';

// What the Redis ceiling pairs (redis: streams, redis-list, redis-pubsub, redis-kv) share, as their
// transports share services/transports/kit/redis.ts (whose ioredis connection, right pops and key
// deletion they take too): the run's key names, the whole sender side but its one write (a writer
// connection, and an ack loop popping the 12-byte acks the receiver LPUSHes onto the ack list),
// and the two receivers' frames: one that polls in a loop, one that subscribes.

/** Acks taken per pop: more than any window leaves waiting. */
const ACK_POP_COUNT = 1024;

/** The keys of one run: images go through `frames` (a stream, a list or a channel), acks come back on `acks`. */
export interface CeilingKeys {
  frames: string;
  acks: string;
}

/** The keys of the run named `channel`. */
export function ceilingKeys(channel: string): CeilingKeys {
  return { frames: `${channel}:frames`, acks: `${channel}:acks` };
}

/** The broker URL, or an error naming the pair that needs one. */
export function brokerOf(url: string | undefined, transport: string): string {
  if (url === undefined || url === '')
    throw new ItbError(ErrorCode.config, `the ${transport} ceiling needs a Redis server (brokerUrl)`);
  return url;
}

/** One ready ioredis connection, as the transports make them (newRedisClient): a dropped link is a failure. */
export async function openRedis(url: string): Promise<Redis> {
  const client = newRedisClient(url);
  // Without a listener ioredis prints every error; the failures reach the pairs through 'close' and rejected commands.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    client.disconnect();
    throw err;
  }
  return client;
}

/** Calls `onFailure` once when any of `clients` closes while `closing()` is false. */
export function failOnClose(
  clients: readonly Redis[],
  onFailure: (reason: string) => void,
  closing: () => boolean,
): void {
  let failed = false;
  for (const client of clients) {
    client.once('close', () => {
      if (closing() || failed) return;
      failed = true;
      onFailure('a Redis connection closed');
    });
  }
}

/**
 * The sender's ack loop on a connection of its own (it blocks): pops the acks of `key` and hands
 * each seq to onAck until the connection is closed; a failed pop otherwise is the link's failure.
 */
export async function popAcks(
  reader: Redis,
  key: string,
  options: Pick<CeilingConnectOptions, 'onAck' | 'onFailure'>,
  closing: () => boolean,
): Promise<void> {
  const pop = listPopper(reader, () => {});
  while (!closing()) {
    let acks: Buffer[];
    try {
      acks = await pop(key, 0, ACK_POP_COUNT);
    } catch (err) {
      if (!closing()) options.onFailure(`popping acks failed: ${errorMessage(err)}`);
      return;
    }
    for (const ack of acks) options.onAck(ackSeq(ack));
  }
}

/** Opens two connections of the broker the pair of `transport` was given, together; closes both if either fails. */
async function openRedisPair(brokerUrl: string | undefined, transport: string): Promise<[Redis, Redis]> {
  const url = brokerOf(brokerUrl, transport);
  return openTwo(() => openRedis(url));
}

/**
 * A Redis pair's sender: a writer, and a reader that does nothing but pop acks. `writer(client)`
 * is made once and writes one image's command without waiting for its reply (ioredis copies the
 * command into its write buffer; the driver never has more than a window of them unacknowledged).
 */
export async function connectRedisSender(
  options: CeilingConnectOptions,
  transport: string,
  writer: (client: Redis, fail: (err: unknown) => void) => (header: Buffer, image: Buffer) => void,
): Promise<CeilingSender> {
  const [client, ackReader] = await openRedisPair(options.brokerUrl, transport);
  let closing = false;
  const fail = (reason: string): void => {
    if (!closing) options.onFailure(`${transport}: ${reason}`);
  };
  failOnClose([client, ackReader], fail, () => closing);
  const acking = popAcks(
    ackReader,
    ceilingKeys(options.channel).acks,
    { onAck: options.onAck, onFailure: fail },
    () => closing,
  );
  const write = writer(client, (err) => fail(`write failed: ${errorMessage(err)}`));
  return {
    send(_seq, header, image) {
      write(header, image);
    },
    async close() {
      closing = true;
      await Promise.all([closeClient(client), closeClient(ackReader)]);
      await acking;
    },
  };
}

/**
 * Errors of the receivers' commands nobody waits on (ack pushes, XDEL): the sender sees what follows (no ack) and says
 * so.
 */
export function ignoreUnwaited(): void {}

/**
 * A receiver that polls: a reader that blocks in a pop or read, and a keeper that only clears the keys at the start
 * (what an earlier run left under the same channel would mix with this one's) and at the end. `reads` is made once with
 * the reader and the keys, and returns one turn of the loop (a blocking pop or read and what follows it), run until
 * close() drops the reader's connection, which ends a blocked turn at once.
 */
export async function receivePolling(
  options: Pick<CeilingReceiveOptions, 'brokerUrl' | 'channel' | 'port'>,
  transport: string,
  reads: (reader: Redis, keys: CeilingKeys) => () => Promise<void>,
): Promise<CeilingReceiver> {
  const keys = ceilingKeys(options.channel);
  const [reader, keeper] = await openRedisPair(options.brokerUrl, transport);
  try {
    await keeper.del(keys.frames, keys.acks);
  } catch (err) {
    await Promise.all([closeClient(reader), closeClient(keeper)]);
    throw err;
  }
  const turn = reads(reader, keys);
  let closing = false;
  const reading = (async () => {
    while (!closing) await turn();
  })().catch(() => undefined);
  return {
    port: options.port,
    async close() {
      closing = true;
      await closeClient(reader);
      await reading;
      await dropKeys(keeper, [keys.frames, keys.acks]);
      await closeClient(keeper);
    },
  };
}

/**
 * A receiver that subscribes: `listens` is given the two connections (a subscriber, and one for commands) and the keys
 * to set up its message handler, then the other connection clears the keys and the subscriber subscribes to `channel`;
 * resolves on Redis's reply: from then on every message published reaches it. Its close drops the subscriber's
 * connection (its subscription with it), then the keys and the other connection; both are closed if opening fails.
 */
export async function receiveSubscribed(
  options: Pick<CeilingReceiveOptions, 'brokerUrl' | 'channel' | 'port'>,
  transport: string,
  channel: string,
  listens: (subscriber: Redis, other: Redis, keys: CeilingKeys) => void,
): Promise<CeilingReceiver> {
  const keys = ceilingKeys(options.channel);
  const [subscriber, other] = await openRedisPair(options.brokerUrl, transport);
  listens(subscriber, other, keys);
  try {
    await other.del(keys.frames, keys.acks);
    await subscriber.subscribe(channel);
  } catch (err) {
    await Promise.all([closeClient(subscriber), closeClient(other)]);
    throw err;
  }
  return {
    port: options.port,
    async close() {
      await closeClient(subscriber);
      await dropKeys(other, [keys.frames, keys.acks]);
      await closeClient(other);
    },
  };
}
