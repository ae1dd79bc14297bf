import { ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';
import { ceilingKeys, connectRedisSender, ignoreUnwaited, receiveSubscribed } from '../kit/ceiling-redis.js';

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
  receive(options) {
    return receiveSubscribed(options, 'redis-kv', `${options.channel}:signal`, (subscriber, reader, keys) => {
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
    });
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
