import type { Redis } from 'ioredis';
import { ceilingAck, headerSeq, type CeilingPair } from './contract.js';
import {
  brokerOf,
  ceilingKeys,
  closeRedis,
  connectRedisSender,
  dropKeys,
  ignoreUnwaited,
  openRedisMany,
} from './redis-acks.js';

// ioredis, as the redis-kv transport: the sender HSETs header and image as two fields of one key
// and PUBLISHes an empty signal in the same write, without waiting for either reply. The receiver
// SUBSCRIBEs to the signal on a connection of its own and on a signal reads both fields with
// HMGET on the other; signals that come while a read is out fold into one more read after it, and
// a re-read of the seq it read last acks nothing. Acks go back LPUSHed, popped with BLMPOP
// (redis-acks.ts). An image written over before it was read is never acknowledged: the driver
// settles it as superseded on the next ack (drive.ts), and it counts in no figure.

/** The redis-kv transport's ceiling: HSET + PUBLISH a signal; SUBSCRIBE, HMGET on each signal, acks on a list. */
export const redisKvCeiling: CeilingPair = {
  transport: 'redis-kv',
  how:
    'ioredis: HSET h header p image + PUBLISH signal; SUBSCRIBE, HMGET on a signal, acks LPUSHed, popped with ' +
    'BLMPOP',
  supersedes: true,
  async receive(options) {
    const keys = ceilingKeys(options.channel);
    const signal = `${options.channel}:signal`;
    const [subscriber, reader] = (await openRedisMany(brokerOf(options.brokerUrl, 'redis-kv'), 2)) as [Redis, Redis];
    let lastSeq = -1;
    let reading = false;
    let again = false;
    const read = async (): Promise<void> => {
      reading = true;
      try {
        do {
          again = false;
          const [header, image] = await reader.hmgetBuffer(keys.frames, 'h', 'p');
          if (header == null || image == null) continue;
          const seq = headerSeq(header);
          if (seq === lastSeq) continue;
          lastSeq = seq;
          options.arrived(seq);
          reader.lpush(keys.acks, ceilingAck(seq)).catch(ignoreUnwaited);
          options.onImage?.(seq, image);
        } while (again);
      } finally {
        // A failed read leaves the next signal free to read again.
        reading = false;
      }
    };
    subscriber.on('messageBuffer', () => {
      if (reading) again = true;
      else read().catch(ignoreUnwaited);
    });
    try {
      await reader.del(keys.frames, keys.acks);
      await subscriber.subscribe(signal);
    } catch (err) {
      await Promise.all([closeRedis(subscriber), closeRedis(reader)]);
      throw err;
    }
    return {
      port: options.port,
      async close() {
        await closeRedis(subscriber);
        await dropKeys(reader, keys);
        await closeRedis(reader);
      },
    };
  },
  connect(options) {
    const keys = ceilingKeys(options.channel);
    const signal = `${options.channel}:signal`;
    return connectRedisSender(options, 'redis-kv', (client, fail) => {
      const reached = (subscribers: number): void => {
        if (subscribers === 0) fail(new Error(`PUBLISH to ${signal} reached no subscriber`));
      };
      return (header, image) => {
        // Both commands leave in one write; Redis runs them in order.
        client.stream.cork();
        client.hset(keys.frames, 'h', header, 'p', image).catch(fail);
        client.publish(signal, '').then(reached, fail);
        client.stream.uncork();
      };
    });
  },
};
