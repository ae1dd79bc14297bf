import type { Pair } from 'zeromq';
import { settlesWithin } from '../../shared/waits.js';
import { ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';
import {
  zeromqAddress,
  zeromqBoundPort,
  zeromqModule,
  zeromqReceiverOptions,
  zeromqSender,
  zeromqSenderOptions,
} from '../kit/ceiling-zeromq.js';

// zeromq.js v6, as the zeromq-pair transport: the receiver binds a PAIR, the sender connects a
// PAIR; each image is one two-part message [header, image], each ack one 12-byte message back on
// the same socket. The same high-water marks and part limit, without PLAIN, ZAP, heartbeats or the
// frame gate (and so without the ZAP credential message the transport's door has to avoid). The
// receiver has a context of its own, as the transport's does.

/** Bound on a closed socket's receive loop. */
const CLOSE_SETTLE_MS = 2000;

/** The zeromq-pair transport's ceiling: PAIR → PAIR, [header, image] out, the ack back on the same socket. */
export const zeromqPairCeiling: CeilingPair = {
  transport: 'zeromq-pair',
  how: 'zeromq.js v6: Pair.send([header, image]) → Pair; Pair.send(ack) back on the same socket',
  async receive(options) {
    const { Context, Pair } = await zeromqModule();
    // PAIR has no mandatory option: it waits at a full ack pipe anyway (it never drops).
    const pair: Pair = new Pair(zeromqReceiverOptions(options, new Context()));
    try {
      await pair.bind(zeromqAddress(options.bindHost, options.port === 0 ? '*' : options.port));
    } catch (err) {
      pair.close();
      throw err;
    }
    // The ack goes out before the next receive; it resolves at once below the mark, which a
    // window of acks never reaches (the sender reads them as they come).
    const receiving = (async () => {
      for await (const [header, image] of pair) {
        const seq = headerSeq(header!);
        options.arrived(seq);
        const sent = pair.send(ceilingAck(seq));
        options.onImage?.(seq, image!);
        await sent;
      }
    })().catch(() => undefined);
    return {
      port: zeromqBoundPort(pair, options.port),
      async close() {
        pair.close();
        await settlesWithin(receiving, CLOSE_SETTLE_MS);
      },
    };
  },
  async connect(options) {
    const { Pair } = await zeromqModule();
    return zeromqSender(new Pair(zeromqSenderOptions(options)), options, 'zeromq-pair');
  },
};
