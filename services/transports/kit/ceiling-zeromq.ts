import { rm } from 'node:fs/promises';
import type { Dealer, Pair, Router, Socket } from 'zeromq';
import { settlesWithin } from '../../shared/waits.js';
import {
  ackSeq,
  CEILING_HEADER_BYTES,
  ceilingAck,
  headerSeq,
  type CeilingConnectOptions,
  type CeilingPair,
  type CeilingReceiveOptions,
  type CeilingReceiver,
  type CeilingSender,
} from '../ceiling-contract.js';

// zeromq.js v6, as the zeromq transport: a Dealer connects to a Router; each image is one
// two-part message [header, image], the Router sees [peer id, header, image] and answers
// [peer id, ack] on the same socket. The same high-water marks and part limit, without PLAIN,
// ZAP, heartbeats or the frame gate. The receiver has a context (and so an I/O thread) of its own,
// as the transport's does: in one process the two sides do not share one I/O thread.

/** High-water mark on every queue, in messages, as the transport's (HIGH_WATER_MARK_MESSAGES). */
export const ZEROMQ_HIGH_WATER_MARK = 64;
/**
 * Smallest part limit: libzmq holds the handshake's own command frames to it too (the transport's
 * PART_LIMIT_FLOOR_BYTES).
 */
export const ZEROMQ_PART_FLOOR_BYTES = 4096;
/** Bound on the handshake (or subscription) a sender waits for, and on a closed socket's loops. */
export const ZEROMQ_START_BOUND_MS = 10_000;
const CLOSE_SETTLE_MS = 2000;

/** The library, loaded when a ZeroMQ pair is first used: the ceiling table loads without the native addon. */
export function zeromqModule(): Promise<typeof import('zeromq')> {
  return import('zeromq');
}

/** `tcp://host:port`, with brackets around an IPv6 literal. */
export function zeromqAddress(host: string, port: number | '*'): string {
  return `tcp://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The port libzmq bound, from its last endpoint. */
export function zeromqBoundPort(socket: { lastEndpoint: string | null }, fallback: number): number {
  const endpoint = socket.lastEndpoint;
  const port = endpoint === null ? NaN : Number(endpoint.slice(endpoint.lastIndexOf(':') + 1));
  return Number.isInteger(port) && port > 0 ? port : fallback;
}

/**
 * One send pending per socket (zeromq v6): messages wait here, by reference, until the previous
 * send resolved. `send` is what the driver calls; a rejected send is the link's failure.
 */
export function zeromqSendChain(
  socket: { send(message: Buffer[]): Promise<void> },
  onFailure: (reason: string) => void,
): (header: Buffer, image: Buffer) => void {
  const held: Buffer[][] = [];
  let sending = false;
  const next = (): void => {
    const message = held.shift();
    if (message === undefined) {
      sending = false;
      return;
    }
    socket.send(message).then(next, (err: unknown) => {
      held.length = 0;
      onFailure(`send failed: ${err instanceof Error ? err.message : String(err)}`);
    });
  };
  return (header, image) => {
    held.push([header, image]);
    if (sending) return;
    sending = true;
    next();
  };
}

/**
 * Resolves at the socket's first handshake and reports a later disconnect (libzmq would reconnect
 * quietly, and what was in flight is gone); closes the socket and rejects when no handshake comes
 * within ZEROMQ_START_BOUND_MS, or when the socket is closed first. The loop ends with the socket.
 */
export function zeromqHandshake(socket: Socket, what: string, onFailure: (reason: string) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let shaken = false;
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`${what}: no ZMTP handshake within ${ZEROMQ_START_BOUND_MS} ms`));
    }, ZEROMQ_START_BOUND_MS);
    void (async () => {
      for await (const event of socket.events) {
        if (event.type === 'handshake' && !shaken) {
          shaken = true;
          clearTimeout(timer);
          resolve();
        } else if (event.type === 'disconnect' && shaken) onFailure(`${what}: connection lost`);
      }
    })()
      .catch(() => undefined)
      .finally(() => {
        // The socket closed (the events end with it): before a handshake, this wait is over too.
        clearTimeout(timer);
        if (!shaken) reject(new Error(`${what}: socket closed before its ZMTP handshake`));
      });
  });
}

/** Options of a receiver socket that reads [header, image] and answers acks on the same socket. */
export function zeromqReceiverOptions(options: CeilingReceiveOptions, context: import('zeromq').Context) {
  return {
    context,
    sendHighWaterMark: ZEROMQ_HIGH_WATER_MARK,
    receiveHighWaterMark: ZEROMQ_HIGH_WATER_MARK,
    // Raised to the largest part, the image (the header is a part of its own).
    maxMessageSize: Math.max(options.maxImageBytes + CEILING_HEADER_BYTES, ZEROMQ_PART_FLOOR_BYTES),
    linger: 0,
    ipv6: options.bindHost.includes(':'),
  };
}

/** Options of a sender socket that dials one receiver and reads acks back on the same socket. */
export function zeromqSenderOptions(options: CeilingConnectOptions) {
  return {
    sendHighWaterMark: ZEROMQ_HIGH_WATER_MARK,
    receiveHighWaterMark: ZEROMQ_HIGH_WATER_MARK,
    // Queue only to a connection whose handshake is done.
    immediate: true,
    linger: 0,
    ipv6: options.host.includes(':'),
  };
}

/**
 * The sender side over `socket` (a Dealer or a PAIR): connects it, waits for the handshake, reads
 * one-part acks and sends [header, image] one at a time.
 */
export async function zeromqSender(
  socket: Dealer | Pair,
  options: CeilingConnectOptions,
  transport: string,
  address = zeromqAddress(options.host, options.port),
): Promise<CeilingSender> {
  let closing = false;
  const fail = (reason: string): void => {
    if (!closing) options.onFailure(`${transport}: ${reason}`);
  };
  const shaken = zeromqHandshake(socket, address, fail);
  socket.connect(address);
  await shaken;
  const acking = (async () => {
    for await (const [ack] of socket) options.onAck(ackSeq(ack!));
  })().catch((err: unknown) => fail(`ack loop ended: ${err instanceof Error ? err.message : String(err)}`));
  const send = zeromqSendChain(socket, fail);
  return {
    send(_seq, header, image) {
      send(header, image);
    },
    async close() {
      closing = true;
      socket.close();
      await settlesWithin(acking, CLOSE_SETTLE_MS);
    },
  };
}

/**
 * A Dealer → Router ceiling, [header, image] out, [peer id, ack] back, between the addresses `bindAt` and `dialAt`
 * give (tcp:// for zeromq, ipc:// for zeromq-ipc).
 */
export function routerCeiling(
  transport: string,
  how: string,
  bindAt: (options: CeilingReceiveOptions) => string,
  dialAt: (options: CeilingConnectOptions) => string,
): CeilingPair {
  return {
    transport,
    how,
    receive: (options) => receiveOnRouter(options, bindAt(options)),
    async connect(options) {
      const { Dealer } = await zeromqModule();
      return zeromqSender(new Dealer(zeromqSenderOptions(options)), options, transport, dialAt(options));
    },
  };
}

async function receiveOnRouter(options: CeilingReceiveOptions, address: string): Promise<CeilingReceiver> {
  const { Context, Router } = await zeromqModule();
  const router: Router = new Router({
    ...zeromqReceiverOptions(options, new Context()),
    // Wait at a full ack pipe rather than drop the ack.
    mandatory: true,
  });
  // A file left by an earlier ipc:// run nobody listens on any more (the runner names each run's).
  if (address.startsWith('ipc://')) await rm(address.slice('ipc://'.length), { force: true });
  try {
    await router.bind(address);
  } catch (err) {
    router.close();
    throw err;
  }
  // The ack goes out before the next receive; it resolves at once below the mark, which a
  // window of acks never reaches (the sender reads them as they come).
  const receiving = (async () => {
    for await (const [peer, header, image] of router) {
      const seq = headerSeq(header!);
      options.arrived(seq);
      const sent = router.send([peer!, ceilingAck(seq)]);
      options.onImage?.(seq, image!);
      await sent;
    }
  })().catch(() => undefined);
  return {
    port: address.startsWith('ipc://') ? options.port : zeromqBoundPort(router, options.port),
    async close() {
      router.close();
      await settlesWithin(receiving, CLOSE_SETTLE_MS);
    },
  };
}
