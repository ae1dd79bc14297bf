import type { Context, Dealer, Pair, Pull, Push, Reply, Router, Socket, Subscriber } from 'zeromq';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { ACK_BYTES, decodeAck, encodeAck } from '../../core/wire/frame.js';
import { hostPort } from '../../shared/net.js';
import { settlesWithin } from '../../shared/waits.js';
import type { ReceiverOptions, TransmitterLink, TransmitterOptions } from '../contract.js';
import { connectWithin } from './connect.js';
import { frameGate } from './gate.js';
import { lazyLibrary } from './library.js';
import { LinkGuard } from './link-guard.js';
import { SendQueue } from './send-queue.js';

// What the ZeroMQ transports (zeromq: Dealer → Router, zeromq-pubsub: XPUB → SUB with a PUSH/PULL
// pair for acks, zeromq-pair: PAIR ↔ PAIR) share: the library, the queue and part limits, the
// socket timings, the address and bound-port helpers, the ZAP door every listener's context serves
// (a PLAIN password checked during the handshake, before libzmq takes any message), and the pieces
// of a one-socket link both zeromq and zeromq-pair are made of (socket options, the bounded
// handshake, the observers, the ack loop, the bind). Each transport file keeps its sockets and how
// images and acks travel on them.

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

/**
 * Options of a transmitter socket that dials one listener and reads only acks back: PLAIN with the
 * section's credential, the common marks, and a part limit that fits acks and ZMTP commands only.
 */
export function dialerOptions(host: string, credentialText: string) {
  return {
    plainUsername: PLAIN_USERNAME,
    plainPassword: credentialText,
    sendHighWaterMark: HIGH_WATER_MARK_MESSAGES,
    receiveHighWaterMark: HIGH_WATER_MARK_MESSAGES,
    // Queue only to a connection whose handshake is done: after a disconnect, send() waits
    // instead of parking images in a pipe for a reconnect the run has already failed.
    immediate: true,
    // Acks are 12 bytes: a peer announcing more is not our receiver and is dropped unread.
    maxMessageSize: PART_LIMIT_FLOOR_BYTES,
    // The link is closed only once every ack is in or the section has failed: nothing queued
    // is worth keeping.
    linger: 0,
    ipv6: host.includes(':'),
  };
}

/** Options every listener socket takes: ZAP through `context`'s door, bounded handshakes, heartbeats. */
export function zapServerOptions(bindHost: string, idleTimeoutMs: number, context?: Context) {
  return {
    ...(context === undefined ? {} : { context }),
    // Every handshake goes through the ZAP handler of the socket's context.
    plainServer: true,
    zapDomain: ZAP_DOMAIN,
    handshakeInterval: idleTimeoutMs,
    // A PING every half of the bound, and a peer that sends nothing in the next half is dropped.
    heartbeatInterval: Math.ceil(idleTimeoutMs / 2),
    heartbeatTimeout: Math.ceil(idleTimeoutMs / 2),
    ipv6: bindHost.includes(':'),
  };
}

/**
 * Options of a listener socket that takes images and answers acks on the same socket: the common
 * marks, the part limit of the largest image, a bounded wait on acks.
 */
export function listenerOptions(bindHost: string, maxImageBytes: number, idleTimeoutMs: number, context?: Context) {
  return {
    ...zapServerOptions(bindHost, idleTimeoutMs, context),
    sendHighWaterMark: HIGH_WATER_MARK_MESSAGES,
    receiveHighWaterMark: HIGH_WATER_MARK_MESSAGES,
    // libzmq checks each part's announced length before allocating it and drops the peer
    // when it is over: no part may be larger than the largest valid image.
    maxMessageSize: Math.max(maxImageBytes, PART_LIMIT_FLOOR_BYTES),
    // A transmitter that stops reading acks must not stall the ack queue for ever.
    sendTimeout: ACK_SEND_TIMEOUT_MS,
    linger: ACK_LINGER_MS,
  };
}

/**
 * One connect attempt of `socket` to `address`: resolves with the socket once the ZMTP handshake is
 * done (a TCP connect alone would accept any listener); a ZAP refusal rejects with ITB_ERR_REFUSED,
 * the end of `timeoutMs` with the last problem seen. The socket is closed whenever it rejects.
 */
export function handshakeWithin<S extends Socket>(
  socket: S,
  address: string,
  timeoutMs: number,
  log: TransmitterOptions['log'],
  name: string,
): Promise<S> {
  let lastProblem = 'nothing answered yet';
  return new Promise<S>((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(lastProblem));
    }, timeoutMs);
    // The observer must exist before connect() or the first events are missed; it stops at the
    // handshake (the link takes the events over then) and ends by itself when the socket closes.
    void (async () => {
      for await (const event of socket.events) {
        if (event.type === 'handshake') {
          clearTimeout(timer);
          resolve(socket);
          return;
        }
        if (event.type === 'handshake:error:auth') {
          // The receiver's ZAP handler refused the credential: another attempt would be refused too.
          clearTimeout(timer);
          socket.close();
          reject(
            new ItbError(
              ErrorCode.refused,
              `the receiver refused this section's credential (ZAP ` +
                ((event as { error?: { status?: number } }).error?.status ?? 'error') +
                `; its log says why)`,
            ),
          );
          return;
        }
        if (event.type === 'connect:retry') lastProblem = 'connection refused or lost, retrying';
        else if (event.type === 'disconnect') lastProblem = 'peer closed the connection during the handshake';
        else if (event.type.startsWith('handshake:error'))
          lastProblem = `ZMTP handshake failed: ${(event as { error?: Error }).error?.message ?? event.type}`;
      }
    })().catch((err: unknown) => log.debug({ err }, `${name} transmitter handshake observer ended`));
    socket.connect(address);
  });
}

/**
 * Fails the link when its one connection drops: libzmq would reconnect quietly, but images in
 * flight on the old connection are gone with it. Ends when the socket closes.
 */
export function failOnDisconnect(socket: Socket, guard: LinkGuard, log: TransmitterOptions['log'], name: string) {
  return (async () => {
    for await (const event of socket.events) {
      if (event.type === 'disconnect') guard.failWith('connection lost');
    }
  })().catch((err: unknown) => log.debug({ err }, `${name} transmitter event observer ended`));
}

/** Reads 12-byte one-part acks from `socket` into the link until the socket closes; anything else fails the link. */
export function readAcks(
  socket: Dealer | Pair | Pull,
  guard: LinkGuard,
  onAck: TransmitterOptions['onAck'],
): Promise<void> {
  return (async () => {
    for await (const parts of socket) {
      const [part] = parts;
      if (parts.length !== 1 || part === undefined || part.length !== ACK_BYTES) {
        guard.failWith(`malformed ack (${parts.length} parts, first of ${part?.length ?? 0} bytes)`);
        continue;
      }
      guard.ack(onAck, decodeAck(part));
    }
  })().catch((err: unknown) => guard.failWith(`ack loop ended: ${errorMessage(err)}`, err));
}

/**
 * The transmitter link over one socket that sends [header, image] and reads acks back on the same
 * connection (zeromq's Dealer, zeromq-pair's PAIR): connected within connectTimeoutMs, failed on a
 * disconnect or a malformed ack. `label` names it in messages ("ZeroMQ"), `name` in logs; `address` is the
 * receiver's tcp:// (by default) or ipc:// endpoint.
 */
export async function connectOneSocket(
  options: TransmitterOptions,
  create: (host: string, credentialText: string) => Dealer | Pair,
  label: string,
  name: string,
  address = tcpAddress(options.host, options.port),
): Promise<TransmitterLink> {
  const where = address.slice(address.indexOf('://') + 3);
  // libzmq retries a refused connection itself, so one attempt spans the budget.
  const socket = await connectWithin(
    `${label} ${where}`,
    options.connectTimeoutMs,
    (remainingMs) =>
      handshakeWithin(create(options.host, options.credential.text), address, remainingMs, options.log, name),
    (late) => late.close(),
  );
  const guard = new LinkGuard(options.onFailure, `${label} link to ${where}`);
  options.log.debug({ address }, `${name} transmitter connected`);
  // (The receiver also drops a peer that sent a part over its limit: a disconnect too.)
  const eventsDone = failOnDisconnect(socket, guard, options.log, name);
  const acksDone = readAcks(socket, guard, options.onAck);
  // zeromq v6 allows one pending send per socket: the queue hands over the next frame only once
  // the previous send resolved. Parts over 128 bytes go zero-copy, which the contract permits.
  const queue = new SendQueue(
    (header, payload) => socket.send([header, payload]),
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, async () => {
    socket.close();
    await settlesWithin(Promise.all([acksDone, eventsDone]), CLOSE_SETTLE_MS);
  });
}

/** SendQueue hands over two parts; an ack is one message of one part, and this fills the other slot. */
const UNUSED_PART = Buffer.alloc(0);

/** A listener's receive loop, from serveFrames(). */
export interface FramesLoop {
  /** Settles when the loop has ended (its socket closed). */
  done: Promise<void>;
  /** Stops the acks and quiets the loop's errors: the listener is closing and closes the sockets next. */
  stop(): void;
}

/**
 * Reads [header, image] messages from `images` through the frame gate and sends each ack, one
 * 12-byte message, on `acks` (the same socket for PAIR, a PUSH for PUB/SUB). Acks go through a queue
 * of their own, in order, and the loop never waits on one; an ack not sent within the socket's
 * sendTimeout (no transmitter reading) is logged and the next one tried: the listener outlives its
 * peers, and the next section's must get its acks.
 */
export function serveFrames(
  images: Pair | Subscriber,
  acks: Pair | Push,
  options: ReceiverOptions,
  name: string,
): FramesLoop {
  let closing = false;
  const gate = frameGate(options, name);
  const ackQueue = new SendQueue(
    (ack) =>
      acks.send(ack).catch((err: unknown) => {
        if (!closing)
          options.log.warn({ err: errorMessage(err) }, `${name} ack not sent (no transmitter reading acks)`);
      }),
    () => {},
  );
  const done = (async () => {
    for await (const parts of images) {
      const [headerBytes, payload] = parts;
      if (parts.length !== 2 || headerBytes === undefined || payload === undefined) {
        gate.reject(`message has ${parts.length} parts, expected 2 (header, image)`);
        continue;
      }
      const ack = gate.frame(headerBytes, payload);
      if (ack !== undefined) ackQueue.push(encodeAck(ack), UNUSED_PART);
    }
  })().catch((err: unknown) => {
    if (!closing) options.log.error({ err }, `${name} receive loop ended`);
  });
  return {
    done,
    stop() {
      closing = true;
      ackQueue.stop();
    },
  };
}

/**
 * Logs a listener socket's peers and counts those that never reach ZAP as refused (a peer that
 * does not even offer PLAIN, or is not of a matching socket type). Ends when the socket closes.
 * The socket cannot tell a peer that closed from one libzmq dropped for a part over
 * maxMessageSize (both are a bare 'disconnect'); the transmitter sees the latter as a failure.
 */
export function observeListener(socket: Socket, options: ReceiverOptions, name: string): Promise<void> {
  return (async () => {
    for await (const event of socket.events) {
      if (event.type === 'accept') options.log.debug({ address: event.address }, `${name} receiver accepted a peer`);
      else if (event.type === 'handshake:error:protocol' || event.type === 'handshake:error:other') {
        options.door.refuse(
          `${name} from a peer of ${event.address}`,
          `handshake failed (${errorMessage(event.error)}): connection refused`,
        );
      } else if (event.type === 'disconnect') {
        options.log.info(
          { address: event.address },
          `${name} peer disconnected (closed, or dropped for a message part over MAX_IMAGE_SIZE)`,
        );
      }
    }
  })().catch((err: unknown) => options.log.debug({ err }, `${name} receiver event observer ended`));
}

/**
 * Binds a listener's socket to `address` and returns the port bound (0 for ipc://); when it cannot, closes the
 * socket and the ZAP door, waits for `observed` (the socket's observer) and throws naming the address.
 */
export async function bindListener(
  socket: Socket & Pick<Router, 'lastEndpoint'>,
  address: string,
  zap: ZapDoor,
  observed: Promise<void>,
  label: string,
): Promise<number> {
  try {
    await socket.bind(address);
  } catch (err) {
    socket.close();
    zap.stop();
    await settlesWithin(Promise.all([observed, zap.done]), CLOSE_SETTLE_MS);
    throw new ItbError(ErrorCode.transport, `cannot bind ${label} to ${address}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
  // An ipc:// endpoint is a socket file: no port.
  return address.startsWith('tcp://') ? boundPort(socket, address) : 0;
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
 * The 200 names no user id, on purpose. With one, libzmq puts a "credential" message carrying it
 * into the connection's pipe just ahead of the first message's parts, and flushes it alone while
 * a large first image is still arriving. A PAIR socket's ZMQ_EVENTS counts that credential as
 * POLLIN (a ROUTER's does not: it reads ahead), so zeromq.js wakes its pending receive;
 * zmq_msg_recv then skips the credential, finds the first message incomplete and fails with
 * EAGAIN, and zeromq.js's iterator ends the receive loop on that error. Measured in a raw
 * zeromq.js loop: 16 links of 50 with three 533 KB images lost their loop so, none with the id
 * left empty. Nothing reads the id: zeromq.js has no way to get a message's metadata.
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
      // No user id even on 200: see above.
      '',
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
