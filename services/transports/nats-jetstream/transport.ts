import type { NatsConnection } from '@nats-io/transport-node';
import type { ConsumerMessages, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { SectionCredential } from '../../core/wire/auth.js';
import type { BrokerStamp } from '../../core/model/broker-split.js';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { encodeAck, FRAME_HEADER_BYTES } from '../../core/wire/frame.js';
import { settlesWithin, withTimeout } from '../../shared/waits.js';
import type {
  ReceiverListener,
  ReceiverOptions,
  SectionOpening,
  TransmitterLink,
  TransmitterOptions,
  Transport,
} from '../contract.js';
import type { BrokerAddress } from '../kit/broker.js';
import { frameGate, type FrameGate } from '../kit/gate.js';
import { lazyLibrary } from '../kit/library.js';
import { LinkGuard } from '../kit/link-guard.js';
import {
  bufferOf,
  closeConnection,
  FRAME_HEADER_NAME,
  HEADER_APART_FROM_BYTES,
  headersOf,
  NATS_MAX_PAYLOAD_BYTES,
  natsLibrary,
  natsLocalServer,
  openConnection,
  openNatsReceiver,
  requireBroker,
  sectionSubjects,
  subscribeAckInbox,
  takeFrame,
  watchConnection,
} from '../kit/nats.js';
import { SendQueue } from '../kit/send-queue.js';

/** The JetStream client, loaded when the transport is first used (kit/library.ts). */
const jetStreamLibrary = lazyLibrary<typeof import('@nats-io/jetstream')>('@nats-io/jetstream');

// NATS JetStream: a stream per section, in memory, that stores each image before the receiver
// gets it. The receiver's openSection() creates the section's stream (memory storage, work-queue
// retention: a message is removed once the receiver acks it, so the stream holds only images
// in flight; nothing is kept on disk) on the section's frames subject, and a pull consumer on it
// with explicit acks and max_ack_pending = WINDOW; closeSection() deletes the stream, its
// consumer with it. The transmitter publishes each image to that subject with a JetStream
// publish (a request whose reply, the PubAck, says the stream stored it): publishes are
// pipelined, up to WINDOW of them awaiting their PubAcks at once (the link holds the next one
// until a PubAck comes back, inside that image's time), and every PubAck is awaited and checked:
// a refusal fails the link. A PubAck means "stored", not the suite's ack: the receiver takes
// each message through the frame gate, publishes the 12-byte ack to the link's ack inbox at once
// (core NATS, as the nats transport; the inbox travels in an Itb-Ack message header, since the
// reply subject is JetStream's own), then acks the message to JetStream. Every message carries
// a header block (JetStream publishes always do); the frame header travels as the nats transport
// carries it: concatenated before the image below HEADER_APART_FROM_BYTES, as an Itb-Frame
// header from it on (nats.ts: what each form costs).
// Bounds: the consumer hands the receiver at most WINDOW messages not yet acked to JetStream, so
// what it holds is at most WINDOW × max_payload bytes; the stream holds at most what the
// transmitters have unacknowledged (WINDOW per link). Nothing is dropped silently: the stream
// has no limits that would discard (no max_msgs, no max_bytes), a message is never redelivered
// unless its ack is 30 s late (ack_wait), and a redelivered one is rejected, never delivered
// twice; a publish to a section whose stream is gone (no receiver prepared it, or the section
// closed) gets "no responders" and fails the link as no receiver reading this section.
// Limits: a message (header block and data) is at most the server's max_payload, read from the
// connection's INFO: connect() compares the section's message size with it before anything is
// sent and rejects a section whose images do not fit, naming the limit. A server without
// JetStream fails connect() and openSection() with that reason.
// Time: JetStream stamps each message when it stores it (the delivery info's timestamp, ns of the
// server's wall clock, in the message's reply subject): handed to the gate as the broker's stamp,
// it splits an image's one-way time into to the broker and from it. The arrival is stamped as the
// message's callback starts, before the checks and the parse of that subject.
// Each section has subjects and a stream of its own, named after its credential (kit/nats.ts: the
// door's check), and per receiver when RECEIVERS > 1 (each receiver gets its copies in its own
// stream). NATS's own authentication guards the broker, as for the nats transport.

/** JetStream's stamp of a stored message (ns of the server's wall clock, exact as a bigint); undefined without one. */
function brokerStampOf(msg: JsMsg): BrokerStamp | undefined {
  try {
    const atWallNs = msg.timestampNanos;
    return atWallNs > 0n ? { atWallNs, resolutionNs: 1 } : undefined;
  } catch {
    // A reply subject nats.js cannot parse: the image still counts, unsplit.
    return undefined;
  }
}

/** The NATS message header that carries the link's ack inbox. */
const ACK_INBOX_HEADER = 'Itb-Ack';
/** JetStream's header that makes the server refuse a message that would land in another stream. */
const EXPECTED_STREAM_HEADER = 'Nats-Expected-Stream';
/** The consumer's name in the section's stream. */
const CONSUMER_NAME = 'itb-receiver';
/** Bound on one JetStream API request (creating, deleting a stream; reading the account). */
const API_TIMEOUT_MS = 5000;
/**
 * Bound on a PubAck: a backstop only (a dead connection fails the link at once, a slow one fails
 * the image first at IMAGE_TIMEOUT_MS).
 */
const PUBACK_TIMEOUT_MS = 60_000;
/** Length of the unique part nats.js gives an inbox (a NUID). */
const NUID_LENGTH = 22;

/** The section's stream and its subject for receiver `receiverIndex` (0 when there is one). */
export interface SectionStream {
  name: string;
  subject: string;
  /** Prefix of every link's ack inbox (`<acks>.<unique>`). */
  acks: string;
}

/** The stream of `credential`'s section for receiver `receiverIndex`, named as its subjects are; exported for tests. */
export function sectionStream(credential: SectionCredential, receiverIndex = 0): SectionStream {
  const subjects = sectionSubjects(credential);
  return {
    // Stream names take no dots; base64url's characters are allowed.
    name: `ITB_${credential.sectionId}_${subjects.tag}_${receiverIndex}`,
    subject: `${subjects.frames}.${receiverIndex}`,
    acks: subjects.acks,
  };
}

/** Bytes of a NATS header block that holds `fields`: "NATS/1.0\r\n", a "name: value\r\n" line each, "\r\n". */
function headerBlockBytes(fields: readonly [string, string][]): number {
  return Buffer.byteLength(`NATS/1.0\r\n${fields.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
}

/**
 * The JetStream manager of `nc`, which first asks the server for the account's JetStream: a
 * server without it is a clear error naming the broker.
 */
async function jetStreamOf(nc: NatsConnection, broker: BrokerAddress): Promise<JetStreamManager> {
  try {
    return await jetStreamLibrary().jetstreamManager(nc, { timeout: API_TIMEOUT_MS });
  } catch (err) {
    if (err instanceof Error && err.name === 'JetStreamNotEnabled') {
      throw new ItbError(
        ErrorCode.transport,
        `NATS at ${broker.shown} has no JetStream (the nats-jetstream transport stores each image in a stream): ` +
          'run nats-server with -js, or a jetstream block in its config',
        { cause: err },
      );
    }
    throw new ItbError(ErrorCode.transport, `JetStream of NATS at ${broker.shown}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
}

/**
 * Whether the section's frame header travels apart, checking first that its messages (header
 * block and data) fit the server's max_payload: a section whose images do not is rejected before
 * anything is sent, naming the limit.
 */
function chooseForm(
  nc: NatsConnection,
  imageBytes: number,
  shownUrl: string,
  fields: readonly [string, string][],
): { headerApart: boolean } {
  const maxPayloadBytes = nc.info?.max_payload;
  const frameHeaderField: [string, string] = [FRAME_HEADER_NAME, 'A'.repeat(Math.ceil(FRAME_HEADER_BYTES / 3) * 4)];
  const joinedBytes = headerBlockBytes(fields) + FRAME_HEADER_BYTES + imageBytes;
  const apartBytes = headerBlockBytes([...fields, frameHeaderField]) + imageBytes;
  if (maxPayloadBytes !== undefined && imageBytes >= HEADER_APART_FROM_BYTES && apartBytes <= maxPayloadBytes)
    return { headerApart: true };
  if (maxPayloadBytes !== undefined && joinedBytes <= maxPayloadBytes) return { headerApart: false };
  const smallest = Math.min(joinedBytes, apartBytes);
  const how =
    smallest > NATS_MAX_PAYLOAD_BYTES
      ? `no NATS server can carry it: ${NATS_MAX_PAYLOAD_BYTES} bytes (64 MB) is NATS's hard limit`
      : "raise max_payload in the nats-server config (docker compose's nats service runs with max_payload 64MB, " +
        "NATS's hard limit)";
  throw new ItbError(
    ErrorCode.transport,
    `a ${imageBytes}-byte image makes a JetStream message of at least ${smallest} bytes (header block and data), ` +
      `over the max_payload of ${maxPayloadBytes ?? 'unknown'} bytes of NATS at ${shownUrl}: ${how}`,
  );
}

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const broker = requireBroker(options, 'nats-jetstream');
  const stream = sectionStream(options.credential, options.receiverIndex);
  const nc = await openConnection(broker, options.connectTimeoutMs, 'itb-transmitter');
  const statuses = nc.status();
  const guard = new LinkGuard(options.onFailure, `NATS JetStream link through ${broker.shown}`);
  const ackInbox = `${stream.acks}.${natsLibrary().nuid.next()}`;
  const fields: [string, string][] = [
    [ACK_INBOX_HEADER, ackInbox],
    [EXPECTED_STREAM_HEADER, stream.name],
  ];
  let headerApart: boolean;
  try {
    ({ headerApart } = chooseForm(nc, options.imageBytes, broker.shown, fields));
    await jetStreamOf(nc, broker);
    await subscribeAckInbox(nc, ackInbox, guard, { ...options, transport: 'nats-jetstream', shown: broker.shown });
  } catch (err) {
    await closeConnection(nc);
    throw err;
  }
  watchConnection(nc, statuses, (reason, cause) => guard.failWith(reason, cause));

  const js = jetStreamLibrary().jetstream(nc, { timeout: PUBACK_TIMEOUT_MS });
  // Publishes awaiting their PubAck; at WINDOW, the link holds the next frame until one comes back.
  let awaitingPubAcks = 0;
  let wake: (() => void) | undefined;
  const stored = (): void => {
    awaitingPubAcks--;
    const waiting = wake;
    wake = undefined;
    waiting?.();
  };
  const refused = (err: unknown): void => {
    if (err instanceof Error && err.name === 'JetStreamNotEnabled') {
      // JetStream answered at connect(): "no responders" now means no stream takes the section's subject.
      guard.fail(
        new ItbError(
          ErrorCode.receiverUnreachable,
          `no receiver is reading this section on NATS at ${broker.shown} (no stream ${stream.name} takes ` +
            `${stream.subject})`,
        ),
      );
      return;
    }
    guard.failWith(`JetStream did not store an image: ${errorMessage(err)}`, err);
  };
  const queue = new SendQueue(
    (header, payload) => {
      const h = natsLibrary().headers();
      for (const [name, value] of fields) h.set(name, value);
      const data = headerApart ? payload : Buffer.concat([header, payload], header.length + payload.length);
      if (headerApart) headersOf(header, h);
      awaitingPubAcks++;
      js.publish(stream.subject, data, { headers: h }).then(stored, refused);
      if (awaitingPubAcks < options.window) return undefined;
      return new Promise<void>((resolve) => {
        wake = resolve;
      });
    },
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, async () => {
    wake = undefined;
    await closeConnection(nc);
  });
}

/** A consumer's messages as the receiver reads them, and the stream they come from. */
interface OpenSection {
  stream: SectionStream;
  messages: ConsumerMessages;
  ending: boolean;
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const { broker, nc, receiver, brokerCpu } = await openNatsReceiver<OpenSection>(
    options,
    'nats-jetstream',
    'NATS JetStream',
  );
  const onMessage = messageTaker(nc, frameGate(options, 'nats-jetstream'), receiver.fail);
  // JetStream's manager, made at the first section (a server without JetStream fails that section).
  let jsm: JetStreamManager | undefined;

  const endStream = async (ended: OpenSection): Promise<void> => {
    ended.ending = true;
    ended.messages.stop();
    if (nc.isClosed() || jsm === undefined) return;
    // Deleting the stream deletes its consumer and whatever it still held.
    await settlesWithin(
      jsm.streams.delete(ended.stream.name).catch((err: unknown) => {
        options.log.warn({ stream: ended.stream.name, err: errorMessage(err) }, 'nats-jetstream: stream not deleted');
      }),
      API_TIMEOUT_MS,
    );
  };

  return receiver.listener(
    {
      open: (opening) =>
        withTimeout(
          (async () => {
            jsm ??= await jetStreamOf(nc, broker);
            return openStream(jsm, opening, onMessage, receiver.fail);
          })(),
          2 * API_TIMEOUT_MS,
          `creating the section's stream on NATS at ${broker.shown}`,
        ),
      end: endStream,
      async close(open) {
        if (open !== undefined) await endStream(open);
        await closeConnection(nc);
      },
    },
    brokerCpu,
  );
}

/**
 * The callback of one section's consumer: each message through the gate, its ack published to the link's inbox (only
 * to this section's inboxes), then the message acked to JetStream; one the gate drops is terminated, never redelivered.
 */
function messageTaker(
  nc: NatsConnection,
  gate: FrameGate,
  fail: (reason: string) => void,
): (stream: SectionStream) => (msg: JsMsg) => void {
  return (stream) => (msg) => {
    const arrivalNs = process.hrtime.bigint();
    const headers = msg.headers;
    const inbox = headers?.get(ACK_INBOX_HEADER) ?? '';
    // Acks go only to this section's inboxes, never to a subject a message names.
    if (!inbox.startsWith(`${stream.acks}.`) || inbox.length !== stream.acks.length + 1 + NUID_LENGTH) {
      msg.term();
      gate.reject(`message without this section's ack inbox in its ${ACK_INBOX_HEADER} header: dropped`);
      return;
    }
    if (msg.redelivered) {
      msg.term();
      gate.reject(`message ${msg.seq} redelivered by JetStream (its ack was late): dropped, never delivered twice`);
      return;
    }
    // JetStream publishes always carry headers: an empty Itb-Frame one means the frame header comes before the image.
    const apart = headers?.get(FRAME_HEADER_NAME) ?? '';
    const ack = takeFrame(gate, bufferOf(msg.data), apart === '' ? undefined : apart, arrivalNs, brokerStampOf(msg));
    if (ack === undefined) {
      msg.term();
      return;
    }
    try {
      nc.publish(inbox, encodeAck(ack));
      msg.ack();
    } catch (publishErr) {
      // Only a closed connection refuses it, which closed() reports too; nothing may throw into nats.js.
      fail(`sending an ack failed: ${errorMessage(publishErr)}`);
    }
  };
}

/**
 * Creates the opening section's stream (memory, work-queue retention) and its pull consumer (explicit acks,
 * max_ack_pending = WINDOW), and starts consuming it through `onMessage`; a consumer that stops before its section
 * ends fails the listener. The stream is deleted again when the consumer cannot be made.
 */
async function openStream(
  jsm: JetStreamManager,
  opening: SectionOpening,
  onMessage: (stream: SectionStream) => (msg: JsMsg) => void,
  fail: (reason: string) => void,
): Promise<OpenSection> {
  const { StorageType, RetentionPolicy, AckPolicy, DeliverPolicy } = jetStreamLibrary();
  const stream = sectionStream(opening.credential, opening.receiverIndex);
  await jsm.streams.add({
    name: stream.name,
    subjects: [stream.subject],
    storage: StorageType.Memory,
    retention: RetentionPolicy.Workqueue,
    num_replicas: 1,
  });
  try {
    await jsm.consumers.add(stream.name, {
      name: CONSUMER_NAME,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      max_ack_pending: opening.window,
    });
    const consumer = await jsm.jetstream().consumers.get(stream.name, CONSUMER_NAME);
    const open: OpenSection = { stream, ending: false, messages: undefined as unknown as ConsumerMessages };
    open.messages = await consumer.consume({
      // A pull of twice the window stays open ahead of the consumer's WINDOW unacked messages.
      max_messages: 2 * opening.window,
      abort_on_missing_resource: true,
      callback: onMessage(stream),
    });
    void open.messages.closed().then(
      (err) => {
        if (!open.ending) fail(`the section's consumer stopped${err ? `: ${errorMessage(err)}` : ''}`);
      },
      (err: unknown) => {
        if (!open.ending) fail(`the section's consumer stopped: ${errorMessage(err)}`);
      },
    );
    return open;
  } catch (err) {
    await settlesWithin(
      jsm.streams.delete(stream.name).catch(() => undefined),
      API_TIMEOUT_MS,
    );
    throw err;
  }
}

/**
 * NATS JetStream through a NATS server with JetStream (NATS_URL): a memory stream per section, publishes awaited for
 * their PubAcks, acks on the link's inbox.
 */
export const natsJetstreamTransport: Transport = {
  name: 'nats-jetstream',
  label: 'NATS JetStream',
  summary: {
    libraries: '@nats-io/jetstream, @nats-io/transport-node',
    image: 'JetStream publish into a memory stream per section, its PubAck awaited; a pull consumer with explicit acks',
    ack: "publish to the link's inbox (in an `Itb-Ack` header)",
  },
  traits: {
    baseline: false,
  },
  library: {
    packages: ['@nats-io/jetstream', '@nats-io/transport-node'],
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
