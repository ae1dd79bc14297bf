import type { Msg } from '@nats-io/transport-node';
import { CEILING_HEADER_BYTES, ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';
import { flushed, openCeilingNats, openCeilingSender } from '../kit/ceiling-nats.js';
import { bufferOf, closeConnection, FRAME_HEADER_NAME, HEADER_APART_FROM_BYTES, natsLibrary } from '../kit/nats.js';

// Core NATS (@nats-io/transport-node), as the nats transport: each image one message on this run's
// subject (options.channel) whose reply subject is the sender's ack inbox (one subscription); the
// receiver publishes the 12-byte ack to the reply subject at once. Header and image travel as the
// transport carries them: below HEADER_APART_FROM_BYTES concatenated as the data (one copy, the
// transport's too), from it on the header as an `Itb-Frame` NATS message header in base64 and the
// image alone as the data. One publisher's messages reach the subscriber in order. No section
// subjects, no gate, no status watch beyond the connection's end; reconnect off, as the transport.

/** The nats transport's ceiling: a publish per image with the ack inbox as its reply subject. */
export const natsCeiling: CeilingPair = {
  transport: 'nats',
  how:
    '@nats-io/transport-node: nc.publish(subject, header+image or image with an Itb-Frame header, {reply: ' +
    'inbox}); the subscriber nc.publish(reply, ack)',
  async receive(options) {
    const nc = await openCeilingNats(options.brokerUrl, 'nats', 'itb-ceiling-receiver');
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
    return { port: options.port, close: () => closeConnection(nc) };
  },
  async connect(options) {
    // The server's "no responders" status has no data: nobody subscribes to the subject.
    const sender = await openCeilingSender(options, 'nats', `no receiver subscribes to ${options.channel}`);
    const { nc, inbox } = sender;
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
      close: () => sender.close(),
    };
  },
};
