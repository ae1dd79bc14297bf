import type { Context, Reply, Router } from 'zeromq';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { hostPort } from '../../shared/net.js';
import type { ReceiverOptions } from '../contract.js';
import { lazyLibrary } from './library.js';

// What the ZeroMQ transports (zeromq: Dealer → Router, zeromq-pubsub: XPUB → SUB with a PUSH/PULL
// pair for acks) share: the library, the queue and part limits, the socket timings, the address
// and bound-port helpers, and the ZAP door every listener's context serves (a PLAIN password
// checked during the handshake, before libzmq takes any message). Each transport file keeps its
// sockets and how images and acks travel on them.

/** zeromq.js, loaded when a ZeroMQ transport is first used (kit/library.ts). */
export const zeromqLibrary = lazyLibrary<typeof import('zeromq')>('zeromq');

/**
 * High-water mark, in messages, on every queue in both directions. ZeroMQ counts messages, not
 * bytes: its default of 1000 would let MB-sized images pile up into gigabytes. The app never has
 * more than WINDOW images unacknowledged, so an honest sender never fills 64 unless WINDOW > 64,
 * and then send() simply waits (a Dealer blocks, the mandatory Router waits) instead of queueing
 * more. 64 still lets the I/O thread batch many small images per wake-up, where a mark of a few
 * messages would stall the pipe for 1 KB images. (A sender that ignores the window can still park
 * 64 x MAX_IMAGE_SIZE in the receiver's queue: libzmq has no byte-based limit.)
 */
export const HIGH_WATER_MARK_MESSAGES = 64;

/**
 * Smallest per-part size limit: libzmq applies ZMQ_MAXMSGSIZE to the handshake's own command
 * frames too (a READY is about 50 bytes; measured: a limit of 40 breaks the handshake), and a
 * frame header is 40 bytes. Acks (12 bytes) are held to this on the transmitter side.
 */
export const PART_LIMIT_FLOOR_BYTES = 4096;
/** Time the Router keeps flushing acks already queued when close() is called. */
export const ACK_LINGER_MS = 1000;
/** A transmitter that stops reading acks must not stall the receive loop for ever. */
export const ACK_SEND_TIMEOUT_MS = 5000;
/** Bound on waiting for a closed socket's loops to end. */
export const CLOSE_SETTLE_MS = 2000;
/** Where libzmq asks for a verdict on every handshake of a socket in the same context (RFC 27). */
export const ZAP_ENDPOINT = 'inproc://zeromq.zap.01';
/** The ZAP domain the receiver's Router asks in. */
export const ZAP_DOMAIN = 'itb';
/** PLAIN user name a transmitter presents; the credential is the password. */
export const PLAIN_USERNAME = 'itb';

/** `tcp://host:port` for libzmq, with brackets around an IPv6 literal. */
export function tcpAddress(host: string, port: number | '*'): string {
  return `tcp://${hostPort(host, port)}`;
}

/** Port libzmq actually bound, read from `tcp://host:port`. */
export function boundPort(router: Pick<Router, 'lastEndpoint'>, address: string): number {
  const endpoint = router.lastEndpoint;
  const port = endpoint === null ? NaN : Number(endpoint.slice(endpoint.lastIndexOf(':') + 1));
  if (!Number.isInteger(port) || port <= 0)
    throw new ItbError(ErrorCode.transport, `cannot tell the port ZeroMQ bound for ${address} (endpoint ${endpoint})`);
  return port;
}

/**
 * Answers libzmq's ZAP requests for every socket of `context`: PLAIN with the open section's
 * credential gets 200, anything else 400 (libzmq then closes the connection). The pass is kept
 * until the section ends: libzmq does not say which connection a later disconnect is.
 */
export async function serveZap(zap: Reply, options: Pick<ReceiverOptions, 'door'>): Promise<void> {
  for await (const request of zap) {
    const [version, requestId, domain, peerAddress, , mechanism, username, password] = request.map((part) =>
      part.toString(),
    );
    const from = `zeromq from ${peerAddress ?? '?'}`;
    const presented =
      mechanism === 'PLAIN' && domain === ZAP_DOMAIN && username === PLAIN_USERNAME ? password : undefined;
    const admitted = options.door.admit(presented, from, () => {}) !== undefined;
    await zap.send([
      version ?? '1.0',
      requestId ?? '',
      admitted ? '200' : '400',
      admitted ? 'OK' : 'not the open section',
      admitted ? PLAIN_USERNAME : '',
      '',
    ]);
  }
}

/** A listener's ZeroMQ context, with the ZAP handler that asks its door. */
export interface ZapDoor {
  context: Context;
  /** Settles when the handler has ended (after stop()). */
  done: Promise<void>;
  /** Closes the handler; the listener's sockets go first. */
  stop(): void;
}

/** Opens a context of its own for `name`'s listener and serves ZAP in it through `options.door`. */
export async function openZapDoor(options: ReceiverOptions, name: string): Promise<ZapDoor> {
  // A context of its own: the ZAP endpoint is one per context, and another listener (a test's
  // second receiver, the other ZeroMQ transport's) must keep its own.
  const { Context, Reply } = zeromqLibrary();
  const context = new Context();
  let stopped = false;
  const zap = new Reply({ context, linger: 0 });
  await zap.bind(ZAP_ENDPOINT);
  const done = serveZap(zap, options).catch((err: unknown) => {
    if (!stopped) options.log.error({ err: errorMessage(err) }, `${name} ZAP handler ended`);
  });
  return {
    context,
    done,
    stop() {
      stopped = true;
      zap.close();
    },
  };
}
