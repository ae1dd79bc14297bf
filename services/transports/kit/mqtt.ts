import type { Socket } from 'node:net';
import type { MqttClient } from 'mqtt';

// What the mqtt transport and its ceiling pair share about MQTT.js beyond its options.

/**
 * Turns Nagle's algorithm off on `client`'s socket, as the suite's other TCP transports have it:
 * MQTT.js leaves it on, so a small packet (an ack, a PUBACK) waits for the peer's delayed ACK, up
 * to 40 ms on Linux, which made mqtt's p50 move the wrong way under an injected delay.
 */
export function sendAtOnce(client: MqttClient): void {
  (client.stream as Partial<Socket> | undefined)?.setNoDelay?.(true);
}
