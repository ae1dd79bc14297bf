import { once } from 'node:events';
import type { ChannelModel } from 'amqplib';
import { ErrorCode, ItbError } from '../../core/errors.js';
import { settlesWithin } from '../../shared/waits.js';
import { lazyLibrary } from '../kit/library.js';
import { ackSeq, ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';

// AMQP 0-9-1 (amqplib), as the amqp transport: the receiver declares this run's queue (options.channel, deleted with
// its consumer) and consumes it with manual acks, publishing the 12-byte ack to the message's reply-to queue and acking
// the delivery at once; the sender publishes each image through the default exchange on a confirm channel, with the
// 40-byte header as an `itb-frame` byte-array header and its own exclusive reply queue as reply-to, waiting for 'drain'
// when publish() returns false. The receiver does not know the run's WINDOW, so its prefetch is unbounded: the sender's
// window bounds the deliveries in flight as the transport's prefetch does. Published `mandatory`, as the transport's.
// No section queues, no gate, no reply-queue check, no blocked watch; a closed connection or channel fails the run.

const amqpLibrary = lazyLibrary<typeof import('amqplib')>('amqplib');

/** The transport's message header for the frame header. */
const FRAME_HEADER_NAME = 'itb-frame';
/** The transport's frame size: RabbitMQ's default frame_max. */
const FRAME_MAX_BYTES = 128 * 1024;
/** Bound on reaching the broker. */
const CONNECT_TIMEOUT_MS = 5000;
/** Bound on closing: a dead broker never answers connection.close. */
const CLOSE_TIMEOUT_MS = 2000;

/** One connection to the broker (user and password, if any, in the URL); amqplib never reconnects it. */
function open(brokerUrl: string | undefined): Promise<ChannelModel> {
  if (brokerUrl === undefined) throw new ItbError(ErrorCode.config, 'amqp ceiling: no broker URL (amqp://host:port)');
  const url = new URL(brokerUrl);
  url.searchParams.set('frameMax', String(FRAME_MAX_BYTES));
  return amqpLibrary().connect(url.toString(), { timeout: CONNECT_TIMEOUT_MS, noDelay: true });
}

async function closeWithin(connection: ChannelModel): Promise<void> {
  await settlesWithin(
    connection.close().catch(() => undefined),
    CLOSE_TIMEOUT_MS,
  );
}

/** The amqp transport's ceiling: a confirmed publish per image, the ack on the sender's reply queue. */
export const amqpCeiling: CeilingPair = {
  transport: 'amqp',
  how:
    "amqplib: confirmChannel.publish('', queue, image, {headers: {itb-frame: header}, replyTo}, cb) with 'drain'; " +
    'the consumer sendToQueue(replyTo, ack) and ack(msg)',
  async receive(options) {
    const connection = await open(options.brokerUrl);
    const { arrived, onImage } = options;
    try {
      const channel = await connection.createChannel();
      await channel.assertQueue(options.channel, { durable: false, autoDelete: true });
      await channel.consume(
        options.channel,
        (msg) => {
          // A cancelled consumer comes with the connection's end; the sender's ack timeout reports it.
          if (msg === null) return;
          const header = msg.properties.headers?.[FRAME_HEADER_NAME] as Buffer;
          const seq = headerSeq(header);
          arrived(seq);
          channel.sendToQueue(msg.properties.replyTo as string, ceilingAck(seq));
          channel.ack(msg);
          onImage?.(seq, msg.content);
        },
        { noAck: false },
      );
    } catch (err) {
      await closeWithin(connection);
      throw err;
    }
    return { port: options.port, close: () => closeWithin(connection) };
  },
  async connect(options) {
    const connection = await open(options.brokerUrl);
    let closing = false;
    const fail = (reason: string): void => {
      if (!closing) options.onFailure(`amqp: ${reason}`);
    };
    connection.on('close', () => fail('connection closed'));
    connection.on('error', (err: Error) => fail(`connection error: ${err.message}`));
    const channel = await connection.createConfirmChannel();
    channel.on('error', (err: Error) => fail(`channel closed by the broker: ${err.message}`));
    const { queue: replyTo } = await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
    await channel.consume(replyTo, (msg) => msg && options.onAck(ackSeq(msg.content)), { noAck: true });
    // Frames wait here while amqplib's write buffer is over its high-water mark, as the transport's SendQueue holds
    // them.
    const held: [Buffer, Buffer][] = [];
    let draining = false;
    const confirmed = (err: unknown): void => {
      if (err) fail('the broker refused an image');
    };
    const publish = (header: Buffer, image: Buffer): boolean =>
      channel.publish(
        '',
        options.channel,
        image,
        { mandatory: true, headers: { [FRAME_HEADER_NAME]: header }, replyTo },
        confirmed,
      );
    const pump = async (): Promise<void> => {
      draining = true;
      while (held.length > 0 && !closing) {
        await once(channel, 'drain');
        while (held.length > 0) {
          const [header, image] = held.shift()!;
          if (!publish(header, image)) break;
        }
      }
      draining = false;
    };
    return {
      send(_seq, header, image) {
        if (draining) held.push([header, image]);
        else if (!publish(header, image)) void pump();
      },
      async close() {
        closing = true;
        await closeWithin(connection);
      },
    };
  },
};
