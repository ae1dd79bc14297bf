import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { answersWith, startLocalProcessInTempDir } from '../../shared/local-server.js';
import { freePort } from '../../shared/net.js';
import type { LocalServer } from '../contract.js';

// What the amqp transport needs beside the transport itself: RabbitMQ's message size limits, a
// bounded wait for a channel's 'drain', and the private RabbitMQ `npm start` and the tests run.

/** RabbitMQ's default max_message_size up to 3.x, what the private server runs with. */
export const RABBITMQ_3_MAX_MESSAGE_BYTES = 128 * 1024 * 1024;
/** RabbitMQ's default max_message_size from 4.0 on. */
export const RABBITMQ_4_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** A private RabbitMQ takes seconds to boot (Erlang, Mnesia, plugins). */
const START_TIMEOUT_MS = 60_000;

/**
 * Settles once amqplib's `channel` takes more after publish() returned false: resolves on its
 * 'drain', rejects on its 'close' or 'error'. A channel that closes never drains, so a wait for
 * 'drain' alone would never settle; this one leaves no listener behind either way.
 */
export function drainOrFail(channel: NodeJS.EventEmitter): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      channel.off('drain', onDrain);
      channel.off('close', onClose);
      channel.off('error', onError);
    };
    const onDrain = (): void => {
      done();
      resolve();
    };
    const onClose = (): void => {
      done();
      reject(new Error('the channel closed while waiting for it to drain'));
    };
    const onError = (err: unknown): void => {
      done();
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    channel.on('drain', onDrain);
    channel.on('close', onClose);
    channel.on('error', onError);
  });
}

/** A RabbitMQ of this machine's, with the directory it keeps everything in (removed at close). */
export interface PrivateRabbit extends LocalServer {
  dir: string;
  /** Its node name (`itb-<pid>-<port>@localhost`), for rabbitmqctl -n with HOME=dir. */
  nodeName: string;
}

/** The node name of this process's private RabbitMQ on `port`: never the machine's (rabbit@localhost). */
function nodeNameFor(port: number): string {
  return `itb-${process.pid}-${port}@localhost`;
}

/** What a test may ask of a private RabbitMQ. */
export interface PrivateRabbitOptions {
  host?: string;
  /** max_message_size in bytes (RabbitMQ 3.x's default unless a test asks for less). */
  maxMessageBytes?: number;
  /** A user of its own instead of guest/guest. */
  auth?: { user: string; password: string };
}

/**
 * A private rabbitmq-server on a free loopback port, with a node name, distribution port, Erlang
 * cookie (HOME), config, Mnesia and log directories of its own, all in a temporary directory
 * removed at close: it neither meets the machine's RabbitMQ nor keeps anything on disk.
 */
export async function startPrivateRabbit(options: PrivateRabbitOptions = {}): Promise<PrivateRabbit> {
  const host = options.host ?? '127.0.0.1';
  const server = await startLocalProcessInTempDir('rabbitmq', async (dir) => {
    const configPath = path.join(dir, 'rabbitmq.conf');
    const distPort = await freePort();
    await writeFile(
      configPath,
      [
        '# Written by image-transfer-bench (services/transports/kit/amqp.ts) for one run or test; removed when ' +
          'the server stops.',
        `max_message_size = ${options.maxMessageBytes ?? RABBITMQ_3_MAX_MESSAGE_BYTES}`,
        // guest may log in from a non-loopback address too (a receiver given another host's address).
        'loopback_users = none',
        ...(options.auth === undefined
          ? []
          : [`default_user = ${options.auth.user}`, `default_pass = ${options.auth.password}`]),
        'log.console = false',
        'log.file.level = warning',
        '',
      ].join('\n'),
    );
    await writeFile(path.join(dir, 'enabled_plugins'), '[].\n');
    await writeFile(path.join(dir, 'rabbitmq-env.conf'), '');
    return {
      // Not the wrapper in /usr/sbin, which switches to the rabbitmq user and the machine's directories.
      command: '/usr/lib/rabbitmq/bin/rabbitmq-server',
      args: () => [],
      env: (port) => ({
        ...process.env,
        HOME: dir,
        // Erlang runs directly in this process (no shell in between that SIGKILL would orphan it from).
        RUNNING_UNDER_SYSTEMD: 'true',
        RABBITMQ_CONF_ENV_FILE: path.join(dir, 'rabbitmq-env.conf'),
        RABBITMQ_NODENAME: nodeNameFor(port),
        RABBITMQ_NODE_IP_ADDRESS: host,
        RABBITMQ_NODE_PORT: String(port),
        RABBITMQ_DIST_PORT: String(distPort),
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
        RABBITMQ_CONFIG_FILE: configPath,
        RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
        RABBITMQ_MNESIA_BASE: path.join(dir, 'mnesia'),
        RABBITMQ_LOG_BASE: path.join(dir, 'log'),
        RABBITMQ_PID_FILE: path.join(dir, 'rabbitmq.pid'),
      }),
      // The broker opens its AMQP port last; its answer to the protocol header is connection.start (frame type 1).
      ready: (port) => answersWith(port, '\x01\x00\x00', 'AMQP\x00\x00\x09\x01', host),
      timeoutMs: START_TIMEOUT_MS,
    };
  });
  return {
    url: `amqp://${host}:${server.port}`,
    dir: server.dir,
    nodeName: nodeNameFor(server.port),
    close: server.close,
  };
}
