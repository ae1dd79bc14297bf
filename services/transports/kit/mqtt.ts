import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import path from 'node:path';
import type { MqttClient } from 'mqtt';
import { answersWith, startLocalProcessInTempDir } from '../../shared/local-server.js';
import type { LocalServer } from '../contract.js';

// What the mqtt transport and its ceiling pair share about MQTT.js beyond its options, and the
// private mosquitto `npm start` and the tests run.

/**
 * Turns Nagle's algorithm off on `client`'s socket, as the suite's other TCP transports have it:
 * MQTT.js leaves it on, so a small packet (an ack, a PUBACK) waits for the peer's delayed ACK, up
 * to 40 ms on Linux, which made mqtt's p50 move the wrong way under an injected delay.
 */
export function sendAtOnce(client: MqttClient): void {
  (client.stream as Partial<Socket> | undefined)?.setNoDelay?.(true);
}

/** What a private mosquitto is started with besides its port and host. */
export interface PrivateMosquittoOptions {
  host?: string;
  /** Mosquitto's max_packet_size (advertised in CONNACK); undefined: none, MQTT's own limit. */
  maxPacketBytes?: number;
  /** Mosquitto's max_inflight_messages (advertised as Receive Maximum); undefined: Mosquitto's default, 20. */
  maxInflightMessages?: number;
  /** A broker that refuses anonymous clients and takes this user and password only. */
  auth?: { user: string; password: string };
}

/** A mosquitto of this machine's, with the directory of its config (removed at close). */
export interface PrivateMosquitto extends LocalServer {
  configDir: string;
}

/**
 * A password file line as mosquitto_passwd writes it (PBKDF2-SHA512, `$7$`), made here so no password is on a command
 * line.
 */
function passwordLine(user: string, password: string): string {
  const iterations = 101;
  const salt = randomBytes(12);
  const hash = pbkdf2Sync(password, salt, iterations, 64, 'sha512');
  return `${user}:$7$${iterations}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** An MQTT 3.1.1 CONNECT with an empty client id: the readiness probe, answered by a CONNACK (0x20). */
const PROBE_CONNECT = Buffer.from([0x10, 0x0c, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c, 0x00, 0x00]);

/**
 * A private mosquitto on a free loopback port: no persistence, no limit on queued messages, the
 * options' limits; a config (and password file) written to a private temporary directory, removed at close.
 */
export async function startPrivateMosquitto(options: PrivateMosquittoOptions = {}): Promise<PrivateMosquitto> {
  const host = options.host ?? '127.0.0.1';
  const server = await startLocalProcessInTempDir('mosquitto', async (dir) => {
    const configPath = path.join(dir, 'mosquitto.conf');
    const passwordPath = path.join(dir, 'passwords');
    if (options.auth !== undefined) {
      await writeFile(passwordPath, `${passwordLine(options.auth.user, options.auth.password)}\n`, { mode: 0o600 });
    }
    return {
      command: 'mosquitto',
      args: (port) => {
        // Written synchronously before the start: the port is known only here.
        writeConfig(configPath, port, host, options, passwordPath);
        return ['-c', configPath];
      },
      ready: (port) => answersWith(port, '\x20', PROBE_CONNECT.toString('latin1'), host),
    };
  });
  return { url: `mqtt://${host}:${server.port}`, configDir: server.dir, close: server.close };
}

function writeConfig(
  configPath: string,
  port: number,
  host: string,
  options: PrivateMosquittoOptions,
  passwordPath: string,
): void {
  const lines = [
    '# Written by image-transfer-bench (services/transports/kit/mqtt.ts) for one run or test; removed when the ' +
      'broker stops.',
    `listener ${port} ${host}`,
    'persistence false',
    // Its output is a pipe nobody reads: logging there could fill it and stall the broker.
    'log_dest none',
    // Run as root, mosquitto would switch to its own user, who cannot read this private directory.
    ...(process.getuid?.() === 0 ? ['user root'] : []),
    // QoS 1 messages over this many, queued for a subscriber, would be dropped silently: none is.
    'max_queued_messages 0',
    // Nagle's algorithm off on the broker's sockets too (Mosquitto's default leaves it on): a small
    // packet would wait up to the client's delayed ACK.
    'set_tcp_nodelay true',
    ...(options.maxPacketBytes === undefined ? [] : [`max_packet_size ${options.maxPacketBytes}`]),
    ...(options.maxInflightMessages === undefined ? [] : [`max_inflight_messages ${options.maxInflightMessages}`]),
    ...(options.auth === undefined
      ? ['allow_anonymous true']
      : ['allow_anonymous false', `password_file ${passwordPath}`]),
    '',
  ];
  // Synchronous: startLocalProcess's args() is, and only it knows the port.
  writeFileSync(configPath, lines.join('\n'), { mode: 0o600 });
}
