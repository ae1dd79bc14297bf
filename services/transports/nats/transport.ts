import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { encodeAck, FRAME_HEADER_BYTES } from '../../core/wire/frame.js';
import { withTimeout } from '../../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { frameGate } from '../kit/gate.js';
import { LinkGuard } from '../kit/link-guard.js';
import {
  bufferOf,
  closeConnection,
  FLUSH_TIMEOUT_MS,
  FRAME_HEADER_NAME,
  HEADER_APART_FROM_BYTES,
  headersOf,
  NATS_MAX_PAYLOAD_BYTES,
  natsLibrary,
  natsLocalServer,
  NO_RESPONDERS_CODE,
  openConnection,
  openNatsReceiver,
  requireBroker,
  sectionSubjects,
  subscribeAckInbox,
  takeFrame,
  watchConnection,
  type SectionSubjects,
} from '../kit/nats.js';
import { SendQueue } from '../kit/send-queue.js';

// Core NATS (no JetStream), request-reply without per-request bookkeeping: each image is one
// message on the section's frames subject carrying the 40-byte header and the image (how: below),
// whose reply subject is the link's ack inbox (one subscription per link); the receiver passes the
// message through the frame gate and publishes the 12-byte ack to that reply subject at once.
// One publisher's messages reach a subscriber in order, so acks come back in order.
// Copies: nats.js queues a publish's parts (protocol line, headers, data, CRLF) and packs them
// into one new buffer before the socket write: one copy of every image, the library's, whatever
// we do. A message has one data, so header and image travel either concatenated as the data (one
// copy more, ours) or, from HEADER_APART_FROM_BYTES on, with the 40-byte header as a NATS message
// header (headers are text: base64, 81 bytes with their framing) and the image alone as the data,
// which spares that copy. Measured through a private nats-server, the two forms alternated on a
// loaded 2-core host (WINDOW=16, medians): at 533 KB the header apart took ~6% less transmitter CPU
// per image (0.56 against 0.60 ms) for the same MB/s (172 against 170); at 1 KB it cost ~15% of
// the image rate (8.3k against 9.8k/s) and ~25% more receiver CPU (encoding and parsing the header
// block), so small images go concatenated. The receiver
// takes either form: a message with headers carries its frame header apart. On the receiver,
// nats.js assembles a message that spans socket chunks into a buffer of its own and hands over a
// view of it; the gate takes views, no copy of ours.
// Backpressure: nats.js takes every publish at once and writes it to the socket without looking
// at the socket's high-water mark, so the link never holds a frame; what waits in the socket's
// buffer is bounded by the caller's WINDOW.
// Nothing is dropped silently. A callback subscription has no client-side pending limit in
// nats.js (messages are handed over as they are parsed, never queued or dropped as a "slow
// consumer"); the server holds at most max_pending bytes (1 GB on the private server and under
// docker compose; 64 MB by default) for a client that reads too slowly, then disconnects it, and
// any disconnect fails the link or the listener: reconnect is off, so the run never carries on
// behind its back. A publish the server refuses (a permissions violation) comes back as a server
// error, which fails the link too, and a frame nobody subscribes to comes back as a "no
// responders" status on the ack inbox: the section has no receiver on this server.
// Limits: a message is at most the server's max_payload (1 MB by default, 64 MB at most, NATS's
// hard limit; the private server and docker compose's run with 64 MB). connect() compares the
// section's frame size (40 + image bytes) with the max_payload of the server's INFO before
// anything is sent. A receiver holds one message whole before
// the gate sees its header, so what it holds is bounded by max_payload, not MAX_IMAGE_SIZE.
// Each section has subjects of its own, named after its credential: the receiver subscribes to
// the open section's frames subject only (in openSection(), before the transmitter is told to
// connect), unsubscribes when the section ends, and publishes acks only to that section's ack
// inboxes. A subject cannot be guessed without AUTH_TOKEN, but anyone allowed to subscribe on the
// NATS server can watch subjects (`>`): NATS's own authentication and permissions (credentials in
// NATS_URL and NATS_PASSWORD, or a server only the two services reach, as under docker compose) guard the broker.

/** Bytes of the header block nats.js sends for it: "NATS/1.0\r\nItb-Frame: <56 base64 chars>\r\n\r\n". */
const HEADER_BLOCK_BYTES = Buffer.byteLength(
  `NATS/1.0\r\n${FRAME_HEADER_NAME}: ${'A'.repeat(Math.ceil(FRAME_HEADER_BYTES / 3) * 4)}\r\n\r\n`,
);
/**
 * Whether the section's frame header travels apart (see HEADER_APART_FROM_BYTES), checking first
 * that its messages fit the server's max_payload: a section whose images do not is rejected before
 * anything is sent. The header goes apart only when the header block fits too.
 */
function chooseForm(nc: NatsConnection, imageBytes: number, shownUrl: string): { headerApart: boolean } {
  const maxPayloadBytes = nc.info?.max_payload;
  const frameBytes = FRAME_HEADER_BYTES + imageBytes;
  if (maxPayloadBytes !== undefined && frameBytes <= maxPayloadBytes) {
    return { headerApart: imageBytes >= HEADER_APART_FROM_BYTES && HEADER_BLOCK_BYTES + imageBytes <= maxPayloadBytes };
  }
  const how =
    frameBytes > NATS_MAX_PAYLOAD_BYTES
      ? `no NATS server can carry it: ${NATS_MAX_PAYLOAD_BYTES} bytes (64 MB) is NATS's hard limit`
      : `raise max_payload in the nats-server config (docker compose's nats service runs with max_payload 64MB, ` +
        `NATS's hard limit)`;
  throw new ItbError(
    ErrorCode.transport,
    `a ${imageBytes}-byte image makes a ${frameBytes}-byte NATS message, over the max_payload ` +
      `of ${maxPayloadBytes ?? 'unknown'} bytes of NATS at ${shownUrl}: ${how}`,
  );
}

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const broker = requireBroker(options, 'nats');
  const subjects = sectionSubjects(options.credential);
  const nc = await openConnection(broker, options.connectTimeoutMs, 'itb-transmitter');
  const statuses = nc.status();
  const guard = new LinkGuard(options.onFailure, `NATS link through ${broker.shown}`);
  const ackInbox = `${subjects.acks}.${natsLibrary().nuid.next()}`;
  // Nobody subscribes to the frames subject: the server answers a frame with "no responders" on its reply subject.
  const noResponders = (msg: Msg): boolean => {
    if (msg.headers?.code !== NO_RESPONDERS_CODE) return false;
    guard.fail(
      new ItbError(
        ErrorCode.receiverUnreachable,
        `no receiver is reading this section on NATS at ${broker.shown} (nobody subscribes to ${subjects.frames})`,
      ),
    );
    return true;
  };
  let headerApart: boolean;
  try {
    ({ headerApart } = chooseForm(nc, options.imageBytes, broker.shown));
    // The flush also proves the connection works.
    await subscribeAckInbox(nc, ackInbox, guard, { ...options, transport: 'nats', shown: broker.shown }, noResponders);
  } catch (err) {
    await closeConnection(nc);
    throw err;
  }
  watchConnection(nc, statuses, (reason, cause) => guard.failWith(reason, cause));

  const queue = new SendQueue(
    (header, payload) => {
      if (headerApart) nc.publish(subjects.frames, payload, { reply: ackInbox, headers: headersOf(header) });
      else
        nc.publish(subjects.frames, Buffer.concat([header, payload], header.length + payload.length), {
          reply: ackInbox,
        });
      return undefined;
    },
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, () => closeConnection(nc));
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  // Its open section is the subscription to the section's frames subject.
  const { broker, nc, receiver, brokerCpu } = await openNatsReceiver<Subscription>(options, 'nats', 'NATS');
  const gate = frameGate(options, 'nats');

  const onFrame =
    (subjects: SectionSubjects) =>
    (err: Error | null, msg: Msg): void => {
      if (err) {
        receiver.fail(`the section's subscription failed: ${err.message}`);
        return;
      }
      // Acks go only to this section's inboxes, never to a subject a message names.
      const reply = msg.reply;
      if (reply === undefined || !reply.startsWith(`${subjects.acks}.`)) {
        gate.reject(`message without this section's ack inbox as its reply subject: dropped`);
        return;
      }
      // A message with headers carries its frame header apart, in one of them.
      const ack = takeFrame(gate, bufferOf(msg.data), msg.headers?.get(FRAME_HEADER_NAME));
      if (ack === undefined) return;
      try {
        nc.publish(reply, encodeAck(ack));
      } catch (publishErr) {
        // Only a closed connection refuses it, which closed() reports too; nothing may throw into nats.js's parser.
        receiver.fail(`sending an ack failed: ${errorMessage(publishErr)}`);
      }
    };

  return receiver.listener(
    {
      async open(opening) {
        const subjects = sectionSubjects(opening.credential);
        const subscription = nc.subscribe(subjects.frames, { callback: onFrame(subjects) });
        // The server has the subscription before the transmitter is told to connect.
        const what = `subscribing to the section's subject on NATS at ${broker.shown}`;
        await withTimeout(nc.flush(), FLUSH_TIMEOUT_MS, what).catch((err: unknown) => {
          // The section does not open: nothing of it is read.
          if (!nc.isClosed()) subscription.unsubscribe();
          throw err;
        });
        return subscription;
      },
      async end(ended) {
        // UNSUBSCRIBE is one write; from here on nats.js hands over nothing of that subscription.
        if (!nc.isClosed()) ended.unsubscribe();
      },
      close: () => closeConnection(nc),
    },
    brokerCpu,
  );
}

/** Core NATS through a NATS server (NATS_URL): one message per image, acks on the link's inbox. */
export const natsTransport: Transport = {
  name: 'nats',
  label: 'NATS',
  summary: {
    libraries: '@nats-io/transport-node',
    image: 'core NATS publish with a reply subject',
    ack: 'publish to the reply subject',
  },
  traits: {
    baseline: false,
    // Every receiver subscribes to the section's channel (subject): one PUBLISH reaches them all.
    fanOut: 'one send',
  },
  library: {
    packages: ['@nats-io/transport-node'],
  },
  deployment: {
    defaultRun: false,
    setting: { kind: 'url', envVar: 'NATS_URL', schemes: ['nats'], example: 'nats://127.0.0.1:4222' },
    composeService: 'nats',
    localServer: natsLocalServer,
  },
  connect,
  listen,
};
