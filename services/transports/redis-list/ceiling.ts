import { ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';
import { ceilingKeys, connectRedisSender, ignoreUnwaited, receivePolling } from '../kit/ceiling-redis.js';
import { listPopper } from '../kit/redis.js';

// ioredis, as the redis-list transport: the sender LPUSHes each image as two elements, header then
// image, in ONE command (atomic, so they stay adjacent) without waiting for the reply; the
// receiver right-pops with BLMPOP COUNT (every image waiting, up to 64 of them, in one round trip;
// one BRPOP per element on Redis < 7.0) and pairs the elements up again. The acks of one pop are
// LPUSHed to the ack list on the reader's connection, in the same write as its next pop, as the
// transport does; the sender pops them with BLMPOP (redis-acks.ts).

/** Most elements per pop: 64 images, as the transport's cap (the list never holds more than a window). */
const POP_COUNT = 2 * 64;

/** The redis-list transport's ceiling: LPUSH header image / BLMPOP, acks on a second list. */
export const redisListCeiling: CeilingPair = {
  transport: 'redis-list',
  how:
    "ioredis: LPUSH key header image (one command); BLMPOP RIGHT COUNT, acks LPUSHed in the next pop's write; " +
    'acks popped with BLMPOP',
  receive(options) {
    // The reader blocks in BLMPOP.
    return receivePolling(options, 'redis-list', (reader, keys) => {
      const pop = listPopper(reader, () => {});
      // A header whose image is the next element (the next pop's first, on a server without BLMPOP).
      let header: Buffer | undefined;
      // Pairs up the popped elements; returns the acks of the images they completed.
      const take = (elements: Buffer[]): Buffer[] => {
        const acks: Buffer[] = [];
        for (const element of elements) {
          if (header === undefined) {
            header = element;
            continue;
          }
          const seq = headerSeq(header);
          header = undefined;
          options.arrived(seq);
          acks.push(ceilingAck(seq));
          options.onImage?.(seq, element);
        }
        return acks;
      };
      let unsent: Buffer[] = [];
      return async () => {
        reader.stream.cork();
        // LPUSH of a1 a2 ... leaves a1 at the tail, so the sender's right pops keep the order.
        if (unsent.length > 0) reader.lpush(keys.acks, ...unsent).catch(ignoreUnwaited);
        // The reply is taken in a callback and only its acks come back here: a reply held across
        // the await would keep its images alive while the next pop blocks.
        const taking = pop(keys.frames, 0, POP_COUNT).then(take);
        reader.stream.uncork();
        unsent = await taking;
      };
    });
  },
  connect(options) {
    const { frames } = ceilingKeys(options.channel);
    return connectRedisSender(options, 'redis-list', (client, fail) => (header, image) => {
      client.lpush(frames, header, image).catch(fail);
    });
  },
};
