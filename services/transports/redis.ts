import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { errorMessage, ErrorCode, ItbError, type ErrorCodeValue } from '../core/errors.js';
import { decodeAck, decodeFrameHeader, encodeAck, type Ack } from '../core/frame.js';
import { drainOrClose, settlesWithin, sleep } from '../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from './contract.js';

// Images go through a Redis Stream: the transmitter XADDs one entry per image (field h = the
// 40-byte header, p = the image bytes, both as Buffers), the receiver reads them with a consumer
// group and the *Buffer command variants, so bytes never become strings and nothing is dropped
// the way pub/sub drops a slow subscriber. Acks come back as 12-byte list items: the receiver
// LPUSHes, the transmitter pops with BLMPOP (a list pops and frees acks in one step, where an
// ack stream would need its own trim). Every processed entry is XACKed and XDELed in the same
// pipeline as its ack, so the stream holds at most a window of images and memory stays flat.
// Limits: an image is one bulk string, bounded by the server's proto-max-bulk-len (512 MB by
// default, above MAX_IMAGE_SIZE's 256 MiB ceiling); the receiver's replies are not limited
// (client-output-buffer-limit "normal" is 0 0 0 by default).
// ioredis copies each command's arguments into one write buffer: one copy per image on send,
// which is the library's cost and part of what this transport measures.

const STREAM_KEY = 'itb:frames';
const ACK_KEY = 'itb:acks';
const GROUP = 'itb-receivers';
const HEADER_FIELD = 'h';
const PAYLOAD_FIELD = 'p';
/** Entries per XREADGROUP: more than any window, so one reply drains what is waiting. */
const READ_COUNT = 64;
/** Block times are short so the loops re-check their state; close() does not wait for them. */
const READ_BLOCK_MS = 1000;
const ACK_BLOCK_SECONDS = 1;
/** Acks taken per BLMPOP: as many as any window leaves waiting. */
const ACK_POP_COUNT = 1024;
/** The receiver has no configured bound, so it gets this one for reaching Redis. */
const RECEIVER_CONNECT_TIMEOUT_MS = 5000;
const RETRY_DELAY_MS = 200;
const CLOSE_TIMEOUT_MS = 2000;
const RECEIVER_ERROR_PAUSE_MS = 100;

/**
 * Opens one ready connection to Redis, retrying refused or failed attempts until `timeoutMs`,
 * then rejecting with `timeoutCode` and the URL and the last error. The client never reconnects
 * by itself afterwards: a link that drops mid-run is a failure, not something to paper over.
 */
async function openClient(url: string, timeoutMs: number, timeoutCode: ErrorCodeValue, log: Logger): Promise<Redis> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'no attempt finished';
  for (;;) {
    const remainingMs = deadline - Date.now();
    if (remainingMs <= 0) {
      throw new ItbError(timeoutCode, `no connection to Redis at ${url} within ${timeoutMs} ms: ${lastError}`);
    }
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
      lastError = errorMessage(err);
      log.debug({ url, err: lastError }, 'redis: connection attempt failed');
      await closeClient(client);
    }
    const pauseMs = Math.min(RETRY_DELAY_MS, deadline - Date.now());
    if (pauseMs > 0) await sleep(pauseMs);
  }
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
  const url = requireRedisUrl(options.redisUrl);
  const opened = await Promise.allSettled([
    openClient(url, options.connectTimeoutMs, ErrorCode.timeout, options.log),
    openClient(url, options.connectTimeoutMs, ErrorCode.timeout, options.log),
  ]);
  const [writerResult, ackReaderResult] = opened;
  if (writerResult?.status !== 'fulfilled' || ackReaderResult?.status !== 'fulfilled') {
    await Promise.all(opened.map((r) => (r.status === 'fulfilled' ? closeClient(r.value) : undefined)));
    const failed = opened.find((r) => r.status === 'rejected');
    throw failed?.status === 'rejected' ? failed.reason : new ItbError(ErrorCode.transport, `no connection to Redis at ${url}`);
  }
  const writer = writerResult.value;
  const ackReader = ackReaderResult.value;
  let closing: Promise<void> | undefined;
  let failed = false;
  const fail = (err: Error): void => {
    if (closing !== undefined || failed) return;
    failed = true;
    options.onFailure(err);
  };
  for (const [client, role] of [[writer, 'writer'], [ackReader, 'ack reader']] as const) {
    let lastError = '';
    client.on('error', (err: Error) => {
      lastError = `: ${err.message}`;
    });
    client.on('close', () => fail(new ItbError(ErrorCode.transport, `Redis ${role} connection to ${url} closed${lastError}`)));
  }

  // BLMPOP hands back every ack waiting in one round trip (Redis >= 7.0); one BRPOP per ack
  // capped the small-image rate at a third. Older servers fall back to BRPOP.
  let popMany = true;
  const popAcks = async (): Promise<Buffer[]> => {
    if (popMany) {
      try {
        const reply = await ackReader.blmpopBuffer(ACK_BLOCK_SECONDS, 1, ACK_KEY, 'RIGHT', 'COUNT', ACK_POP_COUNT);
        return reply === null ? [] : reply[1];
      } catch (err) {
        if (!/unknown command/i.test(errorMessage(err))) throw err;
        options.log.info({ url }, 'redis: no BLMPOP on this server (Redis < 7.0), popping acks one at a time');
        popMany = false;
      }
    }
    const reply = await ackReader.brpopBuffer(ACK_KEY, ACK_BLOCK_SECONDS);
    return reply === null ? [] : [reply[1]];
  };
  const ackLoop = (async () => {
    while (closing === undefined && !failed) {
      let items: Buffer[];
      try {
        items = await popAcks();
      } catch (err) {
        fail(new ItbError(ErrorCode.transport, `reading acks from Redis at ${url} failed: ${errorMessage(err)}`, { cause: err }));
        return;
      }
      if (closing !== undefined) return;
      for (const item of items) {
        let ack: Ack;
        try {
          ack = decodeAck(item);
        } catch (err) {
          options.log.warn({ err: errorMessage(err) }, 'redis: ignoring a malformed ack');
          continue;
        }
        options.onAck(ack);
      }
    }
  })();

  const onXaddReply = (id: string | null): void => {
    // NOMKSTREAM: no stream means no receiver ever created its group on this Redis.
    if (id === null) fail(new ItbError(ErrorCode.receiverUnreachable, `no receiver is listening on Redis at ${url} (stream ${STREAM_KEY} does not exist)`));
  };
  const onXaddError = (err: unknown): void => {
    fail(new ItbError(ErrorCode.transport, `XADD to Redis at ${url} failed: ${errorMessage(err)}`, { cause: err }));
  };

  return {
    async send(header, payload) {
      if (closing !== undefined || failed) throw new ItbError(ErrorCode.transport, `Redis link to ${url} is closed`);
      // ioredis copies the arguments and writes the command at once; its reply is checked on the
      // side. Like the TCP baseline, the next send waits only while the socket is over its
      // high-water mark. Measured (545792 B, window 16; 1 KB, window 256): ~350 MB/s and ~15k
      // images/s, against ~210 MB/s and ~2.6k/s awaiting each XADD reply (a round trip per
      // image) and ~250 MB/s and ~11k/s ignoring backpressure (every image piles up in Node).
      writer.xadd(STREAM_KEY, 'NOMKSTREAM', '*', HEADER_FIELD, header, PAYLOAD_FIELD, payload).then(onXaddReply, onXaddError);
      if (writer.stream.writableNeedDrain && !writer.stream.destroyed) await drainOrClose(writer.stream);
    },
    close() {
      closing ??= (async () => {
        await Promise.all([closeClient(writer), closeClient(ackReader)]);
        await ackLoop;
      })();
      return closing;
    },
  };
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const url = requireRedisUrl(options.redisUrl);
  const log = options.log;
  const opened = await Promise.allSettled([
    openClient(url, RECEIVER_CONNECT_TIMEOUT_MS, ErrorCode.transport, log),
    openClient(url, RECEIVER_CONNECT_TIMEOUT_MS, ErrorCode.transport, log),
  ]);
  const [readerResult, writerResult] = opened;
  if (readerResult?.status !== 'fulfilled' || writerResult?.status !== 'fulfilled') {
    await Promise.all(opened.map((r) => (r.status === 'fulfilled' ? closeClient(r.value) : undefined)));
    const failed = opened.find((r) => r.status === 'rejected');
    throw failed?.status === 'rejected' ? failed.reason : new ItbError(ErrorCode.transport, `no connection to Redis at ${url}`);
  }
  const reader = readerResult.value;
  const writer = writerResult.value;
  const consumer = `receiver-${process.pid}`;
  try {
    // Start clean: leftovers of an earlier run must not be delivered or acked into this one.
    await writer.del(STREAM_KEY, ACK_KEY);
    await writer.xgroup('CREATE', STREAM_KEY, GROUP, '$', 'MKSTREAM');
  } catch (err) {
    await Promise.all([closeClient(reader), closeClient(writer)]);
    throw new ItbError(ErrorCode.transport, `cannot set up stream ${STREAM_KEY} on Redis at ${url}: ${errorMessage(err)}`, { cause: err });
  }
  let closing: Promise<void> | undefined;
  let failed = false;
  for (const client of [reader, writer]) {
    client.on('close', () => {
      if (closing !== undefined || failed) return;
      failed = true;
      log.error({ url }, 'redis: receiver lost its connection to Redis; no more images will arrive');
      options.onFailure?.(`lost its connection to Redis at ${url}`);
    });
  }

  // Acks of one reply go back together with the XACK and XDEL of its entries, in one round trip
  // that nobody waits on, so the next read is not held up by it. Per-entry pipelines halved the
  // small-image rate.
  let doneIds: Buffer[] = [];
  let doneAcks: Buffer[] = [];
  const finish = (id: Buffer, ack: Buffer | undefined): void => {
    doneIds.push(id);
    if (ack !== undefined) doneAcks.push(ack);
  };
  const flushFinished = (): void => {
    if (doneIds.length === 0) return;
    const pipeline = writer.pipeline();
    // LPUSH of a1 a2 ... leaves a1 at the tail, so the transmitter's right pops keep the order.
    if (doneAcks.length > 0) pipeline.lpush(ACK_KEY, ...doneAcks);
    pipeline.xack(STREAM_KEY, GROUP, ...doneIds).xdel(STREAM_KEY, ...doneIds);
    doneIds = [];
    doneAcks = [];
    pipeline.exec().then(
      (results) => {
        const failure = results?.find(([err]) => err !== null)?.[0];
        if (failure) log.error({ err: failure.message }, 'redis: ack or trim failed');
      },
      (err: unknown) => {
        if (closing === undefined) log.error({ err: errorMessage(err) }, 'redis: ack or trim failed');
      },
    );
  };

  const handleEntry = (entry: unknown, arrivalNs: bigint): void => {
    if (!Array.isArray(entry) || !Buffer.isBuffer(entry[0])) {
      options.onReject('redis: stream entry without an id');
      return;
    }
    const id: Buffer = entry[0];
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
      options.onReject(`redis: entry ${id.toString()} lacks the ${HEADER_FIELD} or ${PAYLOAD_FIELD} field`);
      finish(id, undefined);
      return;
    }
    let ack: Ack;
    try {
      const decoded = decodeFrameHeader(header, options.maxImageBytes);
      if (payload.length !== decoded.sizeBytes) {
        throw new ItbError(ErrorCode.frame, `payload is ${payload.length} bytes, header announces ${decoded.sizeBytes}`);
      }
      ack = options.deliver({ header: decoded, payload, arrivalNs });
    } catch (err) {
      options.onReject(`redis: ${errorMessage(err)}`);
      finish(id, undefined);
      return;
    }
    finish(id, encodeAck(ack));
  };

  const readLoop = (async () => {
    while (closing === undefined) {
      let reply: unknown;
      try {
        reply = await reader.xreadgroupBuffer('GROUP', GROUP, consumer, 'COUNT', READ_COUNT, 'BLOCK', READ_BLOCK_MS, 'STREAMS', STREAM_KEY, '>');
      } catch (err) {
        if (closing !== undefined || reader.status === 'end') return;
        log.warn({ err: errorMessage(err) }, 'redis: XREADGROUP failed');
        if (errorMessage(err).includes('NOGROUP')) {
          // Someone deleted the stream (another receiver starting clean): take it back.
          await writer.xgroup('CREATE', STREAM_KEY, GROUP, '$', 'MKSTREAM').catch(() => {});
        }
        await sleep(RECEIVER_ERROR_PAUSE_MS);
        continue;
      }
      // The whole reply has been read off the socket: every image in it is complete now.
      const arrivalNs = process.hrtime.bigint();
      if (reply === null || closing !== undefined) continue;
      if (!Array.isArray(reply)) {
        options.onReject('redis: XREADGROUP reply is not an array');
        continue;
      }
      for (const stream of reply) {
        const entries: unknown = Array.isArray(stream) ? stream[1] : undefined;
        if (!Array.isArray(entries)) {
          options.onReject('redis: XREADGROUP reply has no entry list');
          continue;
        }
        for (const entry of entries) handleEntry(entry, arrivalNs);
      }
      flushFinished();
    }
  })();

  return {
    port: 0,
    close() {
      closing ??= (async () => {
        // The reader is blocked in XREADGROUP: dropping its connection ends the loop at once.
        await closeClient(reader);
        await readLoop;
        // Leave nothing behind in Redis; bounded, as Redis may be the reason we are closing.
        if (writer.status === 'ready') {
          await settlesWithin(writer.del(STREAM_KEY, ACK_KEY), 500);
        }
        await closeClient(writer);
      })();
      return closing;
    },
  };
}

const HEADER_BUFFER = Buffer.from(HEADER_FIELD);
const PAYLOAD_BUFFER = Buffer.from(PAYLOAD_FIELD);

function requireRedisUrl(redisUrl: string | undefined): string {
  if (redisUrl === undefined || redisUrl === '') {
    throw new ItbError(ErrorCode.transport, 'REDIS_URL is not set: the redis transport needs a Redis server to go through (e.g. REDIS_URL=redis://127.0.0.1:6379)');
  }
  return redisUrl;
}

/** Redis Streams through a Redis server (REDIS_URL): XADD / XREADGROUP, acks on a list. */
export const redisTransport: Transport = {
  name: 'redis',
  label: 'Redis',
  port: undefined,
  baseline: false,
  connect,
  listen,
};
