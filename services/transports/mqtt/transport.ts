import { createHash, randomBytes } from 'node:crypto';
import type { IConnackPacket, IPublishPacket, MqttClient, Packet } from 'mqtt';
import type { SectionCredential } from '../../core/wire/auth.js';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { decodeAck, encodeAck, FRAME_HEADER_BYTES, type Ack } from '../../core/wire/frame.js';
import { drainOrClose, settlesWithin, withTimeout } from '../../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { brokerProcessReader, brokerRequirement, type BrokerAddress } from '../kit/broker.js';
import { connectWithin } from '../kit/connect.js';
import { BrokerReceiver } from '../kit/broker-receiver.js';
import { frameGate } from '../kit/gate.js';
import { lazyLibrary } from '../kit/library.js';
import { LinkGuard } from '../kit/link-guard.js';
import { sendAtOnce, startPrivateMosquitto } from '../kit/mqtt.js';
import { SendQueue } from '../kit/send-queue.js';

/** MQTT.js, loaded when the transport is first used (kit/library.ts). */
const mqttLibrary = lazyLibrary<typeof import('mqtt')>('mqtt');

// MQTT 5 (protocolVersion 5, not MQTT.js's default 4) through a broker (MQTT_URL), every image at
// QoS 1: each image is one PUBLISH to the section's frames topic, the image alone as its payload
// and the 40-byte frame header as its Correlation Data (a binary property of MQTT 5, written into
// the packet's header by mqtt-packet: no copy of the image of ours; mqtt-packet writes the payload
// to the socket as it is). Its Response Topic is the link's ack topic (one subscription per link);
// the receiver passes the message through the frame gate and publishes the 12-byte ack to that
// topic at once, at QoS 1 too. One publisher's QoS 1 messages reach a subscriber in order.
// The window: MQTT 5's Receive Maximum, which the broker advertises in CONNACK (Mosquitto's
// max_inflight_messages; 65,535 when not advertised, as MQTT 5 says), is the most QoS 1 PUBLISHes a
// client may have unacknowledged (no PUBACK yet) at once; a broker answers more with "Quota
// exceeded". MQTT.js does not enforce it, so each side counts its own: the transmitter never has
// more than min(WINDOW, Receive Maximum) PUBLISHes in flight, and holds the next image in its
// SendQueue (inside that image's time) until a PUBACK frees a place; the receiver's acks wait the
// same way. The link logs its cap. The broker's PUBACK comes once the broker took the message, so
// a window larger than the cap still keeps WINDOW images unacknowledged end to end.
// Nothing is dropped silently: a PUBLISH the broker refuses (a PUBACK with an error reason code)
// fails the link, and one that no subscriber takes (reason code 16, "No matching subscribers")
// fails it as "no receiver is reading this section". Reconnect is off: a connection that closes,
// or a DISCONNECT from the broker, fails the link or the listener. A broker delivers at most
// max_queued_messages (Mosquitto: 1000 by default; the private server has no limit) beyond a
// subscriber's in-flight ones and drops the rest of QoS 1 silently; a subscriber here advertises
// no Receive Maximum (65,535), so what it holds in flight, a window of images, never queues.
// Counted end to end: the run counts what each receiver acknowledged against what was sent.
// Limits: a PUBLISH is at most the broker's Maximum Packet Size, from CONNACK when advertised
// (Mosquitto's max_packet_size; none by default), and at most MQTT's own: a remaining length of
// 268,435,455 bytes. connect() compares the section's PUBLISH (header, topic, properties, image)
// with it before anything is sent.
// MQTT stamps nothing of its own on a message (no broker arrival time), so an image's one-way time
// cannot be split into parts through the broker.
// Each section has topics of its own, named after its credential: the receiver subscribes to the
// open section's frames topic only (in openSection(), SUBACK awaited), unsubscribes when it ends,
// and acks only to response topics under that section's ack prefix. A topic cannot be guessed
// without AUTH_TOKEN, but any client allowed to subscribe to `#` sees them: the broker's own users
// and ACLs (MQTT_URL's user and MQTT_PASSWORD) guard it.

/** The topics of one section: images go to `frames`; acks come back on topics under `acks`. */
export interface SectionTopics {
  frames: string;
  /** Prefix of every link's ack topic (`<acks>/<unique>`). */
  acks: string;
}

/** Topics named after the section's id and a digest of its key (the key itself stays off the broker). */
export function sectionTopics(credential: SectionCredential): SectionTopics {
  // base64url has no `/`, `+` or `#`: one topic level.
  const tag = createHash('sha256').update(credential.key).digest('base64url').slice(0, 22);
  const prefix = `itb/${credential.sectionId}/${tag}`;
  return { frames: `${prefix}/frames`, acks: `${prefix}/acks` };
}

/** The port of an mqtt:// URL that names none (MQTT's registered port). */
const MQTT_DEFAULT_PORT = 1883;

/** MQTT's own limit on a packet's remaining length (four bytes of variable-length integer). */
export const MQTT_MAX_REMAINING_LENGTH = 268_435_455;
/** MQTT 5: a Receive Maximum the CONNACK does not give is this. */
const DEFAULT_RECEIVE_MAXIMUM = 65_535;
/** The receiver has no configured bound, so it gets this one for reaching the broker. */
const RECEIVER_CONNECT_TIMEOUT_MS = 5000;
/** Bound on a SUBSCRIBE or UNSUBSCRIBE round trip. */
const SUBSCRIBE_TIMEOUT_MS = 2000;
/** Bound on closing a connection. */
const CLOSE_TIMEOUT_MS = 2000;
/** PUBACK reason code: the broker took the message and no subscription matched it. */
const NO_MATCHING_SUBSCRIBERS = 16;
/** CONNACK reason codes that refuse who we are: retrying would be refused again. */
const REFUSED_CODES = new Set([0x86, 0x87, 0x8c]);
/** Keepalive: the broker and the client each notice a dead peer within 1.5 times this. */
const KEEPALIVE_SECONDS = 10;

/** Bytes of a variable-length integer holding `value`. */
function varIntBytes(value: number): number {
  return value < 128 ? 1 : value < 16_384 ? 2 : value < 2_097_152 ? 3 : 4;
}

/**
 * Bytes of the whole PUBLISH of one image (QoS 1: a packet id; properties Response Topic and a
 * 40-byte Correlation Data); exported for tests.
 */
export function publishPacketBytes(topic: string, responseTopic: string, imageBytes: number): number {
  const properties = 1 + 2 + Buffer.byteLength(responseTopic) + 1 + 2 + FRAME_HEADER_BYTES;
  const remaining = 2 + Buffer.byteLength(topic) + 2 + varIntBytes(properties) + properties + imageBytes;
  return 1 + varIntBytes(remaining) + remaining;
}

/** A connection with what its CONNACK said. */
interface Connected {
  client: MqttClient;
  /** Most unacknowledged QoS 1 PUBLISHes the broker takes from this client. */
  receiveMaximum: number;
  /** Largest packet the broker takes; undefined: it advertises none. */
  maximumPacketSize: number | undefined;
}

/**
 * Opens one MQTT 5 connection within `timeoutMs`, retrying refused or failed attempts; a broker that
 * refuses the credentials is not retried. Never reconnects by itself: a drop mid-run is a failure.
 */
function openConnection(broker: BrokerAddress, timeoutMs: number, role: string): Promise<Connected> {
  return connectWithin(
    `MQTT at ${broker.shown}`,
    timeoutMs,
    (remainingMs) =>
      new Promise<Connected>((resolve, reject) => {
        const client = mqttLibrary().connect(broker.url, {
          protocolVersion: 5,
          clientId: `itb-${role}-${randomBytes(8).toString('hex')}`,
          clean: true,
          reconnectPeriod: 0,
          connectTimeout: remainingMs,
          keepalive: KEEPALIVE_SECONDS,
          resubscribe: false,
          ...(broker.user === undefined ? {} : { username: broker.user }),
          ...(broker.password === undefined ? {} : { password: broker.password }),
        });
        let lastError: Error | undefined;
        const onError = (err: Error): void => {
          lastError ??= err;
        };
        const onClose = (): void => {
          done();
          reject(lastError ?? new Error('connection closed before CONNACK'));
        };
        const onConnect = (connack: IConnackPacket): void => {
          done();
          sendAtOnce(client);
          resolve({
            client,
            receiveMaximum: connack.properties?.receiveMaximum ?? DEFAULT_RECEIVE_MAXIMUM,
            maximumPacketSize: connack.properties?.maximumPacketSize,
          });
        };
        const done = (): void => {
          client.off('error', onError);
          client.off('close', onClose);
          client.off('connect', onConnect);
        };
        // A listener stays on 'error' for the client's whole life, or an error would be thrown.
        client.on('error', () => {});
        client.on('error', onError);
        client.on('close', onClose);
        client.on('connect', onConnect);
      }).catch((err: unknown) => {
        const code = (err as { code?: unknown }).code;
        if (typeof code === 'number' && REFUSED_CODES.has(code)) {
          throw new ItbError(ErrorCode.refused, `the broker refused the connection: ${errorMessage(err)}`, {
            cause: err,
          });
        }
        throw err;
      }),
    (late) => void closeConnection(late.client),
  );
}

/** Closes the connection at once (queued packets dropped), bounded. */
async function closeConnection(client: MqttClient): Promise<void> {
  if (client.disconnected && !client.connected) return;
  await settlesWithin(client.endAsync(true), CLOSE_TIMEOUT_MS);
}

/**
 * Calls `onEnd` with the reason when the connection closes or the broker disconnects the client; may call more than
 * once.
 */
function watchConnection(client: MqttClient, onEnd: (reason: string, cause?: unknown) => void): void {
  let lastError: Error | undefined;
  client.on('error', (err) => {
    lastError = err;
  });
  client.on('disconnect', (packet) =>
    onEnd(`the broker disconnected the client (reason code ${packet.reasonCode ?? 0})`),
  );
  client.on('close', () => onEnd(`connection closed${lastError ? `: ${lastError.message}` : ''}`, lastError));
}

/**
 * QoS 1 PUBLISHes a side has out without their PUBACK, capped at `cap`: take() counts one and
 * returns a promise when the cap is reached, which the PUBACK that frees a place resolves.
 */
class PublishWindow {
  private inFlight = 0;
  private waiter: (() => void) | undefined;

  constructor(readonly cap: number) {}

  take(): Promise<void> | undefined {
    this.inFlight += 1;
    return this.inFlight < this.cap ? undefined : new Promise((resolve) => (this.waiter = resolve));
  }

  release(): void {
    this.inFlight -= 1;
    const waiter = this.waiter;
    if (waiter !== undefined && this.inFlight < this.cap) {
      this.waiter = undefined;
      waiter();
    }
  }
}

/**
 * Checks that one image's PUBLISH fits what the broker advertised and MQTT itself allows; a section
 * whose images do not is rejected before anything is sent.
 */
function checkPacketSize(
  connected: Connected,
  topics: SectionTopics,
  ackTopic: string,
  imageBytes: number,
  shown: string,
): void {
  const packetBytes = publishPacketBytes(topics.frames, ackTopic, imageBytes);
  const remaining = packetBytes - 1 - varIntBytes(packetBytes);
  if (remaining > MQTT_MAX_REMAINING_LENGTH) {
    throw new ItbError(
      ErrorCode.transport,
      `a ${imageBytes}-byte image makes a ${packetBytes}-byte MQTT PUBLISH: no MQTT broker can carry it ` +
        `(${MQTT_MAX_REMAINING_LENGTH} bytes of remaining length is MQTT's own limit)`,
    );
  }
  const max = connected.maximumPacketSize;
  if (max !== undefined && packetBytes > max) {
    throw new ItbError(
      ErrorCode.transport,
      `a ${imageBytes}-byte image makes a ${packetBytes}-byte MQTT PUBLISH, over the maximum packet size of ` +
        `${max} bytes that MQTT at ${shown} advertises: raise max_packet_size in the Mosquitto config`,
    );
  }
}

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const broker = requireBroker(options, 'mqtt');
  const topics = sectionTopics(options.credential);
  const ackTopic = `${topics.acks}/${randomBytes(12).toString('base64url')}`;
  const connected = await openConnection(broker, options.connectTimeoutMs, 'transmitter');
  const { client } = connected;
  const guard = new LinkGuard(options.onFailure, `MQTT link through ${broker.shown}`);
  client.on('message', (topic: string, payload: Buffer) => {
    if (topic !== ackTopic) return;
    let ack: Ack;
    try {
      ack = decodeAck(payload);
    } catch (err) {
      options.log.warn({ err: errorMessage(err) }, 'mqtt: ignoring a malformed ack');
      return;
    }
    guard.ack(options.onAck, ack);
  });
  try {
    checkPacketSize(connected, topics, ackTopic, options.imageBytes, broker.shown);
    // The broker has the ack subscription before the first frame can be answered.
    await withTimeout(
      client.subscribeAsync(ackTopic, { qos: 1 }),
      Math.min(options.connectTimeoutMs, SUBSCRIBE_TIMEOUT_MS),
      `subscribing to the ack topic on MQTT at ${broker.shown}`,
    );
  } catch (err) {
    await closeConnection(client);
    throw err;
  }
  watchConnection(client, (reason, cause) => guard.failWith(reason, cause));
  client.on('packetreceive', (packet: Packet) => {
    if (packet.cmd === 'puback' && packet.reasonCode === NO_MATCHING_SUBSCRIBERS) {
      guard.fail(
        new ItbError(
          ErrorCode.receiverUnreachable,
          `no receiver is reading this section on MQTT at ${broker.shown} (nobody subscribes to ${topics.frames})`,
        ),
      );
    }
  });

  const window = new PublishWindow(Math.min(options.window, connected.receiveMaximum));
  options.log.info(
    { url: broker.shown, window: options.window, receiveMaximum: connected.receiveMaximum, cap: window.cap },
    `mqtt: at most ${window.cap} PUBLISHes in flight: min(WINDOW ${options.window}, the broker's Receive Maximum ` +
      `${connected.receiveMaximum})`,
  );
  const onPuback = (err?: Error): void => {
    if (err) {
      guard.failWith(`the broker refused a PUBLISH: ${err.message}`, err);
      return;
    }
    window.release();
  };
  const queue = new SendQueue(
    (header, payload) => {
      client.publish(
        topics.frames,
        payload,
        { qos: 1, properties: { responseTopic: ackTopic, correlationData: header } },
        onPuback,
      );
      const full = window.take();
      if (full !== undefined) return full;
      const stream = client.stream as NodeJS.WritableStream & { writableNeedDrain?: boolean; destroyed?: boolean };
      return stream.writableNeedDrain && !stream.destroyed ? drainOrClose(stream) : undefined;
    },
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, () => closeConnection(client));
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const broker = requireBroker(options, 'mqtt');
  const connected = await openConnection(broker, RECEIVER_CONNECT_TIMEOUT_MS, 'receiver');
  const brokerCpu = await brokerProcessReader(broker, MQTT_DEFAULT_PORT, options.log);
  const { client } = connected;
  // Its open section is the topics it reads.
  const receiver = new BrokerReceiver<SectionTopics>(options, {
    transport: 'mqtt',
    server: 'MQTT',
    shown: broker.shown,
  });
  watchConnection(client, receiver.fail);
  const gate = frameGate(options, 'mqtt');

  // Acks are QoS 1 PUBLISHes too, under the same Receive Maximum: they wait for a place in order.
  const window = new PublishWindow(connected.receiveMaximum);
  const onPuback = (err?: Error): void => {
    if (err) receiver.fail(`the broker refused an ack: ${err.message}`);
    else window.release();
  };
  const acks = new SendQueue(
    (ack, topic) => {
      client.publish(topic.toString(), ack, { qos: 1 }, onPuback);
      return window.take();
    },
    (err) => receiver.fail(`sending an ack failed: ${err.message}`),
  );

  client.on('message', (topic: string, payload: Buffer, packet: IPublishPacket) => {
    const topics = receiver.section;
    if (topics === undefined || topic !== topics.frames) return;
    // Acks go only to this section's ack topics, never to a topic a message names.
    const reply = packet.properties?.responseTopic;
    if (reply === undefined || !reply.startsWith(`${topics.acks}/`)) {
      gate.reject("message without this section's ack topic as its response topic: dropped");
      return;
    }
    const header = packet.properties?.correlationData;
    if (!Buffer.isBuffer(header) || header.length !== FRAME_HEADER_BYTES) {
      gate.reject(`message whose correlation data is not a ${FRAME_HEADER_BYTES}-byte frame header`);
      return;
    }
    const ack = gate.frame(header, payload);
    if (ack !== undefined) acks.push(encodeAck(ack), Buffer.from(reply));
  });

  return receiver.listener(
    {
      async open(opening) {
        const topics = sectionTopics(opening.credential);
        // The broker has the subscription before the transmitter is told to connect.
        await withTimeout(
          client.subscribeAsync(topics.frames, { qos: 1 }),
          SUBSCRIBE_TIMEOUT_MS,
          `subscribing to the section's topic on MQTT at ${broker.shown}`,
        );
        return topics;
      },
      async end(ended) {
        if (client.connected) await settlesWithin(client.unsubscribeAsync(ended.frames), SUBSCRIBE_TIMEOUT_MS);
      },
      async close() {
        acks.stop();
        await closeConnection(client);
      },
    },
    brokerCpu,
  );
}

/** The MQTT broker of MQTT_URL (and MQTT_PASSWORD), or a clear error when it is not set. */
const requireBroker = brokerRequirement({
  envVar: 'MQTT_URL',
  broker: 'an MQTT broker',
  example: 'mqtt://127.0.0.1:1883',
});

/** MQTT 5 through a broker (MQTT_URL): one QoS 1 PUBLISH per image, acks on the link's topic. */
export const mqttTransport: Transport = {
  name: 'mqtt',
  label: 'MQTT',
  summary: {
    libraries: 'mqtt (MQTT 5)',
    image: 'QoS 1 `PUBLISH`: the image as payload, the header as Correlation Data, the ack topic as Response Topic',
    ack: 'QoS 1 `PUBLISH` to the Response Topic',
  },
  traits: {
    baseline: false,
    // Every receiver subscribes to the section's topic: one PUBLISH reaches them all.
    fanOut: 'one send',
  },
  library: {
    packages: ['mqtt'],
  },
  deployment: {
    defaultRun: false,
    setting: { kind: 'url', envVar: 'MQTT_URL', schemes: ['mqtt'], example: 'mqtt://127.0.0.1:1883' },
    composeService: 'mqtt',
    localServer: { command: 'mosquitto', start: (host) => startPrivateMosquitto({ host }) },
  },
  connect,
  listen,
};
