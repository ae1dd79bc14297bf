import type { Redis } from 'ioredis';
import { settlesWithin } from '../../services/shared/waits.js';
import { ackSeq, type CeilingConnectOptions, type CeilingReceiveOptions, type CeilingSender } from './contract.js';

// What the Redis ceiling pairs (redis: streams, redis-list, redis-pubsub) share, as their
// transports share services/transports/kit/redis.ts: opening and closing an ioredis connection,
// the run's key names, right pops with BLMPOP (BRPOP on Redis < 7.0), and the whole sender side
// but its one write: a writer connection, and an ack loop popping the 12-byte acks the receiver
// LPUSHes onto the ack list.

/** Acks taken per pop: more than any window leaves waiting. */
const ACK_POP_COUNT = 1024;
const CLOSE_TIMEOUT_MS = 2000;
const DROP_KEYS_TIMEOUT_MS = 500;

/**
 * The keys of one run: images go through `frames` (a stream, a list or a channel), acks come back on the `acks` list.
 */
export function ceilingKeys(channel: string): { frames: string; acks: string } {
  return { frames: `${channel}:frames`, acks: `${channel}:acks` };
}

/** The broker URL, or an error naming the pair that needs one. */
export function brokerOf(url: string | undefined, transport: string): string {
  if (url === undefined || url === '') throw new Error(`the ${transport} ceiling needs a Redis server (brokerUrl)`);
  return url;
}

/** One ready ioredis connection that never reconnects or queues by itself: a dropped link is a failure. */
export async function openRedis(url: string): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, {
    lazyConnect: true,
    // RESP2, as the transports: pub/sub messages arrive as ordinary replies.
    protocol: 2,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
  });
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

/** Disconnects at once (a blocked pop included) and waits, bounded, until the socket is gone. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
  client.disconnect();
  await settlesWithin(ended, CLOSE_TIMEOUT_MS);
}

/** Deletes the run's keys, if the connection is up, within a short bound: Redis may be why the run is closing. */
export async function dropKeys(client: Redis, keys: { frames: string; acks: string }): Promise<void> {
  if (client.status === 'ready') await settlesWithin(client.del(keys.frames, keys.acks), DROP_KEYS_TIMEOUT_MS);
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

/** Right pops of up to `count` items of `key`, blocking until one is there; [] on a null reply. */
export type RightPop = (key: string, count: number) => Promise<Buffer[]>;

/**
 * Right pops on `client`: BLMPOP (every item waiting in one round trip), or one BRPOP per item on a server without it
 * (Redis < 7.0).
 */
export function rightPopper(client: Redis): RightPop {
  let many = true;
  return async (key, count) => {
    if (many) {
      try {
        const reply = await client.blmpopBuffer(0, 1, key, 'RIGHT', 'COUNT', count);
        return reply === null ? [] : reply[1];
      } catch (err) {
        if (!/unknown command/i.test(err instanceof Error ? err.message : String(err))) throw err;
        many = false;
      }
    }
    const reply = await client.brpopBuffer(key, 0);
    return reply === null ? [] : [reply[1]];
  };
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
  const pop = rightPopper(reader);
  while (!closing()) {
    let acks: Buffer[];
    try {
      acks = await pop(key, ACK_POP_COUNT);
    } catch (err) {
      if (!closing()) options.onFailure(`popping acks failed: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    for (const ack of acks) options.onAck(ackSeq(ack));
  }
}

/** Opens `count` connections together; closes the opened ones if any fails. */
export async function openRedisMany(url: string, count: number): Promise<Redis[]> {
  const opened = await Promise.allSettled(Array.from({ length: count }, () => openRedis(url)));
  const failed = opened.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed === undefined) return opened.map((r) => (r as PromiseFulfilledResult<Redis>).value);
  await Promise.all(opened.map((r) => (r.status === 'fulfilled' ? closeRedis(r.value) : undefined)));
  throw failed.reason;
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
  const [client, ackReader] = (await openRedisMany(brokerOf(options.brokerUrl, transport), 2)) as [Redis, Redis];
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
  const write = writer(client, (err) => fail(`write failed: ${err instanceof Error ? err.message : String(err)}`));
  return {
    send(_seq, header, image) {
      write(header, image);
    },
    async close() {
      closing = true;
      await Promise.all([closeRedis(client), closeRedis(ackReader)]);
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
 * A polling receiver's two connections (a reader that blocks in a pop or read, and a keeper that
 * only clears the keys at the start and the end) and its keys, cleared first: what an earlier run
 * left under the same channel would mix with this one's. Closes both if the clearing fails.
 */
export async function openPollingReceiver(
  options: Pick<CeilingReceiveOptions, 'brokerUrl' | 'channel'>,
  transport: string,
): Promise<{ reader: Redis; keeper: Redis; keys: { frames: string; acks: string } }> {
  const keys = ceilingKeys(options.channel);
  const [reader, keeper] = (await openRedisMany(brokerOf(options.brokerUrl, transport), 2)) as [Redis, Redis];
  try {
    await keeper.del(keys.frames, keys.acks);
  } catch (err) {
    await Promise.all([closeRedis(reader), closeRedis(keeper)]);
    throw err;
  }
  return { reader, keeper, keys };
}

/**
 * A polling receiver's close: its reader's connection dropped (which ends a blocked pop or read, and so its loop), then
 * its keys and its other connection.
 */
export async function closePollingReceiver(
  reader: Redis,
  reading: Promise<unknown>,
  keeper: Redis,
  keys: { frames: string; acks: string },
): Promise<void> {
  await closeRedis(reader);
  await reading;
  await dropKeys(keeper, keys);
  await closeRedis(keeper);
}
