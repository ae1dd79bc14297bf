import type { Context, Dealer, Router } from 'zeromq';
import { encodeAck } from '../../core/wire/frame.js';
import { once } from '../../shared/once.js';
import { settlesWithin } from '../../shared/waits.js';
import type { ReceiverListener, ReceiverOptions } from '../contract.js';
import { frameGate } from './gate.js';
import { SendQueue } from './send-queue.js';
import {
  bindListener,
  CLOSE_SETTLE_MS,
  dialerOptions,
  listenerOptions,
  observeListener,
  openZapDoor,
  zeromqLibrary,
} from './zeromq.js';

// The transmitter's Dealer connects to the receiver's Router on one port. Each image is one
// two-part message [header, image]; the Router sees [peer id, header, image] and answers
// [peer id, ack]. One socket pair carries both directions, so there is one port and one
// connection to watch, and the Router knows where each ack goes without any bookkeeping.
// Who gets in is ZAP's to say (RFC 27): the Dealer presents its section's credential as a PLAIN
// password, and the listener's ZAP handler asks the door during the handshake, before libzmq
// takes any message from the peer. PLAIN, not CURVE: CURVE would encrypt every image, a cost
// that belongs to no transport's figures here. libzmq has no connection cap: a connection that
// does not finish its handshake within IMAGE_TIMEOUT_MS is dropped (holding only its handshake
// until then), and heartbeats drop a peer that falls silent, in the middle of a message included.

/** Creates the transmitter's socket with the options connect() uses; exported for tests. */
export function createDealer(host: string, credentialText: string): Dealer {
  return new (zeromqLibrary().Dealer)(dialerOptions(host, credentialText));
}

/** Creates the receiver's socket with the options listen() uses; exported for tests. */
export function createRouter(
  bindHost: string,
  maxImageBytes: number,
  idleTimeoutMs = 10_000,
  context?: Context,
): Router {
  return new (zeromqLibrary().Router)({
    ...listenerOptions(bindHost, maxImageBytes, idleTimeoutMs, context),
    // Wait on a full ack pipe instead of silently dropping the ack (and fail, rather than drop,
    // for a peer that is gone).
    mandatory: true,
  });
}

/**
 * The receiver's Router bound to `address` (tcp://, or zeromq-ipc's ipc://) for the transport named `name`; `bound`
 * runs once it is bound (an ipc:// socket file is restricted there), `closed` once it is closed.
 */
export async function listenRouter(
  options: ReceiverOptions,
  address: string,
  name: string,
  hooks: { bound?: () => Promise<void>; closed?: () => Promise<void> } = {},
): Promise<ReceiverListener> {
  let closing = false;
  const zap = await openZapDoor(options, name);
  const router = createRouter(options.bindHost, options.maxImageBytes, options.idleTimeoutMs, zap.context);
  const eventsDone = observeListener(router, options, name);
  const port = await bindListener(router, address, zap, eventsDone, `${name} receiver`);
  try {
    await hooks.bound?.();
  } catch (err) {
    router.close();
    zap.stop();
    await settlesWithin(Promise.all([eventsDone, zap.done]), CLOSE_SETTLE_MS);
    await hooks.closed?.();
    throw err;
  }
  options.log.debug({ endpoint: router.lastEndpoint }, `${name} receiver listening`);

  const gate = frameGate(options, name);
  // Acks go out through a queue of their own: the receive loop never waits on an ack send (one
  // pending send per socket), and acks keep their order.
  const acks = new SendQueue(
    (peer, ack) => router.send([peer, ack]),
    (err) => {
      if (!closing) options.log.warn({ err }, `${name} ack not sent (peer gone, or not reading acks)`);
    },
  );

  const receiveDone = (async () => {
    for await (const parts of router) {
      const [peer, headerBytes, payload] = parts;
      if (parts.length !== 3 || peer === undefined || headerBytes === undefined || payload === undefined) {
        gate.reject(`message has ${parts.length - 1} parts, expected 2 (header, image)`);
        continue;
      }
      const ack = gate.frame(headerBytes, payload);
      if (ack !== undefined) acks.push(peer, encodeAck(ack));
    }
  })().catch((err: unknown) => {
    if (!closing) options.log.error({ err }, `${name} receive loop ended`);
  });

  return {
    port,
    close: once(async () => {
      closing = true;
      acks.stop();
      // Acks already queued keep flushing for ACK_LINGER_MS in libzmq's I/O thread; the
      // receive loop and the observer end as soon as the socket is closed.
      router.close();
      zap.stop();
      await settlesWithin(Promise.all([receiveDone, eventsDone, zap.done]), CLOSE_SETTLE_MS);
      await hooks.closed?.();
    }),
  };
}
