import type { IConnackPacket, IPublishPacket, MqttClient } from 'mqtt';
import { ErrorCode, ItbError } from '../../core/errors.js';
import { settlesWithin, withTimeout } from '../../shared/waits.js';
import { lazyLibrary } from '../kit/library.js';
import { ackSeq, CEILING_ACK_BYTES, ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';
import { sendAtOnce } from '../kit/mqtt.js';

// MQTT 5 (mqtt), as the mqtt transport: each image one QoS 1 PUBLISH on this run's topic
// (options.channel), the image as its payload and the 40-byte header as its Correlation Data, with
// the sender's ack topic as its Response Topic (one subscription); the receiver publishes the
// 12-byte ack to that topic at once, at QoS 1. Each side keeps at most min(WINDOW, the broker's
// Receive Maximum) PUBLISHes without their PUBACK, as the transport (MQTT.js does not). No section
// topics, no gate, no status watch beyond the connection's end; reconnect off, as the transport.

const mqttLibrary = lazyLibrary<typeof import('mqtt')>('mqtt');

/** Bound on reaching the broker. */
const CONNECT_TIMEOUT_MS = 5000;
/** Bound on a SUBSCRIBE round trip. */
const SUBSCRIBE_TIMEOUT_MS = 2000;
/** Bound on closing. */
const CLOSE_TIMEOUT_MS = 2000;

/** One MQTT 5 connection with the broker's Receive Maximum (65,535 when not advertised), never reconnecting. */
async function open(brokerUrl: string | undefined): Promise<{ client: MqttClient; receiveMaximum: number }> {
  if (brokerUrl === undefined) throw new ItbError(ErrorCode.config, 'mqtt ceiling: no broker URL (mqtt://host:port)');
  const client = mqttLibrary().connect(brokerUrl, {
    protocolVersion: 5,
    reconnectPeriod: 0,
    connectTimeout: CONNECT_TIMEOUT_MS,
  });
  client.on('error', () => {});
  const connack = await new Promise<IConnackPacket>((resolve, reject) => {
    client.once('connect', resolve);
    client.once('close', () => reject(new Error(`mqtt ceiling: no connection to ${brokerUrl}`)));
  });
  // Nagle off, as the transport has it (kit/mqtt.ts).
  sendAtOnce(client);
  return { client, receiveMaximum: connack.properties?.receiveMaximum ?? 65_535 };
}

/** Publishes at QoS 1 with at most `cap` PUBACKs outstanding; the rest wait in order. */
function cappedPublisher(
  client: MqttClient,
  cap: number,
  onError: (err: Error) => void,
): (topic: string, payload: Buffer, properties?: IPublishPacket['properties']) => void {
  let inFlight = 0;
  const waiting: [string, Buffer, IPublishPacket['properties']][] = [];
  const publish = (topic: string, payload: Buffer, properties: IPublishPacket['properties']): void => {
    inFlight += 1;
    client.publish(topic, payload, { qos: 1, properties }, (err) => {
      if (err) return onError(err);
      inFlight -= 1;
      const next = waiting.shift();
      if (next !== undefined) publish(...next);
    });
  };
  return (topic, payload, properties) => {
    if (inFlight < cap) publish(topic, payload, properties);
    else waiting.push([topic, payload, properties]);
  };
}

/** Closes the connection at once, bounded. */
async function closeWithin(client: MqttClient): Promise<void> {
  await settlesWithin(client.endAsync(true), CLOSE_TIMEOUT_MS);
}

/** The mqtt transport's ceiling: a QoS 1 publish per image with the ack topic as its Response Topic. */
export const mqttCeiling: CeilingPair = {
  transport: 'mqtt',
  how:
    'mqtt (MQTT 5): client.publish(topic, image, {qos: 1, properties: {responseTopic, correlationData: header}}); ' +
    'the subscriber client.publish(responseTopic, ack, {qos: 1}); PUBLISHes in flight ≤ the Receive Maximum',
  async receive(options) {
    const { client, receiveMaximum } = await open(options.brokerUrl);
    const { arrived, onImage } = options;
    const publish = cappedPublisher(client, receiveMaximum, () => {});
    client.on('message', (_topic: string, payload: Buffer, packet: IPublishPacket) => {
      const header = packet.properties?.correlationData;
      const reply = packet.properties?.responseTopic;
      if (!Buffer.isBuffer(header) || reply === undefined) return;
      const seq = headerSeq(header);
      arrived(seq);
      publish(reply, ceilingAck(seq));
      onImage?.(seq, payload);
    });
    try {
      await withTimeout(client.subscribeAsync(options.channel, { qos: 1 }), SUBSCRIBE_TIMEOUT_MS, 'mqtt ceiling');
    } catch (err) {
      await closeWithin(client);
      throw err;
    }
    return { port: options.port, close: () => closeWithin(client) };
  },
  async connect(options) {
    const { client, receiveMaximum } = await open(options.brokerUrl);
    const ackTopic = `${options.channel}/acks/${Math.random().toString(36).slice(2)}`;
    let closing = false;
    client.on('message', (topic: string, payload: Buffer) => {
      if (topic !== ackTopic || payload.length !== CEILING_ACK_BYTES) return;
      // MQTT.js emits the message before it writes the ack's PUBACK: the next image (the driver
      // sends it from onAck) goes after that PUBACK, as the transport's does.
      const seq = ackSeq(payload);
      queueMicrotask(() => options.onAck(seq));
    });
    try {
      await withTimeout(client.subscribeAsync(ackTopic, { qos: 1 }), SUBSCRIBE_TIMEOUT_MS, 'mqtt ceiling acks');
    } catch (err) {
      await closeWithin(client);
      throw err;
    }
    client.on('close', () => {
      if (!closing) options.onFailure('mqtt: connection closed');
    });
    const publish = cappedPublisher(client, Math.min(options.window, receiveMaximum), (err) =>
      options.onFailure(`mqtt: the broker refused a PUBLISH: ${err.message}`),
    );
    return {
      send(_seq, header, image) {
        publish(options.channel, image, { responseTopic: ackTopic, correlationData: header });
      },
      async close() {
        closing = true;
        await closeWithin(client);
      },
    };
  },
};
