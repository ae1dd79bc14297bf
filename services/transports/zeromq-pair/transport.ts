import type { Context, Pair } from 'zeromq';
import { once } from '../../shared/once.js';
import { settlesWithin } from '../../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import {
  bindListener,
  CLOSE_SETTLE_MS,
  connectOneSocket,
  dialerOptions,
  listenerOptions,
  observeListener,
  openZapDoor,
  serveFrames,
  tcpAddress,
  zeromqLibrary,
} from '../kit/zeromq.js';

// An exclusive pair: the receiver binds a PAIR socket on ZEROMQ_PAIR_PORT, the transmitter
// connects a PAIR. Each image is one two-part message [header, image] one way; each ack one
// 12-byte message the other way, on the same socket and connection. Everything else is zeromq.ts's
// (kit/zeromq.ts): PLAIN with the section's credential checked by the ZAP door during the
// handshake, the high-water marks, the per-part limit, heartbeats, the handshake bound.
// - One peer only. The door refuses a second transmitter first: the section admits CLIENTS × 1
//   connections and ZAP keeps a pass until the section ends. And were one let in, a PAIR socket has
//   one pipe: libzmq terminates the pipe of any later connection while the first one lasts, so that
//   peer completes its handshake, but nothing it sends is delivered and no ack reaches it (seen in
//   zeromq-pair.test.ts), with no error on either side. Hence maxClients and maxReceivers of 1.
// - No reconnection by another peer during a link: only once the first peer's connection is gone
//   (its transmitter closed, or heartbeats dropped it) does the PAIR take a new one, which is how
//   the next section's link gets in. The transmitter fails its link on a disconnect rather than let
//   libzmq reconnect behind the run's back.
// - The receive loop's wake-up: with ZAP's 200 naming a user id, about 1 link in 3 with 533 KB
//   images lost its receive loop before the first image: a receive woken for libzmq's credential
//   message fails with EAGAIN, which ends zeromq.js's iterator (kit/zeromq.ts's serveZap says why).
//   Waiting for both sides' handshake before the first send, or receive() instead of the iterator,
//   changed nothing in the same loop (24 of 60 and 30 of 60 lost); a ZAP 200 naming no user id
//   leaves no credential message, so the loop needs no timed polling. zeromq-pair.test.ts repeats
//   connect/send/receive to hold this.

/** Creates the transmitter's socket with the options connect() uses; exported for tests. */
export function createPairDialer(host: string, credentialText: string): Pair {
  return new (zeromqLibrary().Pair)(dialerOptions(host, credentialText));
}

/** Creates the receiver's socket with the options listen() uses; exported for tests. */
export function createPairListener(
  bindHost: string,
  maxImageBytes: number,
  idleTimeoutMs = 10_000,
  context?: Context,
): Pair {
  return new (zeromqLibrary().Pair)(listenerOptions(bindHost, maxImageBytes, idleTimeoutMs, context));
}

/** PAIR → PAIR, the dialling PAIR reading acks back (kit/zeromq.ts's connectOneSocket). */
function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  return connectOneSocket(options, createPairDialer, 'ZeroMQ PAIR', 'zeromq-pair');
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const address = tcpAddress(options.bindHost, options.port === 0 ? '*' : options.port);
  const zap = await openZapDoor(options, 'zeromq-pair');
  const pair = createPairListener(options.bindHost, options.maxImageBytes, options.idleTimeoutMs, zap.context);
  const eventsDone = observeListener(pair, options, 'zeromq-pair');
  const port = await bindListener(pair, address, zap, eventsDone, 'ZeroMQ PAIR receiver');
  options.log.debug({ endpoint: pair.lastEndpoint }, 'zeromq-pair receiver listening');
  // Images in and acks out on the one socket.
  const frames = serveFrames(pair, pair, options, 'zeromq-pair');
  return {
    port,
    close: once(async () => {
      frames.stop();
      // Acks already queued keep flushing for ACK_LINGER_MS in libzmq's I/O thread; the receive
      // loop and the observer end as soon as the socket is closed.
      pair.close();
      zap.stop();
      await settlesWithin(Promise.all([frames.done, eventsDone, zap.done]), CLOSE_SETTLE_MS);
    }),
  };
}

/** ZeroMQ PAIR (zeromq.js v6): one exclusive PAIR ↔ PAIR connection, [header, image] one way, acks back on it. */
export const zeromqPairTransport: Transport = {
  name: 'zeromq-pair',
  label: 'ZeroMQ PAIR',
  summary: {
    libraries: 'zeromq',
    image: 'PAIR → PAIR, `[header, image]`; one peer only (`CLIENTS` and `RECEIVERS` 1)',
    ack: 'on the same socket pair',
  },
  traits: {
    baseline: false,
    maxClients: {
      clients: 1,
      why:
        "a PAIR socket takes one peer: libzmq gives a second transmitter's connection no pipe, so nothing it " +
        'sends is read',
    },
    maxReceivers: {
      receivers: 1,
      why: 'a PAIR link is one exclusive transmitter-receiver connection; fan-out is for zeromq or zeromq-pubsub',
    },
  },
  library: {
    packages: ['zeromq'],
    nativeVersions: () => ({ libzmq: zeromqLibrary().version }),
  },
  deployment: {
    defaultRun: false,
    setting: { kind: 'port', envVar: 'ZEROMQ_PAIR_PORT', defaultPort: 5558 },
  },
  connect,
  listen,
};
