import type { Context, Pull, Push, Subscriber, XPublisher, Socket } from 'zeromq';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { once } from '../../shared/once.js';
import { settlesWithin } from '../../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { connectWithin } from '../kit/connect.js';
import { LinkGuard } from '../kit/link-guard.js';
import { SendQueue } from '../kit/send-queue.js';
import {
  ACK_LINGER_MS,
  ACK_SEND_TIMEOUT_MS,
  boundPort,
  CLOSE_SETTLE_MS,
  HIGH_WATER_MARK_MESSAGES,
  PART_LIMIT_FLOOR_BYTES,
  PLAIN_USERNAME,
  openZapDoor,
  readAcks,
  tcpAddress,
  zapServerOptions,
  serveFrames,
  zeromqLibrary,
} from '../kit/zeromq.js';

// Publish/subscribe, where the publisher may drop: the receiver binds a SUB socket on
// ZEROMQ_PUBSUB_PORT and a PUSH socket for acks on ZEROMQ_PUBSUB_PORT + 1 (ACK_PORT_OFFSET; the
// config reserves it through `nextPorts`, and listen() fails naming it when it cannot be bound).
// The transmitter connects an XPUB to the SUB and a PULL to the PUSH. Each image is one two-part
// message [header, image]; each ack one 12-byte message.
// - An XPUB sends like a PUB (a subscriber whose queue is at its high-water mark loses the
//   message; `noDrop` stays off, or it would block like a PUSH and this would not be pub/sub), but
//   it also hands over the subscriptions it receives. connect() resolves only once the SUB's
//   subscription has reached it, so no image is lost to the slow-joiner effect: every loss is a
//   high-water-mark drop, counted by the transmitter app (an ack for a later image settles the
//   earlier unacked ones as lost; one TCP connection keeps images in order or drops them whole).
//   The XPUB's mark is twice HIGH_WATER_MARK_MESSAGES (PUBLISHER_HIGH_WATER_MARK: libzmq credits
//   the writer only every half mark), so a WINDOW up to 64 never drops; well above it, past the
//   XPUB's queue, the SUB's and the kernel's buffers, a subscriber slower than the publisher does.
// - Acks go the other way through PUSH, which blocks at its mark instead of dropping: an ack is
//   never lost while the transmitter reads them.
// - Who gets in is ZAP's to say on both ports, exactly as for zeromq.ts's Router: PLAIN with the
//   section's credential as password, asked of the door during the handshake, before libzmq takes
//   any message. A link holds two connections (connectionsPerLink). libzmq has no connection cap;
//   a handshake that does not finish within IMAGE_TIMEOUT_MS is dropped, and heartbeats drop a
//   peer that falls silent.

/** The ack socket's port is the image port plus this. */
const ACK_PORT_OFFSET = 1;
/** Subscription message for "everything" (RFC 29: byte 1, empty prefix): the only one our receiver sends. */
const SUBSCRIBE_ALL = Buffer.from([1]);
/** With port 0, times the receiver picks another port when the next one is taken. */
const PORT_PICK_ATTEMPTS = 5;

/**
 * The XPUB's send mark: twice the common one. libzmq credits a writer for what its reader took
 * only every half mark (the pipe's low-water mark), so a pipe of mark m can look full with about
 * m/2 messages really waiting: at 2 × 64 a WINDOW up to 64 never drops, as the contract needs (at
 * 64, 1,000 × 1 KB images at WINDOW=64 once lost 10 on a loaded CI machine).
 */
export const PUBLISHER_HIGH_WATER_MARK = 2 * HIGH_WATER_MARK_MESSAGES;

/** Creates the transmitter's image socket with the options connect() uses; exported for tests. */
export function createPublisher(host: string, credentialText: string): XPublisher {
  return new (zeromqLibrary().XPublisher)({
    plainUsername: PLAIN_USERNAME,
    plainPassword: credentialText,
    // At the mark the XPUB drops the image for that subscriber: that is the pub/sub under test.
    sendHighWaterMark: PUBLISHER_HIGH_WATER_MARK,
    receiveHighWaterMark: HIGH_WATER_MARK_MESSAGES,
    noDrop: false,
    // Publish only to a connection whose handshake is done, never into a pipe for a reconnect.
    immediate: true,
    // Every receiver's subscription comes up, not only the first of equal ones: connect() counts them.
    verbosity: 'allSubs',
    // The receiver sends only subscriptions (1 byte) the other way.
    maxMessageSize: PART_LIMIT_FLOOR_BYTES,
    linger: 0,
    ipv6: host.includes(':'),
  });
}

/** Creates the transmitter's ack socket with the options connect() uses; exported for tests. */
export function createAckPull(host: string, credentialText: string): Pull {
  return new (zeromqLibrary().Pull)({
    plainUsername: PLAIN_USERNAME,
    plainPassword: credentialText,
    receiveHighWaterMark: HIGH_WATER_MARK_MESSAGES,
    immediate: true,
    // Acks are 12 bytes: a peer announcing more is not our receiver and is dropped unread.
    maxMessageSize: PART_LIMIT_FLOOR_BYTES,
    linger: 0,
    ipv6: host.includes(':'),
  });
}

/**
 * Creates the receiver's image socket, subscribed to everything, with the options listen() uses; exported for tests.
 */
export function createSubscriber(
  bindHost: string,
  maxImageBytes: number,
  idleTimeoutMs = 10_000,
  context?: Context,
): Subscriber {
  const subscriber = new (zeromqLibrary().Subscriber)({
    ...zapServerOptions(bindHost, idleTimeoutMs, context),
    // (zeromq.js has no send mark for a SUB: what it sends is its one subscription.)
    receiveHighWaterMark: HIGH_WATER_MARK_MESSAGES,
    // libzmq checks each part's announced length before allocating it and drops the peer when it
    // is over: no part may be larger than the largest valid image.
    maxMessageSize: Math.max(maxImageBytes, PART_LIMIT_FLOOR_BYTES),
    linger: 0,
  });
  // Everything, not a prefix: a frame with a bad magic must reach the gate and be reported, not
  // vanish in the publisher's filter.
  subscriber.subscribe();
  return subscriber;
}

/** Creates the receiver's ack socket with the options listen() uses; exported for tests. */
export function createAckPush(bindHost: string, idleTimeoutMs = 10_000, context?: Context): Push {
  return new (zeromqLibrary().Push)({
    ...zapServerOptions(bindHost, idleTimeoutMs, context),
    sendHighWaterMark: HIGH_WATER_MARK_MESSAGES,
    // The transmitter sends nothing on this connection but ZMTP commands.
    maxMessageSize: PART_LIMIT_FLOOR_BYTES,
    // Blocks at the mark (never drops); a transmitter that stops reading must not stall acks for ever.
    sendTimeout: ACK_SEND_TIMEOUT_MS,
    linger: ACK_LINGER_MS,
  });
}

/** The two sockets of one link. */
interface LinkSockets {
  publisher: XPublisher;
  acks: Pull;
}

function closeSockets(sockets: LinkSockets): void {
  sockets.publisher.close();
  sockets.acks.close();
}

/**
 * One connect attempt: both sockets dialling, resolved once both ZMTP handshakes are done and the
 * receiver's subscription has reached the XPUB (before that, the XPUB would drop every image).
 */
function openSockets(
  options: TransmitterOptions,
  endpoints: readonly Endpoint[],
  timeoutMs: number,
): Promise<LinkSockets> {
  const imageAddress = endpoints.map((e) => e.image).join(', ');
  const ackAddress = endpoints.map((e) => e.ack).join(', ');
  const sockets: LinkSockets = {
    publisher: createPublisher(options.host, options.credential.text),
    acks: createAckPull(options.host, options.credential.text),
  };
  let lastProblem = 'nothing answered yet';
  return new Promise<LinkSockets>((resolve, reject) => {
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      closeSockets(sockets);
      reject(err);
    };
    const timer = setTimeout(() => fail(new Error(lastProblem)), timeoutMs);
    // Each observer must exist before connect() or the first events are missed; it stops at the
    // handshake (connect() takes the events over then) and ends by itself when the socket closes.
    // One handshake per receiver on each socket.
    const handshake = (socket: Socket, which: string): Promise<void> =>
      new Promise<void>((done) => {
        let handshakes = 0;
        void (async () => {
          for await (const event of socket.events) {
            if (event.type === 'handshake') {
              if (++handshakes < endpoints.length) continue;
              done();
              return;
            }
            if (event.type === 'handshake:error:auth') {
              // The receiver's ZAP handler refused the credential: another attempt would be refused too.
              fail(
                new ItbError(
                  ErrorCode.refused,
                  `the receiver refused this section's credential on the ${which} (ZAP ` +
                    ((event as { error?: { status?: number } }).error?.status ?? 'error') +
                    `; its log says why)`,
                ),
              );
              return;
            }
            if (event.type === 'connect:retry') lastProblem = `${which}: connection refused or lost, retrying`;
            else if (event.type === 'disconnect')
              lastProblem = `${which}: peer closed the connection during the handshake`;
            else if (event.type.startsWith('handshake:error'))
              lastProblem =
                `${which}: ZMTP handshake failed: ` + ((event as { error?: Error }).error?.message ?? event.type);
          }
        })().catch((err: unknown) => options.log.debug({ err }, 'zeromq-pubsub transmitter handshake observer ended'));
      });
    // Every receiver's subscription (the XPUB hands each one up: verbosity allSubs).
    const subscribed = (async () => {
      for (let subscriptions = 0; ; ) {
        const [message] = await sockets.publisher.receive();
        if (message?.equals(SUBSCRIBE_ALL)) {
          if (++subscriptions < endpoints.length) continue;
          return;
        }
        lastProblem =
          `the peer on ${imageAddress} subscribed to something other than every message ` +
          `(${message?.toString('hex') ?? 'empty'})`;
      }
    })();
    Promise.all([
      handshake(sockets.publisher, `image port ${imageAddress}`),
      handshake(sockets.acks, `ack port ${ackAddress}`),
      subscribed,
    ]).then(
      () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(sockets);
      },
      // The subscription's receive() rejects once fail() closed the socket: already settled then.
      (err: unknown) => fail(err instanceof Error ? err : new Error(String(err))),
    );
    for (const endpoint of endpoints) {
      sockets.publisher.connect(endpoint.image);
      sockets.acks.connect(endpoint.ack);
    }
  });
}

/** A receiver's two addresses: its SUB's, and its ack PUSH's on the next port. */
interface Endpoint {
  image: string;
  ack: string;
}

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  // RECEIVERS > 1: one XPUB (and one ack PULL) connected to every receiver; one send reaches all.
  const endpoints: Endpoint[] = (options.peers ?? [{ host: options.host, port: options.port }]).map(
    ({ host, port }) => ({ image: tcpAddress(host, port), ack: tcpAddress(host, port + ACK_PORT_OFFSET) }),
  );
  const imageAddress = endpoints.map((e) => e.image).join(', ');
  const ackAddress = endpoints.map((e) => e.ack).join(', ');
  const where = endpoints.map((e) => e.image.slice('tcp://'.length)).join(', ');
  // libzmq retries a refused connection itself, so one attempt spans the budget.
  const sockets = await connectWithin(
    `ZeroMQ PUB/SUB ${where}`,
    options.connectTimeoutMs,
    (remainingMs) => openSockets(options, endpoints, remainingMs),
    closeSockets,
  );
  const { publisher, acks } = sockets;
  const guard = new LinkGuard(options.onFailure, `ZeroMQ PUB/SUB link to ${where}`);
  options.log.debug({ imageAddress, ackAddress }, 'zeromq-pubsub transmitter connected');

  // libzmq would reconnect quietly, but images in flight on the old connection are gone with it,
  // and an ack connection lost would make every later image look dropped.
  const watch = (socket: Socket, which: string): Promise<void> =>
    (async () => {
      for await (const event of socket.events) {
        if (event.type === 'disconnect') guard.failWith(`${which} connection lost`);
      }
    })().catch((err: unknown) => options.log.debug({ err }, 'zeromq-pubsub transmitter event observer ended'));
  const publisherEventsDone = watch(publisher, 'image');
  const ackEventsDone = watch(acks, `ack (${ackAddress})`);

  // Read what the XPUB hands over so its queue stays empty; our receiver never unsubscribes while
  // connected, so an unsubscription means images would be filtered away from here on.
  const subscriptionsDone = (async () => {
    for await (const [message] of publisher) {
      if (message?.[0] === 0) guard.failWith('the receiver unsubscribed');
    }
  })().catch((err: unknown) => options.log.debug({ err }, 'zeromq-pubsub subscription loop ended'));

  const acksDone = readAcks(acks, guard, options.onAck);

  // zeromq v6 allows one pending send per socket: the queue hands over the next frame only once
  // the previous send resolved. Parts over 128 bytes (every image but the tiniest) go zero-copy:
  // libzmq keeps a reference to the Buffer until the I/O thread wrote it or dropped it at the
  // mark; the 40-byte header is copied. An XPUB send never waits: at the mark it drops.
  const queue = new SendQueue(
    (header, payload) => publisher.send([header, payload]),
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, async () => {
    closeSockets(sockets);
    await settlesWithin(
      Promise.all([acksDone, subscriptionsDone, publisherEventsDone, ackEventsDone]),
      CLOSE_SETTLE_MS,
    );
  });
}

/** Logs a receiver socket's peers and counts the ones that never reach ZAP as refused. */
function observeServer(socket: Socket, which: string, options: ReceiverOptions): Promise<void> {
  return (async () => {
    for await (const event of socket.events) {
      if (event.type === 'accept')
        options.log.debug({ address: event.address }, `zeromq-pubsub ${which} socket accepted a peer`);
      // A peer that does not even offer PLAIN (or is not of the matching socket type) never reaches the ZAP handler.
      else if (event.type === 'handshake:error:protocol' || event.type === 'handshake:error:other') {
        options.door.refuse(
          `zeromq-pubsub ${which} port, from a peer of ${event.address}`,
          `handshake failed (${errorMessage(event.error)}): connection refused`,
        );
      } else if (event.type === 'disconnect') {
        options.log.info(
          { address: event.address },
          `zeromq-pubsub peer of the ${which} socket disconnected (closed, or dropped for a message part over ` +
            `MAX_IMAGE_SIZE)`,
        );
      }
    }
  })().catch((err: unknown) => options.log.debug({ err }, 'zeromq-pubsub receiver event observer ended'));
}

/**
 * Binds the image socket, then the ack socket on the next port; returns the image port. With
 * port 0 a taken next port makes it pick again; with a given port, it fails naming the port.
 */
async function bindBoth(subscriber: Subscriber, ackPush: Push, options: ReceiverOptions): Promise<number> {
  const imageAddress = tcpAddress(options.bindHost, options.port === 0 ? '*' : options.port);
  for (let attempt = 1; ; attempt++) {
    try {
      await subscriber.bind(imageAddress);
    } catch (err) {
      throw new ItbError(
        ErrorCode.transport,
        `cannot bind ZeroMQ PUB/SUB receiver to ${imageAddress}: ${errorMessage(err)}`,
        { cause: err },
      );
    }
    const port = boundPort(subscriber, imageAddress);
    const ackAddress = tcpAddress(options.bindHost, port + ACK_PORT_OFFSET);
    try {
      await ackPush.bind(ackAddress);
      return port;
    } catch (err) {
      if (options.port !== 0 || attempt >= PORT_PICK_ATTEMPTS) {
        throw new ItbError(
          ErrorCode.transport,
          `cannot bind the ZeroMQ PUB/SUB ack socket to ${ackAddress} (ZEROMQ_PUBSUB_PORT + ${ACK_PORT_OFFSET}, ` +
            `port ${port + ACK_PORT_OFFSET}): ${errorMessage(err)}`,
          { cause: err },
        );
      }
      await subscriber.unbind(subscriber.lastEndpoint ?? imageAddress);
    }
  }
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const zap = await openZapDoor(options, 'zeromq-pubsub');
  const subscriber = createSubscriber(options.bindHost, options.maxImageBytes, options.idleTimeoutMs, zap.context);
  const ackPush = createAckPush(options.bindHost, options.idleTimeoutMs, zap.context);
  const eventsDone = Promise.all([observeServer(subscriber, 'image', options), observeServer(ackPush, 'ack', options)]);

  let port: number;
  try {
    port = await bindBoth(subscriber, ackPush, options);
  } catch (err) {
    subscriber.close();
    ackPush.close();
    zap.stop();
    await settlesWithin(Promise.all([eventsDone, zap.done]), CLOSE_SETTLE_MS);
    throw err;
  }
  options.log.debug(
    { endpoint: subscriber.lastEndpoint, ackEndpoint: ackPush.lastEndpoint },
    'zeromq-pubsub receiver listening',
  );

  // Images in on the SUB, acks out on the PUSH (an ack never dropped: PUSH waits at its mark).
  const frames = serveFrames(subscriber, ackPush, options, 'zeromq-pubsub');

  return {
    port,
    close: once(async () => {
      frames.stop();
      // Acks already queued keep flushing for ACK_LINGER_MS in libzmq's I/O thread; the loops
      // end as soon as their sockets are closed.
      subscriber.close();
      ackPush.close();
      zap.stop();
      await settlesWithin(Promise.all([frames.done, eventsDone, zap.done]), CLOSE_SETTLE_MS);
    }),
  };
}

/**
 * ZeroMQ PUB/SUB (zeromq.js v6): XPUB → SUB for [header, image] on the port, acks PUSH → PULL on the port + 1; drops at
 * the high-water mark.
 */
export const zeromqPubsubTransport: Transport = {
  name: 'zeromq-pubsub',
  label: 'ZeroMQ PUB/SUB',
  summary: {
    libraries: 'zeromq',
    image: 'XPUB → SUB, `[header, image]`; may drop at the high-water mark',
    ack: 'PUSH → PULL on the next port',
  },
  traits: {
    baseline: false,
    // One XPUB connected to every receiver's SUB: one send reaches them all.
    fanOut: 'one send',
    dropsImages:
      `PUB drops an image for a subscriber whose queue is at its high-water mark (${PUBLISHER_HIGH_WATER_MARK} ` +
      `messages on the publisher, ${HIGH_WATER_MARK_MESSAGES} on the subscriber)`,
    // The image connection and the ack connection.
    connectionsPerLink: () => 2,
  },
  library: {
    packages: ['zeromq'],
    nativeVersions: () => ({ libzmq: zeromqLibrary().version }),
  },
  deployment: {
    defaultRun: false,
    // nextPorts: the ack socket binds the port after this one.
    setting: {
      kind: 'port',
      envVar: 'ZEROMQ_PUBSUB_PORT',
      defaultPort: 5556,
      nextPorts: ACK_PORT_OFFSET,
      description:
        'ZeroMQ SUB socket; its acks go out on this port + 1 (so at most 65,534, and the next port must be free)',
    },
  },
  connect,
  listen,
};
