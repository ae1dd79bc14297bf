import { ceilingAck, headerSeq, type CeilingPair, type CeilingReceiveOptions } from '../ceiling-contract.js';
import { ceilingKeys, connectRedisSender, ignoreUnwaited, receivePolling } from '../kit/ceiling-redis.js';

// ioredis, as the redis transport: the sender XADDs one stream entry per image (field h = the
// 40-byte header, p = the image, both Buffers) without waiting for the reply; the receiver reads
// with XREAD BLOCK from the last id it took (the transport's consumer group, XREADGROUP and XACK
// are bookkeeping a single reader does not need) and the *Buffer variant, so bytes never become
// strings. The acks of one reply are LPUSHed to the ack list and its entries XDELed, so the stream
// holds at most a window of images, in the same write as the next XREAD (a cork around the three
// commands). The sender pops the acks with BLMPOP (redis-acks.ts).

/** Most entries per XREAD, as the transport's cap: the stream never holds more than a window of them. */
const READ_COUNT = 64;

/** One XREAD reply taken: its entries' ids (to XDEL) and acks, and the id to read after. */
interface Taken {
  ids: Buffer[];
  acks: Buffer[];
  lastId: Buffer | undefined;
}

type StreamReply = [key: Buffer, entries: [id: Buffer, fields: Buffer[]][]][] | null;

/** Takes the entries of one reply: fields are [h, header, p, image], as the sender wrote them. */
function takeReply(
  reply: StreamReply,
  arrived: CeilingReceiveOptions['arrived'],
  onImage: CeilingReceiveOptions['onImage'],
): Taken {
  const taken: Taken = { ids: [], acks: [], lastId: undefined };
  for (const [, entries] of reply ?? []) {
    for (const [id, fields] of entries) {
      const seq = headerSeq(fields[1]!);
      arrived(seq);
      taken.ids.push(id);
      taken.acks.push(ceilingAck(seq));
      taken.lastId = id;
      onImage?.(seq, fields[3]!);
    }
  }
  return taken;
}

/** The redis transport's ceiling: XADD / XREAD BLOCK + XDEL, acks on a list. */
export const redisCeiling: CeilingPair = {
  transport: 'redis',
  how:
    "ioredis: XADD key * h header p image; XREAD BLOCK, then LPUSH acks + XDEL in the next read's write; acks " +
    'popped with BLMPOP',
  receive(options) {
    // The reader blocks in XREAD, from the stream's beginning: the keys are cleared first.
    return receivePolling(options, 'redis', (reader, keys) => {
      let after: Buffer | string = '0-0';
      let unsent: Taken | undefined;
      return async () => {
        reader.stream.cork();
        if (unsent !== undefined) {
          // LPUSH of a1 a2 ... leaves a1 at the tail, so the sender's right pops keep the order.
          reader.lpush(keys.acks, ...unsent.acks).catch(ignoreUnwaited);
          reader.xdel(keys.frames, ...unsent.ids).catch(ignoreUnwaited);
          unsent = undefined;
        }
        // The reply is taken in a callback and only its ids and acks come back here: a reply held
        // across the await would keep its images alive while the next read blocks.
        const taking: Promise<Taken> = reader
          .xreadBuffer('COUNT', READ_COUNT, 'BLOCK', 0, 'STREAMS', keys.frames, after)
          .then((reply) => takeReply(reply as StreamReply, options.arrived, options.onImage));
        reader.stream.uncork();
        const taken: Taken = await taking;
        if (taken.lastId === undefined) return;
        after = taken.lastId;
        unsent = taken;
      };
    });
  },
  connect(options) {
    const { frames } = ceilingKeys(options.channel);
    return connectRedisSender(options, 'redis', (client, fail) => (header, image) => {
      client.xadd(frames, '*', 'h', header, 'p', image).catch(fail);
    });
  },
};
