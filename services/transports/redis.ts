import { createHash } from 'node:crypto';
import net from 'node:net';
import { Redis } from 'ioredis';
import type { SectionCredential } from '../core/auth.js';
import type { BrokerReading } from '../core/cost.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { decodeAck, encodeAck, type Ack } from '../core/frame.js';
import { startLocalProcess } from '../shared/local-server.js';
import { once } from '../shared/once.js';
import { drainOrClose, settlesWithin, sleep } from '../shared/waits.js';
import type { LocalServer, ReceiverListener, ReceiverOptions, SectionOpening, TransmitterLink, TransmitterOptions, Transport } from './contract.js';
import { connectWithin } from './kit/connect.js';
import { frameGate } from './kit/gate.js';
import { LinkGuard } from './kit/link-guard.js';
import { SendQueue } from './kit/send-queue.js';

// Images go through a Redis Stream: the transmitter XADDs one entry per image (field h = the
// 40-byte header, p = the image bytes, both as Buffers), the receiver reads them with a consumer
// group and the *Buffer command variants, so bytes never become strings and nothing is dropped
// the way pub/sub drops a slow subscriber. Acks come back as 12-byte list items: the receiver
// LPUSHes, the transmitter pops with BLMPOP (a list pops and frees acks in one step, where an
// ack stream would need its own trim). Every entry of a reply is acked as soon as the reply is in
// hand, XACKed and XDELed in the same pipeline, so the stream holds at most a window of images
// and memory stays flat. ioredis hands an XREADGROUP reply over whole: the entries of one reply
// are in hand together, and the gate stamps each as it takes it, one after the other.
// Limits: an image is one bulk string, bounded by the server's proto-max-bulk-len (512 MB by
// default, above MAX_IMAGE_SIZE's 256 MiB ceiling); the receiver's replies are not limited
// (client-output-buffer-limit "normal" is 0 0 0 by default).
// ioredis copies each command's arguments into one write buffer: one copy per image on send,
// which is the library's cost and part of what this transport measures.
// Each section has keys of its own, named after its credential: the receiver reads only the open
// section's stream, prepared before the transmitter is told to connect, and deletes both keys
// when the section ends. A name cannot be guessed without AUTH_TOKEN, but anyone allowed to run
// commands on the Redis server can list keys: Redis's own access control (a password in
// REDIS_URL, or a Redis only the two services reach, as under docker compose) guards the broker.

/** The keys of one section: images go through `frames`, acks come back on `acks`. */
export interface SectionKeys {
  frames: string;
  acks: string;
}

/** Keys named after the section's id and a digest of its key (the key itself stays off the server); exported for tests. */
export function sectionKeys(credential: SectionCredential): SectionKeys {
  const tag = createHash('sha256').update(credential.key).digest('base64url').slice(0, 22);
  const prefix = `itb:${credential.sectionId}:${tag}`;
  return { frames: `${prefix}:frames`, acks: `${prefix}:acks` };
}

const GROUP = 'itb-receivers';
const HEADER_FIELD = 'h';
const PAYLOAD_FIELD = 'p';
/**
 * Most entries per XREADGROUP. A reply is held whole before any entry is taken, so it is also
 * capped at the section's WINDOW, which is all an honest stream ever holds: a reply keeps at most
 * min(WINDOW, 64) images of MAX_IMAGE_SIZE in memory.
 */
const MAX_READ_COUNT = 64;
/** Block times are short so the loops re-check their state; close() does not wait for them. */
const READ_BLOCK_MS = 1000;
const ACK_BLOCK_SECONDS = 1;
/** Acks taken per BLMPOP: as many as any window leaves waiting. */
const ACK_POP_COUNT = 1024;
/** The receiver has no configured bound, so it gets this one for reaching Redis. */
const RECEIVER_CONNECT_TIMEOUT_MS = 5000;
const CLOSE_TIMEOUT_MS = 2000;
const RECEIVER_ERROR_PAUSE_MS = 100;
/** Bound on one INFO round trip for the broker's readings. */
const INFO_TIMEOUT_MS = 2000;

/**
 * Redis settings that let one image of the largest MAX_IMAGE_SIZE through: an XADD carries the
 * image as one bulk string (proto-max-bulk-len, 512 MB by default) inside one command
 * (client-query-buffer-limit, 1 GB by default). docker-compose.yml passes the same arguments.
 */
export const REDIS_IMAGE_LIMIT_ARGS: readonly string[] = ['--proto-max-bulk-len', '2gb', '--client-query-buffer-limit', '4gb'];

/**
 * Opens one ready connection to Redis within `timeoutMs`, retrying refused or failed attempts. The
 * client never reconnects by itself afterwards: a link that drops mid-run is a failure, not
 * something to paper over.
 */
function openClient(url: string, timeoutMs: number): Promise<Redis> {
  return connectWithin(
    `Redis at ${url}`,
    timeoutMs,
    async (remainingMs) => {
      const client = new Redis(url, {
        lazyConnect: true,
        // RESP2 replies have the nested-array shapes the stream parsing below checks, and skip HELLO.
        protocol: 2,
        connectTimeout: remainingMs,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
        enableOfflineQueue: false,
        autoResendUnfulfilledCommands: false,
      });
      try {
        await attemptReady(client, remainingMs);
        return client;
      } catch (err) {
        await closeClient(client);
        throw err;
      }
    },
    (late) => void closeClient(late),
  );
}

/** Opens the two connections a side needs (one blocks in reads, one writes); closes both if either fails. */
async function openPair(url: string, timeoutMs: number): Promise<[Redis, Redis]> {
  const opened = await Promise.allSettled([openClient(url, timeoutMs), openClient(url, timeoutMs)]);
  const [first, second] = opened;
  if (first?.status === 'fulfilled' && second?.status === 'fulfilled') return [first.value, second.value];
  await Promise.all(opened.map((r) => (r.status === 'fulfilled' ? closeClient(r.value) : undefined)));
  throw opened.find((r): r is PromiseRejectedResult => r.status === 'rejected')!.reason;
}

// One connect attempt: resolves on 'ready'; rejects with the socket's own error (ECONNREFUSED...)
// rather than ioredis's generic "Connection is closed.", or on the attempt's own timer, which
// also covers a server that accepts and never answers the handshake.
function attemptReady(client: Redis, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let socketError: Error | undefined;
    const onError = (err: Error): void => {
      socketError ??= err;
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`handshake not finished in ${timeoutMs} ms`));
    }, timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      client.off('error', onError);
    };
    // A listener must stay on 'error' for the client's whole life, or ioredis prints to stderr.
    client.on('error', () => {});
    client.on('error', onError);
    client.connect().then(
      () => {
        cleanup();
        resolve();
      },
      (err: unknown) => {
        cleanup();
        reject(socketError ?? err);
      },
    );
  });
}

/** Disconnects and waits until the socket is gone (ioredis's own disconnect timer included). */
async function closeClient(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
  client.disconnect();
  await settlesWithin(ended, CLOSE_TIMEOUT_MS);
}

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const url = requireUrl(options.url);
  const keys = sectionKeys(options.credential);
  const [writer, ackReader] = await openPair(url, options.connectTimeoutMs);
  const guard = new LinkGuard(options.onFailure, `Redis link through ${url}`);
  for (const [client, role] of [[writer, 'writer'], [ackReader, 'ack reader']] as const) {
    let lastError = '';
    client.on('error', (err: Error) => {
      lastError = `: ${err.message}`;
    });
    client.on('close', () => guard.failWith(`${role} connection closed${lastError}`));
  }

  // BLMPOP hands back every ack waiting in one round trip (Redis >= 7.0); one BRPOP per ack
  // capped the small-image rate at a third. Older servers fall back to BRPOP.
  let popMany = true;
  const popAcks = async (): Promise<Buffer[]> => {
    if (popMany) {
      try {
        const reply = await ackReader.blmpopBuffer(ACK_BLOCK_SECONDS, 1, keys.acks, 'RIGHT', 'COUNT', ACK_POP_COUNT);
        return reply === null ? [] : reply[1];
      } catch (err) {
        if (!/unknown command/i.test(errorMessage(err))) throw err;
        options.log.info({ url }, 'redis: no BLMPOP on this server (Redis < 7.0), popping acks one at a time');
        popMany = false;
      }
    }
    const reply = await ackReader.brpopBuffer(keys.acks, ACK_BLOCK_SECONDS);
    return reply === null ? [] : [reply[1]];
  };
  const ackLoop = (async () => {
    while (!guard.ended) {
      let items: Buffer[];
      try {
        items = await popAcks();
      } catch (err) {
        guard.failWith(`reading acks failed: ${errorMessage(err)}`, err);
        return;
      }
      if (guard.closed) return;
      for (const item of items) {
        let ack: Ack;
        try {
          ack = decodeAck(item);
        } catch (err) {
          options.log.warn({ err: errorMessage(err) }, 'redis: ignoring a malformed ack');
          continue;
        }
        guard.ack(options.onAck, ack);
      }
    }
  })();

  const onXaddReply = (id: string | null): void => {
    // NOMKSTREAM: no stream means no receiver prepared this section on this Redis.
    if (id === null && !guard.ended) guard.fail(new ItbError(ErrorCode.receiverUnreachable, `no receiver is reading this section on Redis at ${url} (stream ${keys.frames} does not exist)`));
  };
  const onXaddError = (err: unknown): void => guard.failWith(`XADD failed: ${errorMessage(err)}`, err);
  // ioredis copies the arguments and writes the command at once; its reply is checked on the side.
  // The next frame waits only while the socket is over its high-water mark. Measured (545792 B,
  // window 16; 1 KB, window 256): ~350 MB/s and ~15k images/s, against ~210 MB/s and ~2.6k/s
  // awaiting each XADD reply (a round trip per image).
  const queue = new SendQueue(
    (header, payload) => {
      writer.xadd(keys.frames, 'NOMKSTREAM', '*', HEADER_FIELD, header, PAYLOAD_FIELD, payload).then(onXaddReply, onXaddError);
      return writer.stream.writableNeedDrain && !writer.stream.destroyed ? drainOrClose(writer.stream) : undefined;
    },
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );

  return guard.link(queue, async () => {
    await Promise.all([closeClient(writer), closeClient(ackReader)]);
    await ackLoop;
  });
}

/** The server's CPU totals and resident memory, from one INFO round trip. */
async function readInfo(client: Redis): Promise<BrokerReading> {
  const text = await client.info('cpu', 'memory');
  const field = (name: string): number => {
    const value = Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1]);
    if (!Number.isFinite(value)) throw new ItbError(ErrorCode.transport, `Redis INFO has no ${name}`);
    return value;
  };
  return { cpuUserMicros: Math.round(field('used_cpu_user') * 1e6), cpuSystemMicros: Math.round(field('used_cpu_sys') * 1e6), rssBytes: field('used_memory_rss') };
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const url = requireUrl(options.url);
  const log = options.log;
  const [reader, writer] = await openPair(url, RECEIVER_CONNECT_TIMEOUT_MS);
  const consumer = `receiver-${process.pid}`;
  let readerId: number;
  try {
    readerId = Number(await reader.client('ID'));
  } catch (err) {
    await Promise.all([closeClient(reader), closeClient(writer)]);
    throw new ItbError(ErrorCode.transport, `cannot set up the receiver on Redis at ${url}: ${errorMessage(err)}`, { cause: err });
  }
  // The open section's keys and read count; undefined between sections, when nothing is read.
  let section: { keys: SectionKeys; readCount: number } | undefined;
  let wakeIdleReader: () => void = () => {};
  // Wakes the reader, whether it waits for a section (wakeIdleReader) or blocks on the previous one's stream (UNBLOCK).
  const switchSection = async (): Promise<void> => {
    wakeIdleReader();
    await writer.client('UNBLOCK', readerId);
  };
  let closing = false;
  let failed = false;
  for (const client of [reader, writer]) {
    client.on('close', () => {
      if (closing || failed) return;
      failed = true;
      log.error({ url }, 'redis: receiver lost its connection to Redis; no more images will arrive');
      options.onFailure?.(`lost its connection to Redis at ${url}`);
    });
  }

  const gate = frameGate(options, 'redis');
  // The acks of one reply go back together with the XACK and XDEL of its entries, in one round
  // trip that nobody waits on, as soon as every entry of the reply went through the gate: they
  // were in hand together. Per-entry pipelines halved the small-image rate.
  const finishReply = (keys: SectionKeys, ids: Buffer[], acks: Buffer[]): void => {
    if (ids.length === 0) return;
    const pipeline = writer.pipeline();
    // LPUSH of a1 a2 ... leaves a1 at the tail, so the transmitter's right pops keep the order.
    if (acks.length > 0) pipeline.lpush(keys.acks, ...acks);
    pipeline.xack(keys.frames, GROUP, ...ids).xdel(keys.frames, ...ids);
    pipeline.exec().then(
      (results) => {
        const failure = results?.find(([err]) => err !== null)?.[0];
        if (failure) log.error({ err: failure.message }, 'redis: ack or trim failed');
      },
      (err: unknown) => {
        if (!closing) log.error({ err: errorMessage(err) }, 'redis: ack or trim failed');
      },
    );
  };

  /** Passes one entry through the gate; returns its id (to trim) and its ack, if any. */
  const takeEntry = (entry: unknown, ids: Buffer[], acks: Buffer[]): void => {
    if (!Array.isArray(entry) || !Buffer.isBuffer(entry[0])) {
      gate.reject('stream entry without an id');
      return;
    }
    const id: Buffer = entry[0];
    ids.push(id);
    const fields: unknown = entry[1];
    let header: Buffer | undefined;
    let payload: Buffer | undefined;
    if (Array.isArray(fields)) {
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const name: unknown = fields[i];
        const value: unknown = fields[i + 1];
        if (!Buffer.isBuffer(name) || !Buffer.isBuffer(value)) continue;
        if (name.equals(HEADER_BUFFER)) header = value;
        else if (name.equals(PAYLOAD_BUFFER)) payload = value;
      }
    }
    if (header === undefined || payload === undefined) {
      gate.reject(`entry ${id.toString()} lacks the ${HEADER_FIELD} or ${PAYLOAD_FIELD} field`);
      return;
    }
    const ack = gate.frame(header, payload);
    if (ack !== undefined) acks.push(encodeAck(ack));
  };

  const readLoop = (async () => {
    while (!closing) {
      const reading = section;
      if (reading === undefined) {
        await new Promise<void>((resolve) => {
          wakeIdleReader = resolve;
          setTimeout(resolve, READ_BLOCK_MS);
        });
        continue;
      }
      let reply: unknown;
      try {
        reply = await reader.xreadgroupBuffer('GROUP', GROUP, consumer, 'COUNT', reading.readCount, 'BLOCK', READ_BLOCK_MS, 'STREAMS', reading.keys.frames, '>');
      } catch (err) {
        if (closing || reader.status === 'end') return;
        if (section !== reading) continue;
        log.warn({ err: errorMessage(err) }, 'redis: XREADGROUP failed');
        if (errorMessage(err).includes('NOGROUP')) {
          // Someone deleted the section's stream: take it back.
          await writer.xgroup('CREATE', reading.keys.frames, GROUP, '$', 'MKSTREAM').catch(() => {});
        }
        await sleep(RECEIVER_ERROR_PAUSE_MS);
        continue;
      }
      if (reply === null || closing) continue;
      if (!Array.isArray(reply)) {
        gate.reject('XREADGROUP reply is not an array');
        continue;
      }
      const ids: Buffer[] = [];
      const acks: Buffer[] = [];
      for (const stream of reply) {
        const entries: unknown = Array.isArray(stream) ? stream[1] : undefined;
        if (!Array.isArray(entries)) {
          gate.reject('XREADGROUP reply has no entry list');
          continue;
        }
        for (const entry of entries) takeEntry(entry, ids, acks);
      }
      finishReply(reading.keys, ids, acks);
    }
  })();

  // Deletes a section's keys; bounded, as Redis may be why the section or the listener is closing.
  const dropKeys = async (keys: SectionKeys): Promise<void> => {
    if (writer.status === 'ready') await settlesWithin(writer.del(keys.frames, keys.acks), 500);
  };

  return {
    port: 0,
    readBroker: () => withInfoTimeout(readInfo(writer)),
    async openSection(opening: SectionOpening) {
      const keys = sectionKeys(opening.credential);
      // '$': only what the transmitter adds from now on; MKSTREAM lets its NOMKSTREAM XADDs in.
      await writer.xgroup('CREATE', keys.frames, GROUP, '$', 'MKSTREAM');
      section = { keys, readCount: Math.min(MAX_READ_COUNT, opening.window) };
      await switchSection();
    },
    async closeSection() {
      const ended = section;
      section = undefined;
      if (ended === undefined) return;
      await switchSection();
      await dropKeys(ended.keys);
    },
    close: once(async () => {
      closing = true;
      const ended = section;
      section = undefined;
      wakeIdleReader();
      // The reader is blocked in XREADGROUP: dropping its connection ends the loop at once.
      await closeClient(reader);
      await readLoop;
      // Leave nothing behind in Redis.
      if (ended !== undefined) await dropKeys(ended.keys);
      await closeClient(writer);
    }),
  };
}

const HEADER_BUFFER = Buffer.from(HEADER_FIELD);
const PAYLOAD_BUFFER = Buffer.from(PAYLOAD_FIELD);

function requireUrl(url: string | undefined): string {
  if (url === undefined || url === '') {
    throw new ItbError(ErrorCode.transport, 'REDIS_URL is not set: the redis transport needs a Redis server to go through (e.g. REDIS_URL=redis://127.0.0.1:6379)');
  }
  return url;
}

async function withInfoTimeout(reading: Promise<BrokerReading>): Promise<BrokerReading> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ItbError(ErrorCode.timeout, `Redis INFO unanswered within ${INFO_TIMEOUT_MS} ms`)), INFO_TIMEOUT_MS);
  });
  try {
    return await Promise.race([reading, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** True when a Redis server answers PING on 127.0.0.1:`port`. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

/** A private redis-server on a free loopback port: no persistence, the image limits above. */
async function startPrivateRedis(): Promise<LocalServer> {
  const server = await startLocalProcess({
    command: 'redis-server',
    args: (port) => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...REDIS_IMAGE_LIMIT_ARGS, '--loglevel', 'warning', '--logfile', ''],
    ready: answersPing,
  });
  return { url: `redis://127.0.0.1:${server.port}`, close: server.close };
}

/** Redis Streams through a Redis server (REDIS_URL): XADD / XREADGROUP, acks on a list. */
export const redisTransport: Transport = {
  name: 'redis',
  label: 'Redis',
  baseline: false,
  setting: { kind: 'url', envVar: 'REDIS_URL', schemes: ['redis', 'rediss'], example: 'redis://127.0.0.1:6379' },
  localServer: { command: 'redis-server', start: startPrivateRedis },
  libraries: ['ioredis'],
  composeService: 'redis',
  batchedArrivals:
    'Redis: ioredis hands over an XREADGROUP reply whole, so the images of one reply are in hand together and their arrival stamps are taken one after the other as the reply is read',
  refbenchMode: 'redis-stream',
  connect,
  listen,
};
