import type { Context, Dealer, Router } from 'zeromq';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { ACK_BYTES, decodeAck, encodeAck } from '../core/wire/frame.js';
import { once } from '../shared/once.js';
import { settlesWithin } from '../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from './contract.js';
import { connectWithin } from './kit/connect.js';
import { frameGate } from './kit/gate.js';
import { LinkGuard } from './kit/link-guard.js';
import { SendQueue } from './kit/send-queue.js';
import {
  ACK_LINGER_MS,
  ACK_SEND_TIMEOUT_MS,
  boundPort,
  CLOSE_SETTLE_MS,
  HIGH_WATER_MARK_MESSAGES,
  openZapDoor,
  PART_LIMIT_FLOOR_BYTES,
  PLAIN_USERNAME,
  tcpAddress,
  ZAP_DOMAIN,
  zeromqLibrary,
} from './kit/zeromq.js';

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
  return new (zeromqLibrary().Dealer)({
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
  });
}

/** Creates the receiver's socket with the options listen() uses; exported for tests. */
export function createRouter(
  bindHost: string,
  maxImageBytes: number,
  idleTimeoutMs = 10_000,
  context?: Context,
): Router {
  return new (zeromqLibrary().Router)({
    ...(context === undefined ? {} : { context }),
    // Every handshake goes through the ZAP handler of the Router's context.
    plainServer: true,
    zapDomain: ZAP_DOMAIN,
    handshakeInterval: idleTimeoutMs,
    // A PING every half of the bound, and a peer that sends nothing in the next half is dropped.
    heartbeatInterval: Math.ceil(idleTimeoutMs / 2),
    heartbeatTimeout: Math.ceil(idleTimeoutMs / 2),
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

/**
 * One connect attempt: a Dealer dialling `address`, resolved once the ZMTP handshake is done (a TCP connect alone would
 * accept any listener).
 */
function openDealer(
  host: string,
  address: string,
  credentialText: string,
  timeoutMs: number,
  log: TransmitterOptions['log'],
): Promise<Dealer> {
  const dealer = createDealer(host, credentialText);
  let lastProblem = 'nothing answered yet';
  return new Promise<Dealer>((resolve, reject) => {
    const timer = setTimeout(() => {
      dealer.close();
      reject(new Error(lastProblem));
    }, timeoutMs);
    // The observer must exist before connect() or the first events are missed; it stops at the
    // handshake (connect() takes the events over then) and ends by itself when the socket closes.
    void (async () => {
      for await (const event of dealer.events) {
        if (event.type === 'handshake') {
          clearTimeout(timer);
          resolve(dealer);
          return;
        }
        if (event.type === 'handshake:error:auth') {
          // The receiver's ZAP handler refused the credential: another attempt would be refused too.
          clearTimeout(timer);
          dealer.close();
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
    })().catch((err: unknown) => log.debug({ err }, 'zeromq transmitter handshake observer ended'));
    dealer.connect(address);
  });
}

/** The transmitter's Dealer on `address` (tcp:// or ipc://); `label` names the transport in errors. */
export async function connectDealer(
  options: TransmitterOptions,
  address: string,
  label: string,
): Promise<TransmitterLink> {
  const where = address.slice(address.indexOf('://') + 3);
  // libzmq retries a refused connection itself, so one attempt spans the budget.
  const dealer = await connectWithin(
    `${label} ${where}`,
    options.connectTimeoutMs,
    (remainingMs) => openDealer(options.host, address, options.credential.text, remainingMs, options.log),
    (late) => late.close(),
  );
  const guard = new LinkGuard(options.onFailure, `${label} link to ${where}`);
  options.log.debug({ address }, 'zeromq transmitter connected');

  const eventsDone = (async () => {
    for await (const event of dealer.events) {
      // libzmq would reconnect quietly, but images in flight on the old connection are gone with
      // it (the receiver also drops a peer that sent a part over its limit).
      if (event.type === 'disconnect') guard.failWith('connection lost');
    }
  })().catch((err: unknown) => options.log.debug({ err }, 'zeromq transmitter event observer ended'));

  const acksDone = (async () => {
    for await (const parts of dealer) {
      const [part] = parts;
      if (parts.length !== 1 || part === undefined || part.length !== ACK_BYTES) {
        guard.failWith(`malformed ack (${parts.length} parts, first of ${part?.length ?? 0} bytes)`);
        continue;
      }
      guard.ack(options.onAck, decodeAck(part));
    }
  })().catch((err: unknown) => guard.failWith(`ack loop ended: ${errorMessage(err)}`, err));

  // zeromq v6 allows one pending send per socket: the queue hands over the next frame only once
  // the previous send resolved. Parts over 128 bytes go zero-copy, which the contract permits.
  const queue = new SendQueue(
    (header, payload) => dealer.send([header, payload]),
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, async () => {
    dealer.close();
    await settlesWithin(Promise.all([acksDone, eventsDone]), CLOSE_SETTLE_MS);
  });
}

function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  return connectDealer(options, tcpAddress(options.host, options.port), 'ZeroMQ');
}

/**
 * The receiver's Router bound to `address` (tcp:// or ipc://) for the transport named `transport`; `bound` runs once
 * it is (an ipc:// socket file is restricted there) and `closed` once it is closed.
 */
export async function listenRouter(
  options: ReceiverOptions,
  address: string,
  transport: string,
  hooks: { bound?: () => Promise<void>; closed?: () => Promise<void> } = {},
): Promise<ReceiverListener> {
  let closing = false;
  const zap = await openZapDoor(options, transport);
  const router = createRouter(options.bindHost, options.maxImageBytes, options.idleTimeoutMs, zap.context);

  // The Router cannot tell a peer that closed from one libzmq dropped for a part over
  // maxMessageSize (both are a bare 'disconnect'); the transmitter sees the latter as a failure.
  const eventsDone = (async () => {
    for await (const event of router.events) {
      if (event.type === 'accept') options.log.debug({ address: event.address }, `${transport} receiver accepted a peer`);
      // A peer that does not even offer PLAIN never reaches the ZAP handler: count it here.
      else if (event.type === 'handshake:error:protocol' || event.type === 'handshake:error:other') {
        options.door.refuse(
          `${transport} from a peer of ${event.address || 'this host'}`,
          `handshake failed (${errorMessage(event.error)}): connection refused`,
        );
      } else if (event.type === 'disconnect') {
        options.log.info(
          { address: event.address },
          `${transport} peer disconnected (closed, or dropped for a message part over MAX_IMAGE_SIZE)`,
        );
      }
    }
  })().catch((err: unknown) => options.log.debug({ err }, `${transport} receiver event observer ended`));

  try {
    await router.bind(address);
    await hooks.bound?.();
  } catch (err) {
    closing = true;
    router.close();
    zap.stop();
    await settlesWithin(Promise.all([eventsDone, zap.done]), CLOSE_SETTLE_MS);
    throw new ItbError(ErrorCode.transport, `cannot bind ZeroMQ receiver to ${address}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
  const port = address.startsWith('tcp://') ? boundPort(router, address) : 0;
  options.log.debug({ endpoint: router.lastEndpoint }, `${transport} receiver listening`);

  const gate = frameGate(options, transport);
  // Acks go out through a queue of their own: the receive loop never waits on an ack send (one
  // pending send per socket), and acks keep their order.
  const acks = new SendQueue(
    (peer, ack) => router.send([peer, ack]),
    (err) => {
      if (!closing) options.log.warn({ err }, `${transport} ack not sent (peer gone, or not reading acks)`);
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
    if (!closing) options.log.error({ err }, `${transport} receive loop ended`);
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

function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  return listenRouter(options, tcpAddress(options.bindHost, options.port === 0 ? '*' : options.port), 'zeromq');
}

/** ZeroMQ (zeromq.js v6): Dealer → Router, multipart [header, image], acks on the same socket. */
export const zeromqTransport: Transport = {
  name: 'zeromq',
  label: 'ZeroMQ',
  traits: {
    baseline: false,
  },
  library: {
    packages: ['zeromq'],
    nativeVersions: () => ({ libzmq: zeromqLibrary().version }),
  },
  deployment: {
    defaultRun: true,
    setting: { kind: 'port', envVar: 'ZEROMQ_PORT', defaultPort: 5555 },
  },
  connect,
  listen,
};
