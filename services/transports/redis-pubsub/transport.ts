import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { FRAME_HEADER_BYTES } from '../../core/wire/frame.js';
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
  sectionKeys,
  withInfoTimeout,
  type SectionKeys,
} from '../kit/redis.js';
import { FramePairer } from '../kit/redis-receiver.js';

// Images go through a Redis pub/sub channel named after the section's credential: the
// transmitter PUBLISHes, the receiver SUBSCRIBEs on a connection of its own (in openSection, before
// the transmitter is told to connect) and takes each message from ioredis's `messageBuffer` event,
// so bytes never become strings. Acks come back as 12-byte items on a list, LPUSHed by the
// receiver and popped by the transmitter with BLMPOP, as for redis (kit/redis.ts).
// PUBLISH carries one message, so header and image travel either as one message (header + image
// concatenated: for a small image the copy costs less than a second PUBLISH; measured at 1 KB,
// window 256: 1.4x the images/s of two messages) or, from SPLIT_FROM_BYTES on, as two messages in
// a row, a 40-byte header then the image, which spares a copy of every large image on top of the
// one ioredis makes anyway (it copies every argument of a command into one write buffer; at 533 KB
// the concatenated form cost the transmitter 1.7x the CPU per image). The receiver tells
// them apart by length: a 40-byte message is a header whose image is the next message; Redis
// delivers one publisher's messages in order.
// Pub/sub never drops a single message. What it does instead: Redis disconnects a subscriber whose
// output buffer (the messages it has not read yet) passes client-output-buffer-limit pubsub (hard
// limit at once, soft limit when over it for its seconds; 32mb 8mb 60 by default). Then every
// image from there on is lost, and the section fails, saying so from both sides: the receiver's
// listener fails with the reason (the receiver app turns that into the open section's failure,
// and its record counts the lost images exactly; closeSection() waits for the reason so it is in
// before the record closes), and the transmitter's next PUBLISH reaches nobody. So `dropsImages`
// is not set: this transport delivers everything or fails the section.
// PUBLISH's reply counts the subscribers that got the message: 0 means nobody reads this
// section's channel on this Redis (not prepared, or the subscriber is gone), and the link fails.
// Limits: a message is one bulk string (proto-max-bulk-len, 512 MB by default); one message of
// the image's size alone must stay under the pubsub hard limit, which connect() checks.

/**
 * From this image size on, header and image go as two messages instead of one concatenated message (see above; the
 * crossover was not measured finely).
 */
const SPLIT_FROM_BYTES = 64 * 1024;
/**
 * Bytes of RESP framing around a published message in the subscriber's output buffer (array, "message", channel, bulk
 * length).
 */
const MESSAGE_FRAMING_BYTES = 128;
/** Bound on UNSUBSCRIBE at the end of a section: Redis may be why the section is closing. */
const UNSUBSCRIBE_TIMEOUT_MS = 500;
/** After an UNSUBSCRIBE that got no answer: how long the section's end waits for the subscriber's close to be read. */
const LOST_SUBSCRIBER_WAIT_MS = 2000;

/** client-output-buffer-limit for the pubsub class, in bytes and seconds. */
interface PubsubLimit {
  hardBytes: number;
  softBytes: number;
  softSeconds: number;
}

/** The limit as Redis's config words it ("1mb 512kb 1"). */
function formatPubsubLimit(limit: PubsubLimit): string {
  const bytes = (n: number): string =>
    n > 0 && n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)}mb` : n > 0 && n % 1024 === 0 ? `${n / 1024}kb` : String(n);
  return `client-output-buffer-limit pubsub ${bytes(limit.hardBytes)} ${bytes(limit.softBytes)} ${limit.softSeconds}`;
}

/**
 * Reads the pubsub class of client-output-buffer-limit; undefined when the server does not allow CONFIG GET (ACL,
 * renamed command).
 */
async function readPubsubLimit(client: Redis, log: Logger): Promise<PubsubLimit | undefined> {
  try {
    const reply = await withInfoTimeout(
      client.config('GET', 'client-output-buffer-limit'),
      'CONFIG GET client-output-buffer-limit',
    );
    const match = /pubsub (\d+) (\d+) (\d+)/.exec(String(reply[1] ?? ''));
    if (match === null) return undefined;
    return { hardBytes: Number(match[1]), softBytes: Number(match[2]), softSeconds: Number(match[3]) };
  } catch (err) {
    log.debug({ err: errorMessage(err) }, 'redis-pubsub: cannot read client-output-buffer-limit');
    return undefined;
  }
}

/**
 * Bytes a message of `messageBytes` can take in a subscriber's output buffer: Redis counts each
 * reply block at its allocated size, and jemalloc rounds a large allocation up to a size class
 * (a quarter of the power of two below it), so one message alone can reach the limit 25 % early.
 * Measured on redis 7.0 against a 256kb hard limit: one 250,000-byte message tripped it, 240,000 did not.
 */
function outputBufferBytes(messageBytes: number): number {
  if (messageBytes <= 16 * 1024) return messageBytes;
  const spacing = 2 ** (Math.floor(Math.log2(messageBytes - 1)) - 2);
  return Math.ceil(messageBytes / spacing) * spacing;
}

function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const keys = sectionKeys(options.credential);
  const channel = keys.frames;
  let limitWords = 'client-output-buffer-limit pubsub';
  return connectRedisLink(options, keys, {
    transport: 'redis-pubsub',
    label: 'Redis pub/sub',
    // One message of this size alone would get the subscriber disconnected: say so before sending anything.
    async check(writer, shownUrl) {
      const limit = await readPubsubLimit(writer, options.log);
      const messageBytes =
        (options.imageBytes < SPLIT_FROM_BYTES ? FRAME_HEADER_BYTES + options.imageBytes : options.imageBytes) +
        MESSAGE_FRAMING_BYTES;
      if (limit !== undefined && limit.hardBytes > 0 && outputBufferBytes(messageBytes) >= limit.hardBytes) {
        throw new ItbError(
          ErrorCode.transport,
          `images of ${options.imageBytes} bytes cannot go through Redis pub/sub at ${shownUrl}: one such ` +
            `message alone can fill a subscriber's output buffer up to ${formatPubsubLimit(limit)}, and Redis ` +
            `disconnects the subscriber there (raise the limit, e.g. CONFIG SET client-output-buffer-limit "pubsub ` +
            `512mb 128mb 60", or send smaller images)`,
        );
      }
      if (
        limit !== undefined &&
        limit.hardBytes > 0 &&
        options.window * outputBufferBytes(messageBytes) >= limit.hardBytes
      ) {
        // Not refused: a subscriber that keeps up never holds a window of unread images.
        options.log.warn(
          { url: shownUrl, window: options.window, imageBytes: options.imageBytes, limit: formatPubsubLimit(limit) },
          "redis-pubsub: a window of unread images would pass the subscriber's output-buffer limit: a receiver " +
            'that falls that far behind is disconnected and the section fails',
        );
      }
      limitWords =
        limit === undefined
          ? 'client-output-buffer-limit pubsub (CONFIG GET is not allowed here to read it)'
          : formatPubsubLimit(limit);
    },
    writer(writer, guard, shownUrl) {
      // Images a subscriber got so far: nobody ever (not prepared here) and nobody any more (the
      // subscriber is gone) fail alike, worded apart. A header sent on its own is not counted.
      let reached = 0;
      const onReply = (subscribers: number, completesImage: boolean): void => {
        if (subscribers > 0) {
          if (completesImage) reached++;
          return;
        }
        if (guard.ended) return;
        const reason =
          reached === 0
            ? `no receiver is reading this section on Redis at ${shownUrl} (PUBLISH to ${channel} reached no ` +
              `subscriber: do both services have the same REDIS_URL?)`
            : `the receiver's subscriber left ${channel} on Redis at ${shownUrl} after ${reached} images reached ` +
              `it: Redis disconnects a subscriber whose output buffer passes ${limitWords} (the subscriber read ` +
              `slower than this link published), unless the receiver lost Redis (its log says)`;
        guard.fail(new ItbError(ErrorCode.receiverUnreachable, reason));
      };
      const onHeaderReply = (subscribers: number): void => onReply(subscribers, false);
      const onImageReply = (subscribers: number): void => onReply(subscribers, true);
      const onError = (err: unknown): void => guard.failWith(`PUBLISH failed: ${errorMessage(err)}`, err);
      return (header, payload) => {
        if (payload.length < SPLIT_FROM_BYTES && payload.length > 0) {
          writer
            .publish(channel, Buffer.concat([header, payload], header.length + payload.length))
            .then(onImageReply, onError);
          return;
        }
        if ((options.clients ?? 1) > 1) {
          // Several links publish on the one channel: MULTI keeps each header next to its image
          // (Redis would otherwise run another link's PUBLISH while this image is still arriving).
          writer
            .multi()
            .publish(channel, header)
            .publish(channel, payload)
            .exec()
            .then((replies) => {
              const [headerReply, imageReply] = replies ?? [];
              if (headerReply?.[0] || imageReply?.[0]) onError(headerReply?.[0] ?? imageReply?.[0]);
              else onImageReply(Math.min(Number(headerReply?.[1]), Number(imageReply?.[1])));
            }, onError);
          return;
        }
        // Both commands leave in one write (a second system call per image cost more than it saves).
        writer.stream.cork();
        writer.publish(channel, header).then(onHeaderReply, onError);
        writer.publish(channel, payload).then(onImageReply, onError);
        writer.stream.uncork();
      };
    },
  });
}

/** Counters of INFO stats that tell why Redis closed a client, where the server has them. */
interface DisconnectCounters {
  /** client_output_buffer_limit_disconnections (Redis >= 7.2); undefined on older servers. */
  outputBufferLimit: number | undefined;
  /** evicted_clients (maxmemory-clients, Redis >= 7.0). */
  evicted: number | undefined;
}

async function readDisconnectCounters(client: Redis): Promise<DisconnectCounters> {
  const text = await withInfoTimeout(client.info('stats'));
  const field = (name: string): number | undefined => {
    const value = new RegExp(`^${name}:(\\d+)`, 'm').exec(text)?.[1];
    return value === undefined ? undefined : Number(value);
  };
  return { outputBufferLimit: field('client_output_buffer_limit_disconnections'), evicted: field('evicted_clients') };
}

/** The open section: its keys and its channel as bytes (messages come with theirs). */
interface OpenChannel {
  keys: SectionKeys;
  channel: Buffer;
}

/** What words a lost subscriber, read when the last section opened: the limit, and the disconnect counters then. */
interface KnownLimits {
  limit: PubsubLimit | undefined;
  counters: DisconnectCounters | undefined;
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const broker = requireBroker(options, 'redis-pubsub');
  const log = options.log;
  const [subscriber, writer] = await openPair(broker, RECEIVER_CONNECT_TIMEOUT_MS);
  const receiver = new BrokerReceiver<OpenChannel>(options, {
    transport: 'redis-pubsub',
    server: 'Redis',
    shown: broker.shown,
  });
  let known: KnownLimits = { limit: undefined, counters: undefined };
  // Settles once a lost subscriber has been reported.
  let lostSubscriber: Promise<void> | undefined;
  const pairer = new FramePairer(frameGate(options, 'redis-pubsub'), true);
  const acks = ackBatcher(writer, log, () => receiver.closing);
  subscriber.on('messageBuffer', (channel: Buffer, message: Buffer) => {
    const open = receiver.section;
    // A message that comes after its section ended (UNSUBSCRIBE done): the section is over, its images with it.
    if (open === undefined || !channel.equals(open.channel)) {
      log.debug({ channel: channel.toString() }, 'redis-pubsub: message for a channel no longer open');
      return;
    }
    const ack = pairer.take(message);
    if (ack !== undefined) acks.push(open.keys.acks, ack);
  });
  subscriber.on('close', () => {
    if (!receiver.claimFailure()) return;
    lostSubscriber = explainLostSubscriber(writer, known, broker.shown).then((failure) => receiver.report(failure));
  });
  writer.on('close', () => receiver.fail());
  // Resolves when the subscriber's connection is gone (the 'close' above has run by then).
  const subscriberGone = new Promise<void>((resolve) => subscriber.once('close', () => setImmediate(resolve)));

  return receiver.listener(
    {
      async open(opening) {
        const keys = sectionKeys(opening.credential);
        pairer.reset();
        // Read before the first message can come: a subscriber lost later is worded against these.
        const [limit, counters] = await Promise.all([
          readPubsubLimit(writer, log),
          readDisconnectCounters(writer).catch(() => undefined),
        ]);
        known = { limit, counters };
        return { keys, channel: Buffer.from(keys.frames) };
      },
      // Open before SUBSCRIBE is sent: a message can follow its reply in the same chunk.
      start: (open) => subscriber.subscribe(open.keys.frames).then(() => undefined),
      // UNSUBSCRIBE's reply comes after every message Redis sent before it, so the images still
      // on their way are taken first; or, if Redis closed the subscriber, the close comes
      // instead, and the section must fail with its reason before it ends: the app ends the
      // section's record as soon as closeSection() returns.
      // No answer (a connection Redis closed, whose close this process may not have read yet on a
      // busy machine): wait a bound for the close, so the reason is in before the section ends.
      async drain(ending) {
        if (!(await unsubscribe(subscriber, ending.keys.frames))) {
          await settlesWithin(subscriberGone, LOST_SUBSCRIBER_WAIT_MS);
        }
        await lostSubscriber;
      },
      async end(ended) {
        acks.flush();
        pairer.reset();
        await dropKeys(writer, [ended.keys.acks]);
      },
      async close(open) {
        // Dropping the subscriber's connection ends its subscription with it.
        await closeClient(subscriber);
        // Leave nothing behind in Redis.
        if (open !== undefined) await dropKeys(writer, [open.keys.acks]);
        await closeClient(writer);
      },
    },
    { readBroker: () => readBroker(writer) },
  );
}

/**
 * The acks of the messages ioredis parsed from one chunk, sent back in one LPUSH as soon as the
 * chunk is parsed (a microtask): one write per chunk, not per image, for small images.
 */
function ackBatcher(
  writer: Redis,
  log: Logger,
  closing: () => boolean,
): { push(key: string, ack: Buffer): void; flush(): void } {
  let pending: Buffer[] = [];
  let pendingKey = '';
  const flush = (): void => {
    const acks = pending;
    pending = [];
    if (acks.length === 0 || writer.status !== 'ready') return;
    // LPUSH of a1 a2 ... leaves a1 at the tail, so the transmitter's right pops keep the order.
    writer.lpush(pendingKey, ...acks).catch((err: unknown) => {
      if (!closing()) log.error({ err: errorMessage(err) }, 'redis-pubsub: sending acks failed');
    });
  };
  return {
    push(key, ack) {
      if (pending.length === 0) {
        pendingKey = key;
        queueMicrotask(flush);
      }
      pending.push(ack);
    },
    flush,
  };
}

/** Unsubscribes `channel`, bounded; true when Redis answered: the subscriber was alive up to there. */
async function unsubscribe(subscriber: Redis, channel: string): Promise<boolean> {
  if (subscriber.status !== 'ready') return false;
  let answered = false;
  await settlesWithin(
    subscriber.unsubscribe(channel).then(() => {
      answered = true;
    }),
    UNSUBSCRIBE_TIMEOUT_MS,
  );
  return answered;
}

/**
 * Why the subscriber connection closed while the writer's is still up: a Redis that went away
 * takes both; one that stays up closed the subscriber, at its output-buffer limit unless the
 * counters say otherwise (`known`: what they were when the section opened).
 */
async function explainLostSubscriber(writer: Redis, known: KnownLimits, shown: string): Promise<string> {
  const { limit, counters: before } = known;
  let now: DisconnectCounters;
  try {
    now = await readDisconnectCounters(writer);
  } catch {
    return `lost its connection to Redis at ${shown}`;
  }
  const limitWords = limit === undefined ? 'client-output-buffer-limit pubsub' : formatPubsubLimit(limit);
  const grew = (name: keyof DisconnectCounters): boolean | undefined => {
    const [was, is] = [before?.[name], now[name]];
    return was === undefined || is === undefined ? undefined : is > was;
  };
  if (grew('outputBufferLimit') === true)
    return (
      `Redis at ${shown} closed the subscriber connection: its output buffer passed ${limitWords} (the ` +
      `subscriber read slower than the publisher wrote)`
    );
  if (grew('evicted') === true)
    return `Redis at ${shown} evicted the subscriber connection (maxmemory-clients: client memory over its limit)`;
  if (grew('outputBufferLimit') === false)
    return (
      `Redis at ${shown} closed the subscriber connection while the server stayed up, not at its ` +
      `output-buffer limit (CLIENT KILL?)`
    );
  return (
    `Redis at ${shown} closed the subscriber connection while the server stayed up: most likely its ` +
    `output buffer passed ${limitWords} (the subscriber read slower than the publisher wrote; this Redis does ` +
    `not count such disconnections to say for sure)`
  );
}

/** Redis pub/sub through a Redis server (REDIS_URL): PUBLISH / SUBSCRIBE, acks on a list. */
export const redisPubsubTransport: Transport = {
  name: 'redis-pubsub',
  label: 'Redis pub/sub',
  summary: {
    libraries: 'ioredis',
    image: 'channel, `PUBLISH` / `SUBSCRIBE`',
    ack: 'list, `BLMPOP`',
  },
  traits: {
    baseline: false,
    // Every receiver subscribes to the section's channel: one PUBLISH reaches them all.
    fanOut: 'one send',
  },
  ...redisDescriptors(false),
  connect,
  listen,
};
