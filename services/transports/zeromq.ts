import { Dealer, Router } from 'zeromq';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { decodeAck, decodeFrameHeader, encodeAck, type Ack, type FrameHeader } from '../core/frame.js';
import { settlesWithin } from '../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from './contract.js';

// The transmitter's Dealer connects to the receiver's Router on one port. Each image is one
// two-part message [header, image]; the Router sees [peer id, header, image] and answers
// [peer id, ack]. One socket pair carries both directions, so there is one port and one
// connection to watch, and the Router knows where each ack goes without any bookkeeping.

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
const PART_LIMIT_FLOOR_BYTES = 4096;
/** Time the Router keeps flushing acks already queued when close() is called. */
const ACK_LINGER_MS = 1000;
/** A transmitter that stops reading acks must not stall the receive loop for ever. */
const ACK_SEND_TIMEOUT_MS = 5000;
/** Bound on waiting for a closed socket's loops to end. */
const CLOSE_SETTLE_MS = 2000;

/** `tcp://host:port` for libzmq, with brackets around an IPv6 literal. */
function tcpAddress(host: string, port: number | '*'): string {
  return `tcp://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Creates the transmitter's socket with the options connect() uses; exported for tests. */
export function createDealer(host: string): Dealer {
  return new Dealer({
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
  });
}

/** Creates the receiver's socket with the options listen() uses; exported for tests. */
export function createRouter(bindHost: string, maxImageBytes: number): Router {
  return new Router({
    sendHighWaterMark: HIGH_WATER_MARK_MESSAGES,
    receiveHighWaterMark: HIGH_WATER_MARK_MESSAGES,
    // libzmq checks each part's announced length before allocating it and drops the peer
    // when it is over: no part may be larger than the largest valid image.
    maxMessageSize: Math.max(maxImageBytes, PART_LIMIT_FLOOR_BYTES),
    // Wait on a full ack pipe instead of silently dropping the ack (and fail, rather than drop,
    // for a peer that is gone).
    mandatory: true,
    sendTimeout: ACK_SEND_TIMEOUT_MS,
    linger: ACK_LINGER_MS,
    ipv6: bindHost.includes(':'),
  });
}

/** Waits for the ZMTP handshake (a TCP connect alone would accept any listener). */
async function awaitHandshake(handshake: Promise<void>, where: string, timeoutMs: number, lastProblem: () => string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ItbError(ErrorCode.timeout, `no ZeroMQ connection to ${where} within ${timeoutMs} ms (${lastProblem()})`)),
      timeoutMs,
    );
  });
  try {
    await Promise.race([handshake, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const address = tcpAddress(options.host, options.port);
  const where = address.slice('tcp://'.length);
  const dealer = createDealer(options.host);
  let connected = false;
  let closing = false;
  let failure: Error | undefined;
  const fail = (err: Error): void => {
    if (closing || failure) return;
    failure = err;
    options.onFailure(err);
  };

  let lastProblem = 'nothing answered yet';
  let handshaken!: () => void;
  const handshake = new Promise<void>((resolve) => {
    handshaken = resolve;
  });
  // The observer must exist before connect() or the first events are missed; its iterator
  // ends by itself when the socket is closed.
  const eventsDone = (async () => {
    for await (const event of dealer.events) {
      switch (event.type) {
        case 'handshake':
          handshaken();
          break;
        case 'connect:retry':
          lastProblem = 'connection refused or lost, retrying';
          break;
        case 'handshake:error:protocol':
        case 'handshake:error:auth':
        case 'handshake:error:other':
          lastProblem = `ZMTP handshake failed: ${event.error.message}`;
          break;
        case 'disconnect':
          // libzmq would reconnect quietly, but images in flight on the old connection are
          // gone with it (the receiver also drops a peer that sent a part over its limit).
          if (connected) fail(new ItbError(ErrorCode.transport, `ZeroMQ connection to ${where} lost`));
          else lastProblem = 'peer closed the connection during the handshake';
          break;
        default:
          break;
      }
    }
  })().catch((err: unknown) => options.log.debug({ err }, 'zeromq transmitter event observer ended'));

  dealer.connect(address);
  try {
    await awaitHandshake(handshake, where, options.connectTimeoutMs, () => lastProblem);
  } catch (err) {
    closing = true;
    dealer.close();
    await settlesWithin(eventsDone, CLOSE_SETTLE_MS);
    throw err;
  }
  connected = true;
  options.log.debug({ address }, 'zeromq transmitter connected');

  const acksDone = (async () => {
    for await (const parts of dealer) {
      const [part] = parts;
      let ack: Ack;
      try {
        if (parts.length !== 1 || part === undefined) throw new Error(`ack message has ${parts.length} parts, expected 1`);
        ack = decodeAck(part);
      } catch (err) {
        fail(new ItbError(ErrorCode.transport, `malformed ack from ${where}: ${errorMessage(err)}`, { cause: err }));
        continue;
      }
      options.onAck(ack);
    }
  })().catch((err: unknown) => {
    fail(new ItbError(ErrorCode.transport, `ZeroMQ ack loop from ${where} ended: ${errorMessage(err)}`, { cause: err }));
  });

  let closed: Promise<void> | undefined;
  return {
    async send(header, payload) {
      if (failure) throw failure;
      if (closing) throw new ItbError(ErrorCode.transport, `ZeroMQ link to ${where} is closed`);
      try {
        // The caller never has two sends pending, which is exactly what zeromq v6 allows per
        // socket; parts over 128 bytes go zero-copy, which the contract permits.
        await dealer.send([header, payload]);
      } catch (err) {
        throw new ItbError(ErrorCode.transport, `ZeroMQ send to ${where} failed: ${errorMessage(err)}`, { cause: err });
      }
    },
    close() {
      closed ??= (async () => {
        closing = true;
        dealer.close();
        await settlesWithin(Promise.all([acksDone, eventsDone]), CLOSE_SETTLE_MS);
      })();
      return closed;
    },
  };
}

/** Port libzmq actually bound, read from `tcp://host:port`. */
function boundPort(router: Router, address: string): number {
  const endpoint = router.lastEndpoint;
  const port = endpoint === null ? NaN : Number(endpoint.slice(endpoint.lastIndexOf(':') + 1));
  if (!Number.isInteger(port) || port <= 0) throw new ItbError(ErrorCode.transport, `cannot tell the port ZeroMQ bound for ${address} (endpoint ${endpoint})`);
  return port;
}

/** Checks one [peer id, header, image] message; returns what to deliver, or the reason to drop it. */
function parseFrame(parts: Buffer[], maxImageBytes: number): { header: FrameHeader; payload: Buffer } | string {
  const [, headerBytes, payload] = parts;
  if (parts.length !== 3 || headerBytes === undefined || payload === undefined) {
    return `zeromq: message has ${parts.length - 1} parts, expected 2 (header, image)`;
  }
  let header: FrameHeader;
  try {
    header = decodeFrameHeader(headerBytes, maxImageBytes);
  } catch (err) {
    return `zeromq: ${errorMessage(err)}`;
  }
  if (payload.length !== header.sizeBytes) {
    return `zeromq: image of ${payload.length} bytes, header announced ${header.sizeBytes}`;
  }
  return { header, payload };
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const address = tcpAddress(options.bindHost, options.port === 0 ? '*' : options.port);
  const router = createRouter(options.bindHost, options.maxImageBytes);
  let closing = false;

  // The Router cannot tell a peer that closed from one libzmq dropped for a part over
  // maxMessageSize (both are a bare 'disconnect'); the transmitter sees the latter as a failure.
  const eventsDone = (async () => {
    for await (const event of router.events) {
      if (event.type === 'accept') options.log.debug({ address: event.address }, 'zeromq receiver accepted a peer');
      else if (event.type === 'disconnect') {
        options.log.info({ address: event.address }, 'zeromq peer disconnected (closed, or dropped for a message part over MAX_IMAGE_SIZE)');
      }
    }
  })().catch((err: unknown) => options.log.debug({ err }, 'zeromq receiver event observer ended'));

  try {
    await router.bind(address);
  } catch (err) {
    router.close();
    await settlesWithin(eventsDone, CLOSE_SETTLE_MS);
    throw new ItbError(ErrorCode.transport, `cannot bind ZeroMQ receiver to ${address}: ${errorMessage(err)}`, { cause: err });
  }
  const port = boundPort(router, address);
  options.log.debug({ endpoint: router.lastEndpoint }, 'zeromq receiver listening');

  const sendAck = async (peer: Buffer, ack: Ack): Promise<void> => {
    try {
      // Awaited inside the receive loop, so at most one ack send is ever pending on the socket.
      await router.send([peer, encodeAck(ack)]);
    } catch (err) {
      if (!closing) options.log.warn({ err, seq: ack.seq }, 'zeromq ack not sent (peer gone, or not reading acks)');
    }
  };

  const receiveDone = (async () => {
    for await (const parts of router) {
      const arrivalNs = process.hrtime.bigint();
      const frame = parseFrame(parts, options.maxImageBytes);
      if (typeof frame === 'string') {
        options.onReject(frame);
        continue;
      }
      let ack: Ack;
      try {
        ack = options.deliver({ header: frame.header, payload: frame.payload, arrivalNs });
      } catch (err) {
        options.log.error({ err, seq: frame.header.seq }, 'zeromq receiver: deliver threw; frame not acknowledged');
        continue;
      }
      await sendAck(parts[0]!, ack);
    }
  })().catch((err: unknown) => {
    if (!closing) options.log.error({ err }, 'zeromq receive loop ended');
  });

  let closed: Promise<void> | undefined;
  return {
    port,
    close() {
      closed ??= (async () => {
        closing = true;
        // Acks already queued keep flushing for ACK_LINGER_MS in libzmq's I/O thread; the
        // receive loop and the observer end as soon as the socket is closed.
        router.close();
        await settlesWithin(Promise.all([receiveDone, eventsDone]), CLOSE_SETTLE_MS);
      })();
      return closed;
    },
  };
}

/** ZeroMQ (zeromq.js v6): Dealer → Router, multipart [header, image], acks on the same socket. */
export const zeromqTransport: Transport = {
  name: 'zeromq',
  label: 'ZeroMQ',
  port: { envVar: 'ZEROMQ_PORT', defaultPort: 5555 },
  baseline: false,
  connect,
  listen,
};
