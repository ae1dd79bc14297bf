import { createHash, randomBytes } from 'node:crypto';
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import type { SectionCredential } from '../../core/wire/auth.js';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { decodeAck, encodeAck, FRAME_HEADER_BYTES, type Ack } from '../../core/wire/frame.js';
import { settlesWithin } from '../../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import {
  drainOrFail,
  RABBITMQ_3_MAX_MESSAGE_BYTES,
  RABBITMQ_4_MAX_MESSAGE_BYTES,
  startPrivateRabbit,
} from '../kit/amqp.js';
import { brokerProcessReader, brokerRequirement, type BrokerAddress } from '../kit/broker.js';
import { connectWithin } from '../kit/connect.js';
import { BrokerReceiver } from '../kit/broker-receiver.js';
import { frameGate, type FrameGate } from '../kit/gate.js';
import { lazyLibrary } from '../kit/library.js';
import { LinkGuard } from '../kit/link-guard.js';
import { SendQueue } from '../kit/send-queue.js';

/** amqplib, loaded when the transport is first used (kit/library.ts). */
const amqpLibrary = lazyLibrary<typeof import('amqplib')>('amqplib');

// AMQP 0-9-1 through RabbitMQ (amqplib): a queue per section (and per receiver when RECEIVERS > 1),
// named after the section's credential. The receiver declares it (non-durable, deleted with its
// last consumer) in openSection(), before the transmitter is told to connect, and consumes it with
// manual acks and a prefetch of WINDOW: the broker never has more than WINDOW images delivered and
// unacknowledged to it. The transmitter publishes each image on a confirm channel (publisher
// confirms) through the default exchange to that queue, `mandatory` (a queue gone since comes back
// as basic.return: nobody reads this section any more), with the 40-byte frame header as a message
// header (a byte array, so header and image are never concatenated by us) and the link's reply
// queue as reply-to. The receiver passes each delivery through the frame gate, publishes the
// 12-byte ack to that reply queue at once (only to this section's reply queues), then acks the
// delivery to the broker. An image counts as sent once its confirm comes (a nack fails the
// section); the suite's ack is the receiver's, which comes back in order on the reply queue.
// Copies: amqplib copies every body frame (frame_max, 128 KiB, at a time) into a frame buffer of
// its own; the receiver assembles a body of several frames into one buffer. Nothing of ours.
// Backpressure: publish() returns false when amqplib's write buffer is over its high-water mark;
// the link then holds frames until 'drain', and fails if the channel closes or errs first (kit/amqp.ts
// drainOrFail). A broker under a memory or disk alarm blocks publishing connections
// (connection.blocked): the link fails at once with the broker's reason rather than stalling until
// IMAGE_TIMEOUT_MS.
// Nothing is dropped silently: the queue has no length limit, a delivery the gate rejects is
// rejected to the broker (not requeued) and reported, and any channel or connection closing fails
// the link or the listener (amqplib never reconnects a plain connection).
// Limits: a message is at most the broker's max_message_size, which AMQP does not tell a client.
// RabbitMQ 3.x defaults to 128 MiB (512 MiB at most), 4.0 and later to 16 MiB; the private server
// runs with the 3.x default. A larger message makes the broker close the channel with 406
// PRECONDITION_FAILED naming both sizes, which fails the section with the limit named.

/** The message header that carries the frame header, as a byte array. */
const FRAME_HEADER_NAME = 'itb-frame';
/** Frame size amqplib asks for: RabbitMQ's default frame_max (a body goes in frames of this size). */
const FRAME_MAX_BYTES = 128 * 1024;
/** The receiver has no configured bound, so it gets this one for reaching the broker. */
const RECEIVER_CONNECT_TIMEOUT_MS = 5000;
/** Bound on closing a connection: a dead broker never answers connection.close. */
const CLOSE_TIMEOUT_MS = 2000;

/** The queues of one section: images go to `frames`; acks come back on reply queues under `acks`. */
export interface SectionQueues {
  frames: string;
  /** Prefix of every link's reply queue (`<acks>.<unique>`). */
  acks: string;
}

/**
 * Queues named after the section's id, a digest of its key (the key itself stays off the broker) and the receiver's
 * place; exported for tests.
 */
export function sectionQueues(credential: SectionCredential, receiverIndex = 0): SectionQueues {
  const tag = createHash('sha256').update(credential.key).digest('base64url').slice(0, 22);
  const prefix = `itb.${credential.sectionId}.${tag}.${receiverIndex}`;
  return { frames: `${prefix}.frames`, acks: `${prefix}.acks` };
}

/** The port of an amqp:// URL that names none (AMQP's registered port). */
const AMQP_DEFAULT_PORT = 5672;

/** A broker's refusal of who we are (403 ACCESS_REFUSED): retrying with the same credentials is pointless. */
function isAccessRefused(err: unknown): boolean {
  return /ACCESS[-_]REFUSED|403/.test(errorMessage(err));
}

/** amqplib's connection options for `broker`: user and password as options, never in a URL it could echo. */
function connectOptions(broker: BrokerAddress): Options.Connect {
  const url = new URL(broker.url);
  const vhost = url.pathname.length > 1 ? decodeURIComponent(url.pathname.slice(1)) : '/';
  return {
    protocol: 'amqp',
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? AMQP_DEFAULT_PORT : Number(url.port),
    vhost,
    frameMax: FRAME_MAX_BYTES,
    ...(broker.user === undefined && broker.password === undefined
      ? {}
      : { username: broker.user ?? 'guest', password: broker.password ?? '' }),
  };
}

/**
 * Opens one connection to the broker within `timeoutMs`, retrying refused or failed attempts; a
 * refused login is not retried. amqplib never reconnects it: a connection that drops is a failure.
 */
function openConnection(broker: BrokerAddress, timeoutMs: number): Promise<ChannelModel> {
  return connectWithin(
    `RabbitMQ at ${broker.shown}`,
    timeoutMs,
    async (remainingMs) => {
      try {
        return await amqpLibrary().connect(connectOptions(broker), { timeout: remainingMs, noDelay: true });
      } catch (err) {
        if (isAccessRefused(err)) throw new ItbError(ErrorCode.refused, errorMessage(err), { cause: err });
        throw err;
      }
    },
    (late) => void closeConnection(late),
  );
}

/** Closes the connection, bounded; one already closed is left alone. */
async function closeConnection(connection: ChannelModel): Promise<void> {
  await settlesWithin(
    connection.close().catch(() => undefined),
    CLOSE_TIMEOUT_MS,
  );
}

/** The failure reason of a channel error, with the size limit named when the broker refused a message for its size. */
function channelReason(err: unknown): string {
  const message = errorMessage(err);
  if (!/larger than configured max size/.test(message)) return message;
  return (
    `${message}: an image is over the broker's max_message_size (RabbitMQ's default is ` +
    `${RABBITMQ_3_MAX_MESSAGE_BYTES} bytes, 128 MiB, in 3.x and ${RABBITMQ_4_MAX_MESSAGE_BYTES} bytes, 16 MiB, ` +
    'from 4.0; raise max_message_size in rabbitmq.conf, 512 MiB at most)'
  );
}

/**
 * Calls `onEnd` with the reason when the connection closes, errs, or is blocked by the broker (a
 * resource alarm: publishing would stall); it may call more than once, and callers report the first.
 */
function watchConnection(connection: ChannelModel, onEnd: (reason: string, cause?: unknown) => void): void {
  connection.on('error', (err: unknown) => onEnd(`connection error: ${channelReason(err)}`, err));
  connection.on('close', (err?: unknown) => onEnd(`connection closed${err ? `: ${channelReason(err)}` : ''}`, err));
  connection.on('blocked', (reason: string) => onEnd(`the broker blocked the connection: ${reason}`));
}

/** Calls `onEnd` when the channel errs or closes. */
function watchChannel(channel: Channel, onEnd: (reason: string, cause?: unknown) => void): void {
  channel.on('error', (err: unknown) => onEnd(`channel closed by the broker: ${channelReason(err)}`, err));
  channel.on('close', () => onEnd('channel closed'));
}

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const broker = requireBroker(options, 'amqp');
  const queues = sectionQueues(options.credential, options.receiverIndex);
  const connection = await openConnection(broker, options.connectTimeoutMs);
  const guard = new LinkGuard(options.onFailure, `AMQP link through ${broker.shown}`);
  let channel: ConfirmChannel;
  let replyQueue: string;
  try {
    // A queue nobody declared means no receiver reads this section: checked on a channel of its own,
    // since the broker closes a channel whose passive declare fails.
    const probe = await connection.createChannel();
    probe.on('error', () => undefined);
    try {
      await probe.checkQueue(queues.frames);
    } catch (err) {
      throw new ItbError(
        ErrorCode.receiverUnreachable,
        `no receiver is reading this section on RabbitMQ at ${broker.shown} (queue ${queues.frames} does not ` +
          `exist: do both services have the same AMQP_URL?)`,
        { cause: err },
      );
    }
    await probe.close().catch(() => undefined);
    channel = await connection.createConfirmChannel();
    channel.on('error', () => undefined);
    replyQueue = `${queues.acks}.${randomBytes(12).toString('base64url')}`;
    await channel.assertQueue(replyQueue, { exclusive: true, autoDelete: true, durable: false });
    await channel.consume(
      replyQueue,
      (msg) => {
        if (msg === null) {
          guard.failWith('the broker cancelled the ack consumer');
          return;
        }
        let ack: Ack;
        try {
          ack = decodeAck(msg.content);
        } catch (err) {
          options.log.warn({ err: errorMessage(err) }, 'amqp: ignoring a malformed ack');
          return;
        }
        guard.ack(options.onAck, ack);
      },
      { noAck: true },
    );
  } catch (err) {
    await closeConnection(connection);
    throw err;
  }
  watchConnection(connection, (reason, cause) => guard.failWith(reason, cause));
  watchChannel(channel, (reason, cause) => guard.failWith(reason, cause));
  channel.on('return', () =>
    guard.fail(
      new ItbError(
        ErrorCode.receiverUnreachable,
        `no receiver is reading this section on RabbitMQ at ${broker.shown} (queue ${queues.frames} is gone)`,
      ),
    ),
  );

  const publishOptions = (header: Buffer): Options.Publish => ({
    mandatory: true,
    replyTo: replyQueue,
    headers: { [FRAME_HEADER_NAME]: header },
  });
  const queue = new SendQueue(
    (header, payload) => {
      const taken = channel.publish('', queues.frames, payload, publishOptions(header), (err) => {
        if (err) guard.failWith(`the broker refused an image (publisher confirm nack): ${errorMessage(err)}`, err);
      });
      return taken ? undefined : drainOrFail(channel);
    },
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, () => closeConnection(connection));
}

/** The open section's queue and the tag of its consumer. */
interface OpenQueue {
  queues: SectionQueues;
  consumerTag: string;
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const broker = requireBroker(options, 'amqp');
  const connection = await openConnection(broker, RECEIVER_CONNECT_TIMEOUT_MS);
  const brokerCpu = await brokerProcessReader(broker, AMQP_DEFAULT_PORT, options.log);
  const receiver = new BrokerReceiver<OpenQueue>(options, {
    transport: 'amqp',
    server: 'RabbitMQ',
    shown: broker.shown,
  });
  let channel: Channel;
  try {
    channel = await connection.createChannel();
  } catch (err) {
    await closeConnection(connection);
    throw err;
  }
  watchConnection(connection, receiver.fail);
  watchChannel(channel, receiver.fail);
  const onFrame = frameTaker(channel, receiver, frameGate(options, 'amqp'));
  return receiver.listener(
    {
      async open(opening) {
        const queues = sectionQueues(opening.credential, opening.receiverIndex);
        await channel.assertQueue(queues.frames, { durable: false, autoDelete: true, exclusive: false });
        // Applies to the consumers this channel starts from now on: WINDOW deliveries unacknowledged at most.
        await channel.prefetch(opening.window);
        const { consumerTag } = await channel.consume(queues.frames, onFrame(queues), { noAck: false });
        return { queues, consumerTag };
      },
      async end(ended) {
        if (receiver.stopped) return;
        await channel.cancel(ended.consumerTag);
        await channel.deleteQueue(ended.queues.frames);
      },
      close: () => closeConnection(connection),
    },
    brokerCpu,
  );
}

/**
 * The consumer of one section's queue: each delivery through the gate, its ack published to the link's reply queue,
 * then the delivery acked to the broker; a delivery the gate drops is rejected to the broker, not requeued.
 */
function frameTaker(
  channel: Channel,
  receiver: BrokerReceiver<OpenQueue>,
  gate: FrameGate,
): (queues: SectionQueues) => (msg: ConsumeMessage | null) => void {
  return (queues) => (msg) => {
    if (msg === null) {
      if (receiver.section?.queues === queues) receiver.fail(`the broker cancelled the consumer of ${queues.frames}`);
      return;
    }
    const drop = (reason: string): void => {
      gate.reject(reason);
      channel.nack(msg, false, false);
    };
    // Acks go only to this section's reply queues, never to a queue a message names.
    const reply = msg.properties.replyTo as string | undefined;
    if (reply === undefined || !reply.startsWith(`${queues.acks}.`)) {
      drop("message without this section's reply queue as its reply-to: dropped");
      return;
    }
    const header: unknown = msg.properties.headers?.[FRAME_HEADER_NAME];
    if (!Buffer.isBuffer(header) || header.length !== FRAME_HEADER_BYTES) {
      drop(`message without a ${FRAME_HEADER_BYTES}-byte ${FRAME_HEADER_NAME} header`);
      return;
    }
    const ack = gate.frame(header, msg.content);
    if (ack === undefined) {
      channel.nack(msg, false, false);
      return;
    }
    try {
      channel.sendToQueue(reply, encodeAck(ack));
      channel.ack(msg);
    } catch (err) {
      // Only a closed channel refuses it, which its 'close' reports too.
      receiver.fail(`sending an ack failed: ${errorMessage(err)}`);
    }
  };
}

/** The broker of AMQP_URL (and AMQP_PASSWORD), or a clear error when it is not set. */
const requireBroker = brokerRequirement({
  envVar: 'AMQP_URL',
  broker: 'a RabbitMQ broker',
  example: 'amqp://guest@127.0.0.1:5672 with AMQP_PASSWORD',
});

/** RabbitMQ through AMQP 0-9-1 (AMQP_URL): a queue per section, publisher confirms, acks on a reply queue. */
export const amqpTransport: Transport = {
  name: 'amqp',
  label: 'AMQP (RabbitMQ)',
  summary: {
    libraries: 'amqplib (RabbitMQ)',
    image: "AMQP 0-9-1 publish on a confirm channel to the section's queue, header as a message header",
    ack: "publish to the link's reply queue",
  },
  traits: {
    baseline: false,
  },
  library: {
    packages: ['amqplib'],
  },
  deployment: {
    defaultRun: false,
    setting: { kind: 'url', envVar: 'AMQP_URL', schemes: ['amqp'], example: 'amqp://127.0.0.1:5672' },
    composeService: 'rabbitmq',
    localServer: { command: 'rabbitmq-server', start: (host) => startPrivateRabbit({ host }) },
  },
  connect,
  listen,
};
