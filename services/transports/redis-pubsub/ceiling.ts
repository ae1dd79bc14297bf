import { CEILING_HEADER_BYTES, ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';
import { ceilingKeys, connectRedisSender, ignoreUnwaited, receiveSubscribed } from '../kit/ceiling-redis.js';

// ioredis, as the redis-pubsub transport: the sender PUBLISHes on the run's channel without
// waiting for the reply, an image under SPLIT_FROM_BYTES as one message (header + image
// concatenated: the copy costs less than a second PUBLISH), a larger one as two messages in a row
// (header, then image) sent in one write. The receiver SUBSCRIBEs on a connection of its own (done
// before receive() resolves) and takes each message from the `messageBuffer` event: a 40-byte
// message is a header whose image is the next message (Redis delivers one publisher's messages
// in order), a longer one header and image together. The acks of the messages parsed from one
// chunk go back in one LPUSH on the other connection (a subscribed connection runs no other
// command); the sender pops them with BLMPOP (redis-acks.ts). A PUBLISH that reached nobody fails
// the run: pub/sub would drop the image silently.

/** From this image size on, header and image go as two messages, as the transport's. */
const SPLIT_FROM_BYTES = 64 * 1024;

/** The redis-pubsub transport's ceiling: PUBLISH / SUBSCRIBE (messageBuffer), acks on a list. */
export const redisPubsubCeiling: CeilingPair = {
  transport: 'redis-pubsub',
  how:
    'ioredis: PUBLISH header+image (under 64 KiB) or PUBLISH header, PUBLISH image; SUBSCRIBE on messageBuffer, ' +
    'acks LPUSHed, popped with BLMPOP',
  receive(options) {
    const frames = ceilingKeys(options.channel).frames;
    return receiveSubscribed(options, 'redis-pubsub', frames, (subscriber, writer, keys) => {
      // A header whose image is the next message.
      let header: Buffer | undefined;
      let acks: Buffer[] = [];
      const flush = (): void => {
        // LPUSH of a1 a2 ... leaves a1 at the tail, so the sender's right pops keep the order.
        writer.lpush(keys.acks, ...acks).catch(ignoreUnwaited);
        acks = [];
      };
      subscriber.on('messageBuffer', (_channel: Buffer, message: Buffer) => {
        let seq: number;
        let image: Buffer | undefined;
        if (header !== undefined) {
          seq = headerSeq(header);
          header = undefined;
          image = message;
        } else if (message.length === CEILING_HEADER_BYTES) {
          header = message;
          return;
        } else {
          seq = headerSeq(message);
        }
        // Sent once ioredis has parsed the whole chunk this message came in (a microtask).
        options.arrived(seq);
        if (acks.length === 0) queueMicrotask(flush);
        acks.push(ceilingAck(seq));
        options.onImage?.(seq, image ?? message.subarray(CEILING_HEADER_BYTES));
      });
    });
  },
  connect(options) {
    const channel = ceilingKeys(options.channel).frames;
    return connectRedisSender(options, 'redis-pubsub', (client, fail) => {
      // Pub/sub drops what nobody reads: a PUBLISH that reached no subscriber (Redis disconnects
      // one whose output buffer passes client-output-buffer-limit pubsub) fails the run at once.
      const reached = (subscribers: number): void => {
        if (subscribers === 0) fail(new Error(`PUBLISH to ${channel} reached no subscriber`));
      };
      return (header, image) => {
        if (image.length > 0 && image.length < SPLIT_FROM_BYTES) {
          client.publish(channel, Buffer.concat([header, image], header.length + image.length)).then(reached, fail);
          return;
        }
        // Both commands leave in one write.
        client.stream.cork();
        client.publish(channel, header).then(reached, fail);
        client.publish(channel, image).then(reached, fail);
        client.stream.uncork();
      };
    });
  },
};
