import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Msg, MsgHdrs, NatsConnection, Status } from '@nats-io/transport-node';
import type { SectionCredential } from '../../core/wire/auth.js';
import type { BrokerStamp } from '../../core/model/broker-split.js';
import { errorMessage } from '../../core/errors.js';
import { decodeAck, FRAME_HEADER_BYTES, type Ack } from '../../core/wire/frame.js';
import { answersWith, startLocalProcessInTempDir } from '../../shared/local-server.js';
import { settlesWithin, withTimeout } from '../../shared/waits.js';
import type { LocalServer, ReceiverListener, ReceiverOptions, TransmitterOptions } from '../contract.js';
import { brokerProcessReader, brokerRequirement, type BrokerAddress } from './broker.js';
import { BrokerReceiver } from './broker-receiver.js';
import { connectWithin } from './connect.js';
import type { FrameGate } from './gate.js';
import { lazyLibrary } from './library.js';
import type { LinkGuard } from './link-guard.js';

// What the NATS transports (nats: core NATS; nats-jetstream: a JetStream stream per section) share:
// one connection per side that never reconnects by itself (a drop mid-run is a failure), the
// credentials passed as options, a watch that reports how a connection ended, the section's
// subjects named after its credential, the frame header carried as a NATS message header, and the
// private nats-server `npm start` and the tests run.

/** The NATS client, loaded when a NATS transport is first used (kit/library.ts). */
export const natsLibrary = lazyLibrary<typeof import('@nats-io/transport-node')>('@nats-io/transport-node');

/** The subjects of one section: images go to `frames`; acks come back on inboxes under `acks`. */
export interface SectionSubjects {
  frames: string;
  /** Prefix of every link's ack inbox (`<acks>.<unique>`). */
  acks: string;
  /** The subjects' common part, `itb.<sectionId>.<tag>`, with `tag` alone (base64url) for names that take no dots. */
  tag: string;
}

/**
 * Subjects named after the section's id and a digest of its key (the key itself stays off the server); exported for
 * tests.
 */
export function sectionSubjects(credential: SectionCredential): SectionSubjects {
  // base64url's characters are all valid in a subject token.
  const tag = createHash('sha256').update(credential.key).digest('base64url').slice(0, 22);
  const prefix = `itb.${credential.sectionId}.${tag}`;
  return { frames: `${prefix}.frames`, acks: `${prefix}.acks`, tag };
}

/** NATS's hard limit on a message, and what the private server and docker compose's nats service allow. */
export const NATS_MAX_PAYLOAD_BYTES = 64 * 1024 * 1024;
/** What a server holds for one slow client before it disconnects it: a window of large images. */
const NATS_MAX_PENDING_BYTES = 1024 * 1024 * 1024;
/**
 * From this image size on, the frame header travels as a NATS message header and the image alone as the data (see
 * nats.ts).
 */
export const HEADER_APART_FROM_BYTES = 64 * 1024;
/** The NATS message header that carries the frame header, in base64. */
export const FRAME_HEADER_NAME = 'Itb-Frame';
/** The receiver has no configured bound, so it gets this one for reaching NATS. */
export const RECEIVER_CONNECT_TIMEOUT_MS = 5000;
/** Bound on a round trip that confirms a subscription is in place on the server. */
export const FLUSH_TIMEOUT_MS = 2000;
/** Bound on closing a connection: nats.js flushes what it queued, then drops the socket. */
const CLOSE_TIMEOUT_MS = 2000;
/** Status code of the message the server sends to a reply subject when nobody subscribes to the subject. */
export const NO_RESPONDERS_CODE = 503;

/**
 * Opens one connection to NATS within `timeoutMs`, retrying refused or failed attempts. The client
 * never reconnects by itself afterwards: a connection that drops mid-run is a failure.
 */
export function openConnection(broker: BrokerAddress, timeoutMs: number, name: string): Promise<NatsConnection> {
  return connectWithin(
    `NATS at ${broker.shown}`,
    timeoutMs,
    (remainingMs) =>
      natsLibrary().connect({
        servers: broker.url,
        ...natsAuth(broker),
        name,
        reconnect: false,
        timeout: remainingMs,
        noRandomize: true,
        ignoreClusterUpdates: true,
      }),
    (late) => void closeConnection(late),
  );
}

/**
 * The CONNECT credentials of `broker`. nats.js reads none from the URL (it keeps only host and
 * port, and a password starting with a digit would even be taken for the port), so they go as
 * options: a user with a password as user and pass; a user alone, or a password alone, as the
 * server's token (nats-server --auth), as NATS's Go client and CLI read `nats://token@host`.
 */
function natsAuth(broker: BrokerAddress): { user: string; pass: string } | { token: string } | Record<string, never> {
  if (broker.user !== undefined && broker.password !== undefined) return { user: broker.user, pass: broker.password };
  const token = broker.user ?? broker.password;
  return token === undefined ? {} : { token };
}

/** Closes the connection, bounded: nats.js first flushes what it queued, which a dead server may never take. */
export async function closeConnection(nc: NatsConnection): Promise<void> {
  if (nc.isClosed()) return;
  await settlesWithin(nc.close(), CLOSE_TIMEOUT_MS);
}

/**
 * Calls `onEnd` with the reason when the connection closes, stops answering pings, or the server
 * reports an error (nats.js turns a refused publish into one; nothing else would say it); it may
 * call more than once, and callers report the first. A disconnect is left to closed(), which
 * follows it at once with reconnect off and says why. `statuses` is nc.status(), taken before
 * anything could happen on the connection.
 */
export function watchConnection(
  nc: NatsConnection,
  statuses: AsyncIterable<Status>,
  onEnd: (reason: string, cause?: unknown) => void,
): void {
  void (async () => {
    for await (const status of statuses) {
      if (status.type === 'error') onEnd(`the server reported an error: ${status.error.message}`, status.error);
      else if (status.type === 'slowConsumer')
        onEnd(`slow consumer on ${status.sub.getSubject()} (${status.pending} messages pending)`);
      else if (status.type === 'staleConnection') onEnd('the server stopped answering pings');
    }
  })().catch((err: unknown) => onEnd(`connection status unreadable: ${errorMessage(err)}`, err));
  void nc.closed().then((err) => onEnd(`connection closed${err ? `: ${err.message}` : ''}`, err));
}

/** A NATS transport's receiver side as it starts: its broker, its connection, and the broker's CPU reading. */
export interface NatsReceiver<Section> {
  broker: BrokerAddress;
  nc: NatsConnection;
  /** The skeleton, failed when the connection ends or the server reports an error (watchConnection). */
  receiver: BrokerReceiver<Section>;
  brokerCpu: Pick<ReceiverListener, 'readBroker'>;
}

/**
 * Connects a NATS transport's receiver side to the server of NATS_URL; `server` is the broker as its one failure
 * names it ("NATS JetStream").
 */
export async function openNatsReceiver<Section>(
  options: ReceiverOptions,
  transport: string,
  server: string,
): Promise<NatsReceiver<Section>> {
  const broker = requireBroker(options, transport);
  const nc = await openConnection(broker, RECEIVER_CONNECT_TIMEOUT_MS, 'itb-receiver');
  const brokerCpu = await brokerProcessReader(broker, NATS_DEFAULT_PORT, options.log);
  const statuses = nc.status();
  const receiver = new BrokerReceiver<Section>(options, { transport, server, shown: broker.shown });
  watchConnection(nc, statuses, receiver.fail);
  return { broker, nc, receiver, brokerCpu };
}

/**
 * Subscribes the link's ack inbox on `nc` and waits until the server has it, so the first frame can be answered: acks
 * go to `guard` (a malformed one is logged and ignored, a subscription error fails the link). `onStatus` sees every
 * message first and returns true for one it took (core NATS's "no responders" status).
 */
export async function subscribeAckInbox(
  nc: NatsConnection,
  inbox: string,
  guard: LinkGuard,
  options: Pick<TransmitterOptions, 'log' | 'onAck' | 'connectTimeoutMs'> & { transport: string; shown: string },
  onStatus?: (msg: Msg) => boolean,
): Promise<void> {
  nc.subscribe(inbox, {
    callback: (err, msg) => {
      if (err) {
        guard.failWith(`ack subscription failed: ${err.message}`, err);
        return;
      }
      if (onStatus?.(msg) === true) return;
      let ack: Ack;
      try {
        ack = decodeAck(bufferOf(msg.data));
      } catch (decodeErr) {
        options.log.warn({ err: errorMessage(decodeErr) }, `${options.transport}: ignoring a malformed ack`);
        return;
      }
      guard.ack(options.onAck, ack);
    },
  });
  await withTimeout(
    nc.flush(),
    Math.min(options.connectTimeoutMs, FLUSH_TIMEOUT_MS),
    `subscribing to the ack inbox on NATS at ${options.shown}`,
  );
}

/** A Buffer over a message's bytes, without copying them. */
export function bufferOf(data: Uint8Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Passes one message's frame through `gate`: `apart` is its Itb-Frame header's value when the frame header travels
 * apart (HEADER_APART_FROM_BYTES), undefined when it comes before the image in `data`; `arrivalNs` and `brokerStamp`
 * as the gate takes them. Returns the ack to send, or undefined when the gate dropped the frame (and reported it).
 */
export function takeFrame(
  gate: FrameGate,
  data: Buffer,
  apart: string | undefined,
  arrivalNs?: bigint,
  brokerStamp?: BrokerStamp,
): Ack | undefined {
  if (apart === undefined) {
    if (data.length < FRAME_HEADER_BYTES) {
      gate.reject(`message of ${data.length} bytes, shorter than a ${FRAME_HEADER_BYTES}-byte frame header`);
      return undefined;
    }
    const header = data.subarray(0, FRAME_HEADER_BYTES);
    return gate.frame(header, data.subarray(FRAME_HEADER_BYTES), arrivalNs, brokerStamp);
  }
  const headerBytes = Buffer.from(apart, 'base64');
  if (headerBytes.length !== FRAME_HEADER_BYTES) {
    gate.reject(`message whose ${FRAME_HEADER_NAME} header is not a ${FRAME_HEADER_BYTES}-byte frame header in base64`);
    return undefined;
  }
  return gate.frame(headerBytes, data, arrivalNs, brokerStamp);
}

/** The frame header as a NATS message header, in base64, added to `into` (new headers when none). */
export function headersOf(header: Buffer, into: MsgHdrs = natsLibrary().headers()): MsgHdrs {
  into.set(FRAME_HEADER_NAME, header.toString('base64'));
  return into;
}

/** The NATS server of NATS_URL (and NATS_PASSWORD), or a clear error naming the transport when it is not set. */
export const requireBroker = brokerRequirement({
  envVar: 'NATS_URL',
  broker: 'a NATS server',
  example: 'nats://127.0.0.1:4222',
});

/** The port of a nats:// URL that names none (nats.js's default too). */
export const NATS_DEFAULT_PORT = 4222;

/** The private nats-server's config file, in its temporary directory. */
const CONFIG_FILE = 'nats-server.conf';

/** A nats-server of this machine's, with the config file it was started with (removed at close). */
export interface PrivateNats extends LocalServer {
  configPath: string;
}

/** How a private nats-server runs besides its defaults. */
export interface PrivateNatsOptions {
  /** Clients must present this user and password. */
  auth?: { user: string; password: string };
  /** False: a server without JetStream (tests of a transport that needs it); true by default. */
  jetStream?: boolean;
}

/**
 * A private nats-server on a free loopback port: messages up to `maxPayloadBytes` (NATS's hard
 * limit unless a test asks for less), with JetStream (the nats-jetstream transport's streams are
 * in memory; its store directory is in the temporary directory, which holds nothing else); with
 * `auth`, one that refuses clients without that user and password. nats-server 2.9 takes
 * max_payload from a config file only, so one is written to a private temporary directory and
 * removed at close, with everything under it.
 */
export async function startPrivateNats(
  maxPayloadBytes = NATS_MAX_PAYLOAD_BYTES,
  host = '127.0.0.1',
  options: PrivateNatsOptions = {},
): Promise<PrivateNats> {
  const { auth, jetStream = true } = options;
  const server = await startLocalProcessInTempDir('nats', async (dir) => {
    const configPath = path.join(dir, CONFIG_FILE);
    await writeFile(
      configPath,
      [
        '# Written by image-transfer-bench (services/transports/kit/nats.ts) for one run or test; removed when ' +
          'the server stops.',
        `max_payload: ${maxPayloadBytes}`,
        `max_pending: ${NATS_MAX_PENDING_BYTES}`,
        // Its stderr is a pipe nobody reads: logging there could fill it and stall the server.
        'log_file: "/dev/null"',
        ...(jetStream ? [`jetstream { store_dir: ${JSON.stringify(path.join(dir, 'jetstream'))} }`] : []),
        ...(auth === undefined
          ? []
          : [`authorization { user: ${JSON.stringify(auth.user)}, password: ${JSON.stringify(auth.password)} }`]),
        '',
      ].join('\n'),
    );
    return {
      command: 'nats-server',
      args: (port) => ['--config', configPath, '--addr', host, '--port', String(port)],
      ready: (port) => answersWith(port, 'INFO ', undefined, host),
    };
  });
  return {
    url: `nats://${host}:${server.port}`,
    configPath: path.join(server.dir, CONFIG_FILE),
    close: server.close,
  };
}

/** The `localServer` of every NATS transport: one command, one way to start it (they share NATS_URL). */
export const natsLocalServer = {
  command: 'nats-server',
  start: (host?: string): Promise<LocalServer> => startPrivateNats(undefined, host),
};
