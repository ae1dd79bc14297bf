import { createHash } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { settlesWithin, withTimeout } from '../../services/shared/waits.js';
import { lazyLibrary } from '../../services/transports/kit/library.js';
import {
  ackSeq,
  CEILING_ACK_BYTES,
  CEILING_HEADER_BYTES,
  ceilingAck,
  headerSeq,
  type CeilingPair,
} from './contract.js';

// NATS JetStream (@nats-io/jetstream over @nats-io/transport-node), as the nats-jetstream transport: the receiver
// creates a memory stream with work-queue retention on this run's subject (options.channel) and a pull consumer with
// explicit acks, and deletes the stream at close; the sender publishes each image with js.publish (pipelined, each
// PubAck awaited and checked), its ack inbox in an Itb-Ack header and its stream's name in Nats-Expected-Stream; the
// receiver publishes the 12-byte ack to that inbox at once, then acks the message to JetStream. Header and image travel
// as the transport carries them: below HEADER_APART_FROM_BYTES concatenated, from it on the header as an `Itb-Frame`
// header in base64. No section subjects, no gate, no status watch beyond the connection's end; reconnect off, as the
// transport. The sender's window bounds what the consumer holds unacked.

const natsLibrary = lazyLibrary<typeof import('@nats-io/transport-node')>('@nats-io/transport-node');
const jetStreamLibrary = lazyLibrary<typeof import('@nats-io/jetstream')>('@nats-io/jetstream');

/** The transport's threshold: images this large carry their header as a NATS message header. */
const HEADER_APART_FROM_BYTES = 64 * 1024;
/** The transport's NATS message headers for the frame header and the ack inbox. */
const FRAME_HEADER_NAME = 'Itb-Frame';
const ACK_INBOX_HEADER = 'Itb-Ack';
/** JetStream's header that makes the server refuse a message that would land in another stream, as the transport's. */
const EXPECTED_STREAM_HEADER = 'Nats-Expected-Stream';
/** Bound on reaching the server, and on a JetStream API request. */
const CONNECT_TIMEOUT_MS = 5000;
/** Bound on the round trip that confirms a subscription is in place on the server. */
const FLUSH_TIMEOUT_MS = 2000;
/** Bound on closing: nats.js first flushes what it queued, which a dead server may never take. */
const CLOSE_TIMEOUT_MS = 2000;
/** Most messages the consumer hands over unacked: above any window the bench runs (the sender's bounds it). */
const MAX_ACK_PENDING = 1024;

/** One connection to the broker, never reconnecting: a drop mid-run is a failure. */
function open(brokerUrl: string | undefined, name: string): Promise<NatsConnection> {
  if (brokerUrl === undefined) throw new Error('nats-jetstream ceiling: no broker URL (nats://host:port)');
  return natsLibrary().connect({
    servers: brokerUrl,
    name,
    reconnect: false,
    timeout: CONNECT_TIMEOUT_MS,
    noRandomize: true,
    ignoreClusterUpdates: true,
  });
}

/** Closes the connection, bounded. */
async function closeWithin(nc: NatsConnection): Promise<void> {
  if (!nc.isClosed()) await settlesWithin(nc.close(), CLOSE_TIMEOUT_MS);
}

/** A Buffer over a message's bytes, no copy. */
function bufferOf(data: Uint8Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

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
    const nc = await open(options.brokerUrl, 'itb-ceiling-receiver');
    const name = streamName(options.channel);
    const { arrived, onImage } = options;
    try {
      const { StorageType, RetentionPolicy, AckPolicy } = jetStreamLibrary();
      const jsm = await jetStreamLibrary().jetstreamManager(nc, { timeout: CONNECT_TIMEOUT_MS });
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
              CONNECT_TIMEOUT_MS,
            );
          await closeWithin(nc);
        },
      };
    } catch (err) {
      await closeWithin(nc);
      throw err;
    }
  },
  async connect(options) {
    const nc = await open(options.brokerUrl, 'itb-ceiling-sender');
    const inbox = natsLibrary().createInbox(`${options.channel}.acks`);
    let closing = false;
    nc.subscribe(inbox, {
      callback: (err, msg) => {
        if (err) return options.onFailure(`nats-jetstream: ack subscription failed: ${err.message}`);
        if (msg.data.length < CEILING_ACK_BYTES) return options.onFailure('nats-jetstream: malformed ack');
        options.onAck(ackSeq(bufferOf(msg.data)));
      },
    });
    try {
      await withTimeout(nc.flush(), FLUSH_TIMEOUT_MS, 'nats-jetstream ceiling: subscribing to the ack inbox');
    } catch (err) {
      await closeWithin(nc);
      throw err;
    }
    void nc.closed().then((err) => {
      if (!closing) options.onFailure(`nats-jetstream: connection closed${err ? `: ${err.message}` : ''}`);
    });
    const js = jetStreamLibrary().jetstream(nc);
    const stream = streamName(options.channel);
    const apart = options.maxImageBytes >= HEADER_APART_FROM_BYTES;
    const refused = (err: unknown): void => {
      if (!closing)
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
      async close() {
        closing = true;
        await closeWithin(nc);
      },
    };
  },
};
