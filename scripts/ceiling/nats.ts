import type { Msg, NatsConnection } from '@nats-io/transport-node';
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

// Core NATS (@nats-io/transport-node), as the nats transport: each image one message on this run's
// subject (options.channel) whose reply subject is the sender's ack inbox (one subscription); the
// receiver publishes the 12-byte ack to the reply subject at once. Header and image travel as the
// transport carries them: below HEADER_APART_FROM_BYTES concatenated as the data (one copy, the
// transport's too), from it on the header as an `Itb-Frame` NATS message header in base64 and the
// image alone as the data. One publisher's messages reach the subscriber in order. No section
// subjects, no gate, no status watch beyond the connection's end; reconnect off, as the transport.

const natsLibrary = lazyLibrary<typeof import('@nats-io/transport-node')>('@nats-io/transport-node');

/** The transport's threshold: images this large carry their header as a NATS message header. */
const HEADER_APART_FROM_BYTES = 64 * 1024;
/** The transport's NATS message header for the frame header. */
const FRAME_HEADER_NAME = 'Itb-Frame';
/** Bound on reaching the server. */
const CONNECT_TIMEOUT_MS = 5000;
/** Bound on the round trip that confirms a subscription is in place on the server. */
const FLUSH_TIMEOUT_MS = 2000;
/** Bound on closing: nats.js first flushes what it queued, which a dead server may never take. */
const CLOSE_TIMEOUT_MS = 2000;

/** One connection to the broker, never reconnecting: a drop mid-run is a failure. */
function open(brokerUrl: string | undefined, name: string): Promise<NatsConnection> {
  if (brokerUrl === undefined) throw new Error('nats ceiling: no broker URL (nats://host:port)');
  return natsLibrary().connect({
    servers: brokerUrl,
    name,
    reconnect: false,
    timeout: CONNECT_TIMEOUT_MS,
    noRandomize: true,
    ignoreClusterUpdates: true,
  });
}

/** Confirms what was subscribed is in place on the server; closes the connection if it cannot. */
async function flushed(nc: NatsConnection, what: string): Promise<void> {
  try {
    await withTimeout(nc.flush(), FLUSH_TIMEOUT_MS, what);
  } catch (err) {
    await closeWithin(nc);
    throw err;
  }
}

/** Closes the connection, bounded. */
async function closeWithin(nc: NatsConnection): Promise<void> {
  if (!nc.isClosed()) await settlesWithin(nc.close(), CLOSE_TIMEOUT_MS);
}

/** A Buffer over a message's bytes, no copy. */
function bufferOf(data: Uint8Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** The nats transport's ceiling: a publish per image with the ack inbox as its reply subject. */
export const natsCeiling: CeilingPair = {
  transport: 'nats',
  how:
    '@nats-io/transport-node: nc.publish(subject, header+image or image with an Itb-Frame header, {reply: ' +
    'inbox}); the subscriber nc.publish(reply, ack)',
  async receive(options) {
    const nc = await open(options.brokerUrl, 'itb-ceiling-receiver');
    const { arrived, onImage } = options;
    nc.subscribe(options.channel, {
      callback: (err: Error | null, msg: Msg) => {
        // A subscription error comes with the connection's end; the sender's ack timeout reports it.
        if (err) return;
        const data = bufferOf(msg.data);
        const headers = msg.headers;
        const header = headers === undefined ? data : Buffer.from(headers.get(FRAME_HEADER_NAME), 'base64');
        const seq = headerSeq(header);
        arrived(seq);
        try {
          nc.publish(msg.reply ?? '', ceilingAck(seq));
        } catch {
          // Only a closed connection refuses it; nothing may throw into nats.js's parser.
          return;
        }
        onImage?.(seq, headers === undefined ? data.subarray(CEILING_HEADER_BYTES) : data);
      },
    });
    await flushed(nc, `nats ceiling: subscribing to ${options.channel}`);
    return { port: options.port, close: () => closeWithin(nc) };
  },
  async connect(options) {
    const nc = await open(options.brokerUrl, 'itb-ceiling-sender');
    const inbox = natsLibrary().createInbox(`${options.channel}.acks`);
    let closing = false;
    nc.subscribe(inbox, {
      callback: (err: Error | null, msg: Msg) => {
        if (err) return options.onFailure(`nats: ack subscription failed: ${err.message}`);
        // The server's "no responders" status has no data: nobody subscribes to the subject.
        if (msg.data.length < CEILING_ACK_BYTES)
          return options.onFailure(`nats: no receiver subscribes to ${options.channel}`);
        options.onAck(ackSeq(bufferOf(msg.data)));
      },
    });
    await flushed(nc, 'nats ceiling: subscribing to the ack inbox');
    void nc.closed().then((err) => {
      if (!closing) options.onFailure(`nats: connection closed${err ? `: ${err.message}` : ''}`);
    });
    // The form is the transport's choice for the run's image size. nats.js encodes the headers
    // during publish(), so one headers object and one options object serve every image.
    const frameHeaders = options.maxImageBytes >= HEADER_APART_FROM_BYTES ? natsLibrary().headers() : undefined;
    const publishOptions = { reply: inbox, headers: frameHeaders };
    return {
      send(_seq, header, image) {
        try {
          if (frameHeaders === undefined) {
            nc.publish(options.channel, Buffer.concat([header, image], header.length + image.length), publishOptions);
          } else {
            frameHeaders.set(FRAME_HEADER_NAME, header.toString('base64'));
            nc.publish(options.channel, image, publishOptions);
          }
        } catch (err) {
          // Over the server's max_payload, or the connection closed.
          options.onFailure(`nats: publish failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      },
      async close() {
        closing = true;
        await closeWithin(nc);
      },
    };
  },
};
