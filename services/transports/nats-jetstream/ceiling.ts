import { createHash } from 'node:crypto';
import { settlesWithin } from '../../shared/waits.js';
import { lazyLibrary } from '../kit/library.js';
import { CEILING_HEADER_BYTES, ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';
import { openCeilingNats, openCeilingSender } from '../kit/ceiling-nats.js';
import { bufferOf, closeConnection, FRAME_HEADER_NAME, HEADER_APART_FROM_BYTES, natsLibrary } from '../kit/nats.js';

// NATS JetStream (@nats-io/jetstream over @nats-io/transport-node), as the nats-jetstream transport: the receiver
// creates a memory stream with work-queue retention on this run's subject (options.channel) and a pull consumer with
// explicit acks, and deletes the stream at close; the sender publishes each image with js.publish (pipelined, each
// PubAck awaited and checked), its ack inbox in an Itb-Ack header and its stream's name in Nats-Expected-Stream; the
// receiver publishes the 12-byte ack to that inbox at once, then acks the message to JetStream. Header and image travel
// as the transport carries them: below HEADER_APART_FROM_BYTES concatenated, from it on the header as an `Itb-Frame`
// header in base64. No section subjects, no gate, no status watch beyond the connection's end; reconnect off, as the
// transport. The sender's window bounds what the consumer holds unacked.

const jetStreamLibrary = lazyLibrary<typeof import('@nats-io/jetstream')>('@nats-io/jetstream');

/** The transport's NATS message header for the ack inbox. */
const ACK_INBOX_HEADER = 'Itb-Ack';
/** JetStream's header that makes the server refuse a message that would land in another stream, as the transport's. */
const EXPECTED_STREAM_HEADER = 'Nats-Expected-Stream';
/** Bound on a JetStream API request. */
const API_TIMEOUT_MS = 5000;
/** Most messages the consumer hands over unacked: above any window the bench runs (the sender's bounds it). */
const MAX_ACK_PENDING = 1024;

/** The stream that takes `channel`: named after a digest of it, as long as the transport's (names take no dots). */
function streamName(channel: string): string {
  return `ITB_C_${createHash('sha256').update(channel).digest('base64url').slice(0, 22)}_0`;
}

/** The nats-jetstream transport's ceiling: a memory stream, js.publish per image, a pull consumer. */
export const natsJetstreamCeiling: CeilingPair = {
  transport: 'nats-jetstream',
  how:
    '@nats-io/jetstream: js.publish(subject, header+image or image with an Itb-Frame header, {headers: Itb-Ack ' +
    'inbox}) with its PubAck awaited; consumer.consume() with explicit acks, nc.publish(inbox, ack), msg.ack()',
  async receive(options) {
    const nc = await openCeilingNats(options.brokerUrl, 'nats-jetstream', 'itb-ceiling-receiver');
    const name = streamName(options.channel);
    const { arrived, onImage } = options;
    try {
      const { StorageType, RetentionPolicy, AckPolicy } = jetStreamLibrary();
      const jsm = await jetStreamLibrary().jetstreamManager(nc, { timeout: API_TIMEOUT_MS });
      await jsm.streams.add({
        name,
        subjects: [options.channel],
        storage: StorageType.Memory,
        retention: RetentionPolicy.Workqueue,
      });
      await jsm.consumers.add(name, {
        name: 'ceiling',
        ack_policy: AckPolicy.Explicit,
        max_ack_pending: MAX_ACK_PENDING,
      });
      const consumer = await jsm.jetstream().consumers.get(name, 'ceiling');
      const messages = await consumer.consume({
        max_messages: MAX_ACK_PENDING,
        callback: (msg) => {
          const data = bufferOf(msg.data);
          const apart = msg.headers?.get(FRAME_HEADER_NAME) ?? '';
          const header = apart === '' ? data : Buffer.from(apart, 'base64');
          const seq = headerSeq(header);
          arrived(seq);
          try {
            nc.publish(msg.headers?.get(ACK_INBOX_HEADER) ?? '', ceilingAck(seq));
            msg.ack();
          } catch {
            // Only a closed connection refuses it; nothing may throw into nats.js's parser.
            return;
          }
          onImage?.(seq, apart === '' ? data.subarray(CEILING_HEADER_BYTES) : data);
        },
      });
      return {
        port: options.port,
        async close() {
          messages.stop();
          if (!nc.isClosed())
            await settlesWithin(
              jsm.streams.delete(name).catch(() => false),
              API_TIMEOUT_MS,
            );
          await closeConnection(nc);
        },
      };
    } catch (err) {
      await closeConnection(nc);
      throw err;
    }
  },
  async connect(options) {
    const sender = await openCeilingSender(options, 'nats-jetstream', 'malformed ack');
    const { nc, inbox } = sender;
    const js = jetStreamLibrary().jetstream(nc);
    const stream = streamName(options.channel);
    const apart = options.maxImageBytes >= HEADER_APART_FROM_BYTES;
    const refused = (err: unknown): void => {
      if (!sender.closing)
        options.onFailure(`nats-jetstream: not stored: ${err instanceof Error ? err.message : String(err)}`);
    };
    return {
      send(_seq, header, image) {
        // The library adds its own headers to the object it is given: one per image.
        const headers = natsLibrary().headers();
        headers.set(ACK_INBOX_HEADER, inbox);
        headers.set(EXPECTED_STREAM_HEADER, stream);
        if (apart) headers.set(FRAME_HEADER_NAME, header.toString('base64'));
        const data = apart ? image : Buffer.concat([header, image], header.length + image.length);
        js.publish(options.channel, data, { headers }).then(() => undefined, refused);
      },
      close: () => sender.close(),
    };
  },
};
