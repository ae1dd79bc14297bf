import type { Pull, Push, Subscriber, XPublisher } from 'zeromq';
import { settlesWithin } from '../../shared/waits.js';
import { ackSeq, CEILING_HEADER_BYTES, ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';
import {
  ZEROMQ_HIGH_WATER_MARK,
  ZEROMQ_PART_FLOOR_BYTES,
  ZEROMQ_START_BOUND_MS,
  zeromqAddress,
  zeromqBoundPort,
  zeromqHandshake,
  zeromqModule,
  zeromqSendChain,
} from '../kit/ceiling-zeromq.js';

// zeromq.js v6, as the zeromq-pubsub transport: the receiver binds a SUB (subscribed to
// everything) on the port and a PUSH for acks on the port + 1; the sender connects an XPUB to the
// SUB and a PULL to the PUSH. Each image is one two-part message [header, image], each ack one
// 12-byte message. connect() resolves only once the SUB's subscription has reached the XPUB:
// before that the XPUB would drop every image (the slow joiner). The transport's marks, the
// XPUB's raised for a window over 64 so that nothing is dropped (see connect()); no PLAIN, ZAP,
// heartbeats or frame gate. The receiver has a context (an I/O thread) of its own, as the
// transport's does.

/** The ack socket's port is the image port plus this, as the transport's. */
const ACK_PORT_OFFSET = 1;
const CLOSE_SETTLE_MS = 2000;

/** The zeromq-pubsub transport's ceiling: XPUB → SUB for [header, image], acks PUSH → PULL on the port + 1. */
export const zeromqPubsubCeiling: CeilingPair = {
  transport: 'zeromq-pubsub',
  how:
    'zeromq.js v6: XPUB.send([header, image]) → SUB on the port (after its subscription came up); acks PUSH → ' +
    'PULL on the port + 1',
  async receive(options) {
    const { Context, Push, Subscriber } = await zeromqModule();
    const context = new Context();
    const ipv6 = options.bindHost.includes(':');
    const subscriber: Subscriber = new Subscriber({
      context,
      receiveHighWaterMark: ZEROMQ_HIGH_WATER_MARK,
      maxMessageSize: Math.max(options.maxImageBytes + CEILING_HEADER_BYTES, ZEROMQ_PART_FLOOR_BYTES),
      linger: 0,
      ipv6,
    });
    subscriber.subscribe();
    // Blocks at its mark, never drops an ack.
    const acks: Push = new Push({ context, sendHighWaterMark: ZEROMQ_HIGH_WATER_MARK, linger: 0, ipv6 });
    let port: number;
    try {
      await subscriber.bind(zeromqAddress(options.bindHost, options.port === 0 ? '*' : options.port));
      port = zeromqBoundPort(subscriber, options.port);
      await acks.bind(zeromqAddress(options.bindHost, port + ACK_PORT_OFFSET));
    } catch (err) {
      subscriber.close();
      acks.close();
      throw err;
    }
    // The ack goes out before the next receive: PUSH takes it at once below its mark, which a
    // window of acks never reaches (the sender reads them as they come).
    const receiving = (async () => {
      for await (const [header, image] of subscriber) {
        const seq = headerSeq(header!);
        options.arrived(seq);
        const sent = acks.send(ceilingAck(seq));
        options.onImage?.(seq, image!);
        await sent;
      }
    })().catch(() => undefined);
    return {
      port,
      async close() {
        subscriber.close();
        acks.close();
        await settlesWithin(receiving, CLOSE_SETTLE_MS);
      },
    };
  },
  async connect(options) {
    const { Pull, XPublisher } = await zeromqModule();
    const ipv6 = options.host.includes(':');
    const publisher: XPublisher = new XPublisher({
      // The transport's mark (twice the common one), and twice any wider window: libzmq credits the
      // reads of a pipe to its writer only every half mark, so a pipe can look full with about half
      // a mark really waiting, and an XPUB drops there (the transport does above WINDOW=64, and
      // counts the loss; a ceiling run would stall).
      sendHighWaterMark: Math.max(2 * ZEROMQ_HIGH_WATER_MARK, 2 * options.window),
      receiveHighWaterMark: ZEROMQ_HIGH_WATER_MARK,
      // Publish only to a connection whose handshake is done.
      immediate: true,
      // The wait for the subscription below ends here at the latest.
      receiveTimeout: ZEROMQ_START_BOUND_MS,
      linger: 0,
      ipv6,
    });
    const acks: Pull = new Pull({ receiveHighWaterMark: ZEROMQ_HIGH_WATER_MARK, immediate: true, linger: 0, ipv6 });
    const imageAddress = zeromqAddress(options.host, options.port);
    const ackAddress = zeromqAddress(options.host, options.port + ACK_PORT_OFFSET);
    let closing = false;
    const fail = (reason: string): void => {
      if (!closing) options.onFailure(`zeromq-pubsub: ${reason}`);
    };
    const ackShaken = zeromqHandshake(acks, ackAddress, fail);
    const imageShaken = zeromqHandshake(publisher, imageAddress, fail);
    publisher.connect(imageAddress);
    acks.connect(ackAddress);
    try {
      // The SUB's one subscription (to everything) is the first message an XPUB hands over.
      await Promise.all([publisher.receive(), ackShaken, imageShaken]);
    } catch (err) {
      publisher.close();
      acks.close();
      throw err;
    }
    const acking = (async () => {
      for await (const [ack] of acks) options.onAck(ackSeq(ack!));
    })().catch((err: unknown) => fail(`ack loop ended: ${err instanceof Error ? err.message : String(err)}`));
    const send = zeromqSendChain(publisher, fail);
    return {
      send(_seq, header, image) {
        send(header, image);
      },
      async close() {
        closing = true;
        publisher.close();
        acks.close();
        await settlesWithin(acking, CLOSE_SETTLE_MS);
      },
    };
  },
};
