import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { encodeAck } from '../../core/wire/frame.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { frameGate, type FrameGate } from '../kit/gate.js';
import { connectRedisLink, redisDescriptors, sectionKeys, type SectionKeys } from '../kit/redis.js';
import { listenPolling, READ_BLOCK_MS } from '../kit/redis-receiver.js';

export { REDIS_IMAGE_LIMIT_ARGS, sectionKeys, type SectionKeys } from '../kit/redis.js';

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
// Time: each entry's ID is the server's millisecond wall clock at the XADD, handed to the gate as
// the broker's stamp (resolution 1 ms): the receiver splits each one-way time at it.
// Each section has keys of its own, named after its credential: the receiver reads only the open
// section's stream, prepared before the transmitter is told to connect, and deletes both keys
// when the section ends. A name cannot be guessed without AUTH_TOKEN, but anyone allowed to run
// commands on the Redis server can list keys: Redis's own access control (a password in
// REDIS_PASSWORD or REDIS_URL, or a Redis only the two services reach, as under docker compose) guards the broker.

const GROUP = 'itb-receivers';
const HEADER_FIELD = 'h';
const PAYLOAD_FIELD = 'p';
/**
 * Most entries per XREADGROUP. A reply is held whole before any entry is taken, so it is also
 * capped at the section's WINDOW, which is all an honest stream ever holds: a reply keeps at most
 * min(WINDOW, 64) images of MAX_IMAGE_SIZE in memory.
 */
const MAX_READ_COUNT = 64;

function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const keys = sectionKeys(options.credential, options.receiverIndex);
  // The XADD's reply is checked on the side. Measured (545792 B, window 16; 1 KB, window 256):
  // ~350 MB/s and ~15k images/s, against ~210 MB/s and ~2.6k/s awaiting each XADD reply (a round
  // trip per image).
  return connectRedisLink(options, keys, {
    transport: 'redis',
    label: 'Redis',
    writer(writer, guard, shownUrl) {
      const onReply = (id: string | null): void => {
        // NOMKSTREAM: no stream means no receiver prepared this section on this Redis.
        if (id === null && !guard.ended)
          guard.fail(
            new ItbError(
              ErrorCode.receiverUnreachable,
              `no receiver is reading this section on Redis at ${shownUrl} (stream ${keys.frames} does not exist)`,
            ),
          );
      };
      const onError = (err: unknown): void => guard.failWith(`XADD failed: ${errorMessage(err)}`, err);
      return (header, payload) => {
        writer
          .xadd(keys.frames, 'NOMKSTREAM', '*', HEADER_FIELD, header, PAYLOAD_FIELD, payload)
          .then(onReply, onError);
      };
    },
  });
}

/** The open section's keys and read count. */
interface OpenStream {
  keys: SectionKeys;
  readCount: number;
}

function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  return listenPolling<OpenStream>(options, 'redis', ({ reader, writer, receiver }) => {
    const consumer = `receiver-${process.pid}`;
    const takeReply = replyTaker(writer, frameGate(options, 'redis'), options.log, () => receiver.closing);
    return {
      async open(opening) {
        const keys = sectionKeys(opening.credential, opening.receiverIndex);
        // '$': only what the transmitter adds from now on; MKSTREAM lets its NOMKSTREAM XADDs in.
        await writer.xgroup('CREATE', keys.frames, GROUP, '$', 'MKSTREAM');
        return { keys, readCount: Math.min(MAX_READ_COUNT, opening.window) };
      },
      keys: (section) => [section.keys.frames, section.keys.acks],
      async read(section) {
        const reply: unknown = await reader.xreadgroupBuffer(
          'GROUP',
          GROUP,
          consumer,
          'COUNT',
          section.readCount,
          'BLOCK',
          READ_BLOCK_MS,
          'STREAMS',
          section.keys.frames,
          '>',
        );
        if (reply !== null && !receiver.closing) takeReply(section.keys, reply);
      },
      async readFailed(section, err) {
        options.log.warn({ err: errorMessage(err) }, 'redis: XREADGROUP failed');
        if (errorMessage(err).includes('NOGROUP')) {
          // Someone deleted the section's stream: take it back.
          await writer.xgroup('CREATE', section.keys.frames, GROUP, '$', 'MKSTREAM').catch(() => {});
        }
      },
    };
  });
}

/**
 * Takes one XREADGROUP reply: every entry through the gate, then the acks of the reply back together with the XACK
 * and XDEL of its entries, in one round trip that nobody waits on, as soon as every entry went through the gate: they
 * were in hand together. Per-entry pipelines halved the small-image rate.
 */
function replyTaker(
  writer: Redis,
  gate: FrameGate,
  log: Logger,
  closing: () => boolean,
): (keys: SectionKeys, reply: unknown) => void {
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
        if (!closing()) log.error({ err: errorMessage(err) }, 'redis: ack or trim failed');
      },
    );
  };
  return (keys, reply) => {
    if (!Array.isArray(reply)) {
      gate.reject('XREADGROUP reply is not an array');
      return;
    }
    const ids: Buffer[] = [];
    const acks: Buffer[] = [];
    for (const stream of reply) {
      const entries: unknown = Array.isArray(stream) ? stream[1] : undefined;
      if (!Array.isArray(entries)) {
        gate.reject('XREADGROUP reply has no entry list');
        continue;
      }
      for (const entry of entries) takeEntry(gate, entry, ids, acks);
    }
    finishReply(keys, ids, acks);
  };
}

/** Passes one stream entry through the gate; adds its id (to trim) to `ids` and its ack, if any, to `acks`. */
function takeEntry(gate: FrameGate, entry: unknown, ids: Buffer[], acks: Buffer[]): void {
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
  const brokerAtMs = entryIdMs(id);
  const ack = gate.frame(
    header,
    payload,
    undefined,
    brokerAtMs === undefined ? undefined : { atWallNs: BigInt(brokerAtMs) * 1_000_000n, resolutionNs: 1e6 },
  );
  if (ack !== undefined) acks.push(encodeAck(ack));
}

/**
 * The ms part of a stream entry's ID (`<ms>-<seq>`): the server's wall clock at the XADD, in whole ms (it never goes
 * back: after a backward clock step Redis keeps the last ms and raises seq); undefined for an ID not of that form.
 * Read from the bytes, without a string: it runs for every image.
 */
export function entryIdMs(id: Buffer): number | undefined {
  let ms = 0;
  for (let i = 0; i < id.length; i++) {
    const byte = id[i]!;
    if (byte === 0x2d) return i === 0 ? undefined : ms;
    if (byte < 0x30 || byte > 0x39 || i >= 15) return undefined;
    ms = ms * 10 + (byte - 0x30);
  }
  return undefined;
}

const HEADER_BUFFER = Buffer.from(HEADER_FIELD);
const PAYLOAD_BUFFER = Buffer.from(PAYLOAD_FIELD);

/** Redis Streams through a Redis server (REDIS_URL): XADD / XREADGROUP, acks on a list. */
export const redisTransport: Transport = {
  name: 'redis',
  label: 'Redis',
  summary: {
    libraries: 'ioredis',
    image: 'Redis Stream, `XADD` / `XREADGROUP`',
    ack: 'list, `BLMPOP`',
  },
  traits: {
    baseline: false,
    batchedArrivals:
      'Redis: ioredis hands over an XREADGROUP reply whole, so the images of one reply are in hand together and ' +
      'their arrival stamps are taken one after the other as the reply is read',
  },
  ...redisDescriptors(true),
  connect,
  listen,
};
