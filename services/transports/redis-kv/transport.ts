import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { encodeAck } from '../../core/wire/frame.js';
import { settlesWithin } from '../../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { BrokerReceiver } from '../kit/broker-receiver.js';
import { frameGate } from '../kit/gate.js';
import {
  closeClient,
  connectRedisLink,
  dropKeys,
  openPair,
  readBroker,
  RECEIVER_CONNECT_TIMEOUT_MS,
  redisDescriptors,
  requireBroker,
  sectionKeyPrefix,
} from '../kit/redis.js';
import { failOnClose } from '../kit/redis-receiver.js';

// The latest frame under one key, as a camera feeds a controller that wants the newest image, not
// a queue of old ones. The transmitter writes each image over the last one with HSET (field h =
// the 40-byte header, p = the image: one command, so a reader never sees one image's header with
// another's bytes) and PUBLISHes an empty signal on the section's channel in the same write. The
// receiver subscribes to the channel on a connection of its own and, on a signal, reads both
// fields with HMGET on another; signals that come while a read is out fold into one more read
// after it. It acks the seq it read, as a 12-byte item LPUSHed to the acks list (kit/redis.ts).
// So a slow reader skips frames instead of queueing them: an image overwritten before it was read
// is superseded, never delivered and never lost. At WINDOW=1 the next image waits for this one's
// ack, so nothing is superseded; at WINDOW>1 one writer's images reach the key in order, so every
// seq the receiver never read below one it read was overwritten (the trait says so, the
// transmitter settles them on the later ack, the receiver's record counts them apart from the
// lost). The last image is never overwritten: its signal comes after it, so it is always read.
// One writer per key: with CLIENTS > 1 two links would overwrite each other in no set order.
// The time an image takes includes the signal's trip and the read's round trip: that is what the
// pattern costs, and it is measured. A re-read of a seq already read (a signal whose image an
// earlier read had already taken) delivers nothing.
// PUBLISH's reply counts the subscribers that got the signal: 0 means nobody reads this section,
// and the link fails. Limits: an image is one bulk string (proto-max-bulk-len, 512 MB by default);
// a key evicted under maxmemory reads back empty, and the listener fails saying so.

const HEADER_FIELD = 'h';
const PAYLOAD_FIELD = 'p';
/** Bound on UNSUBSCRIBE at the end of a section: Redis may be why the section is closing. */
const UNSUBSCRIBE_TIMEOUT_MS = 500;

/** The keys of a redis-kv section: the latest frame, its signal channel and the acks list. */
export interface KvKeys {
  frame: string;
  signal: string;
  acks: string;
}

/** Keys named after the section's credential, like every Redis transport's; exported for tests. */
export function kvKeys(credential: TransmitterOptions['credential'], receiverIndex = 0): KvKeys {
  const prefix = sectionKeyPrefix(credential, receiverIndex);
  return { frame: `${prefix}:latest`, signal: `${prefix}:signal`, acks: `${prefix}:acks` };
}

function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const keys = kvKeys(options.credential, options.receiverIndex);
  return connectRedisLink(
    options,
    { frames: keys.frame, acks: keys.acks },
    {
      transport: 'redis-kv',
      label: 'Redis latest-frame key',
      writer(writer, guard, shownUrl) {
        const onSignalReply = (subscribers: number): void => {
          if (subscribers > 0 || guard.ended) return;
          guard.fail(
            new ItbError(
              ErrorCode.receiverUnreachable,
              `no receiver is reading this section on Redis at ${shownUrl} (PUBLISH to ${keys.signal} reached no ` +
                `subscriber: do both services have the same REDIS_URL?)`,
            ),
          );
        };
        const onError = (err: unknown): void => guard.failWith(`HSET or PUBLISH failed: ${errorMessage(err)}`, err);
        return (header, payload) => {
          // Both commands leave in one write; Redis runs them in order, so the signal follows its image.
          writer.stream.cork();
          writer.hset(keys.frame, HEADER_FIELD, header, PAYLOAD_FIELD, payload).catch(onError);
          writer.publish(keys.signal, '').then(onSignalReply, onError);
          writer.stream.uncork();
        };
      },
    },
  );
}

/** The open section, with the last seq read from its key (a re-read of it delivers nothing). */
interface OpenKey {
  keys: KvKeys;
  signal: Buffer;
  lastSeq: number;
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const broker = requireBroker(options, 'redis-kv');
  const log = options.log;
  const [subscriber, reader] = await openPair(broker, RECEIVER_CONNECT_TIMEOUT_MS);
  const gate = frameGate(options, 'redis-kv');
  const receiver = new BrokerReceiver<OpenKey>(options, {
    transport: 'redis-kv',
    server: 'Redis',
    shown: broker.shown,
  });
  failOnClose([subscriber, reader], receiver);
  // A read is out; `again`: a signal came while it was, so one more read follows it.
  let reading: Promise<void> | undefined;
  let again = false;

  const readLatest = async (): Promise<void> => {
    do {
      again = false;
      const open = receiver.section;
      if (open === undefined) return;
      let fields: (Buffer | null)[];
      try {
        fields = await reader.hmgetBuffer(open.keys.frame, HEADER_FIELD, PAYLOAD_FIELD);
      } catch (err) {
        if (!receiver.closing) log.error({ err: errorMessage(err) }, 'redis-kv: HMGET failed');
        return;
      }
      if (receiver.section !== open) return;
      const [headerBytes, payload] = fields;
      if (headerBytes == null || payload == null) {
        // A signal always follows its HSET: an empty key was removed (maxmemory eviction, a DEL).
        options.onFailure?.(
          `the latest-frame key ${open.keys.frame} on Redis at ${broker.shown} was empty after a signal (evicted ` +
            'under maxmemory, or deleted by another client)',
        );
        return;
      }
      const header = gate.header(headerBytes);
      if (header === undefined || header.seq === open.lastSeq) continue;
      open.lastSeq = header.seq;
      const ack = gate.take(header, payload);
      if (ack !== undefined)
        reader.lpush(open.keys.acks, encodeAck(ack)).catch((err: unknown) => {
          if (!receiver.closing) log.error({ err: errorMessage(err) }, 'redis-kv: sending an ack failed');
        });
    } while (again);
  };

  subscriber.on('messageBuffer', (channel: Buffer) => {
    const open = receiver.section;
    if (open === undefined || !channel.equals(open.signal)) return;
    if (reading !== undefined) {
      again = true;
      return;
    }
    reading = readLatest().finally(() => {
      reading = undefined;
    });
  });

  return receiver.listener(
    {
      async open(opening) {
        const keys = kvKeys(opening.credential, opening.receiverIndex);
        return { keys, signal: Buffer.from(keys.signal), lastSeq: -1 };
      },
      start: (open) => subscriber.subscribe(open.keys.signal).then(() => undefined),
      async end(ended) {
        if (subscriber.status === 'ready')
          await settlesWithin(subscriber.unsubscribe(ended.keys.signal), UNSUBSCRIBE_TIMEOUT_MS);
        if (reading !== undefined) await settlesWithin(reading, UNSUBSCRIBE_TIMEOUT_MS);
        await dropKeys(reader, [ended.keys.frame, ended.keys.acks]);
      },
      async close(open) {
        await closeClient(subscriber);
        // Leave nothing behind in Redis.
        if (open !== undefined) await dropKeys(reader, [open.keys.frame, open.keys.acks]);
        await closeClient(reader);
      },
    },
    { readBroker: () => readBroker(reader) },
  );
}

/** A latest-frame key in Redis (REDIS_URL): HSET + PUBLISH a signal, HMGET on it; a slow reader skips frames. */
export const redisKvTransport: Transport = {
  name: 'redis-kv',
  label: 'Redis latest-frame key',
  summary: {
    libraries: 'ioredis',
    image:
      'one key holding the latest image, `HSET` + a `PUBLISH`ed signal / `HMGET` on the signal; a slow reader ' +
      'skips images (superseded)',
    ack: 'list, `BLMPOP`',
  },
  traits: {
    commandLane: {
      unavailable:
        'a latest-frame key holds one value: a command written there would supersede the image it overwrote, ' +
        'and one written elsewhere would no longer be this transport',
    },
    baseline: false,
    supersedesImages:
      'a latest-frame key holds one image: one written over before the receiver read it is superseded (WINDOW > 1 ' +
      'only), counted apart, never lost',
    maxClients: { clients: 1, why: 'its one key takes one writer: two would overwrite each other in no set order' },
  },
  ...redisDescriptors(false),
  connect,
  listen,
};
