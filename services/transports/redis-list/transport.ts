import type { SectionCredential } from '../../core/wire/auth.js';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { frameGate } from '../kit/gate.js';
import {
  connectRedisLink,
  listPopper,
  redisDescriptors,
  sectionKeyPrefix,
  sectionKeys,
  type SectionKeys,
} from '../kit/redis.js';
import { FramePairer, listenPolling, READ_BLOCK_MS } from '../kit/redis-receiver.js';

// Images go through a Redis list, one per section: the transmitter LPUSHes each image as two
// elements, header then image, in ONE command; the receiver pops from the other end with BLMPOP
// COUNT (every image waiting, up to a window of them, in one round trip; one BRPOP per element on
// Redis < 7.0) and pairs the elements up again. Two elements rather than one value: LPUSH stores
// one value per element, so one value would mean concatenating header and image, a copy of every
// image of ours on top of the one ioredis makes anyway (it copies every argument of a command into
// one write buffer). LPUSH is atomic, so the two elements of an image are always adjacent.
// Acks come back as 12-byte items on a second list, LPUSHed by the receiver (all the acks of one
// pop in one command, in the same write as its next pop) and popped by the transmitter with
// BLMPOP, as for redis (kit/redis.ts).
// ioredis hands a BLMPOP reply over whole: the images of one reply are in hand together, and the
// gate stamps each as it takes it, one after the other.
// Limits: an image is one bulk string, bounded by the server's proto-max-bulk-len (512 MB by
// default); the receiver's replies are not limited (client-output-buffer-limit "normal" is 0 0 0).
// The list holds at most a window of images (the transmitter's window), and a pop frees them.
// Each section has keys of its own, named after its credential (see redis.ts for what guards
// them): the receiver reads only the open section's list, and deletes its keys when the section
// ends. A list cannot tell a pusher that nobody reads it (Redis creates it on the first push and
// would keep a window of images there for ever), so the receiver also sets a `reader` key for the
// open section, and the transmitter checks it is there before its first push: two services given
// different REDIS_URLs fail at connect, not at IMAGE_TIMEOUT_MS.

/** Most images per pop: the list never holds more than a window of them; a reply keeps at most this many in memory. */
const MAX_POP_IMAGES = 64;

/**
 * The keys of one section: the frame list, the ack list, and the key saying a receiver reads them; exported for tests.
 */
export function listSectionKeys(credential: SectionCredential, receiverIndex = 0): SectionKeys & { reader: string } {
  return { ...sectionKeys(credential, receiverIndex), reader: `${sectionKeyPrefix(credential, receiverIndex)}:reader` };
}

function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const keys = listSectionKeys(options.credential, options.receiverIndex);
  return connectRedisLink(options, keys, {
    transport: 'redis-list',
    label: 'Redis list',
    async check(writer, shownUrl) {
      let readerPresent: number;
      try {
        readerPresent = await writer.exists(keys.reader);
      } catch (err) {
        throw new ItbError(
          ErrorCode.transport,
          `cannot check for a receiver on Redis at ${shownUrl}: ${errorMessage(err)}`,
          { cause: err },
        );
      }
      if (readerPresent === 0) {
        throw new ItbError(
          ErrorCode.receiverUnreachable,
          `no receiver is reading this section on Redis at ${shownUrl} (${keys.reader} does not exist: do both ` +
            `services have the same REDIS_URL?)`,
        );
      }
    },
    // The reply, the list's length, says nothing the acks do not: only an error is looked at.
    writer(writer, guard) {
      const onError = (err: unknown): void => guard.failWith(`LPUSH failed: ${errorMessage(err)}`, err);
      return (header, payload) => {
        writer.lpush(keys.frames, header, payload).catch(onError);
      };
    },
  });
}

/** The open section's keys and pop count (elements). */
interface OpenList {
  keys: ReturnType<typeof listSectionKeys>;
  popCount: number;
}

function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const log = options.log;
  return listenPolling<OpenList>(options, 'redis-list', ({ reader, writer, receiver, shown }) => {
    const pairer = new FramePairer(frameGate(options, 'redis-list'), false);
    const pop = listPopper(reader, () =>
      log.info(
        { url: shown },
        'redis-list: no BLMPOP on this server (Redis < 7.0), popping images one element at a time',
      ),
    );
    // The acks of one pop go back in one LPUSH nobody waits on, as soon as every element of the
    // pop went through the gate: they were in hand together. They go on the reader's connection, in
    // the same write as its next pop, which follows at once: one system call per pop instead of two
    // (a loopback write costs about as much as copying a 533 KB image here).
    const sendAcks = (unsent: { keys: SectionKeys; acks: Buffer[] }): void => {
      // LPUSH of a1 a2 ... leaves a1 at the tail, so the transmitter's right pops keep the order.
      reader.lpush(unsent.keys.acks, ...unsent.acks).catch((err: unknown) => {
        if (!receiver.closing) log.error({ err: errorMessage(err) }, 'redis-list: sending acks failed');
      });
    };
    // Passes the popped elements through the gate; returns the acks to send.
    const takeElements = (elements: Buffer[]): Buffer[] => {
      const acks: Buffer[] = [];
      for (const element of elements) {
        const ack = pairer.take(element);
        if (ack !== undefined) acks.push(ack);
      }
      return acks;
    };
    let unsent: { keys: SectionKeys; acks: Buffer[] } | undefined;
    return {
      async open(opening) {
        const keys = listSectionKeys(opening.credential, opening.receiverIndex);
        await writer.set(keys.reader, String(process.pid));
        return { keys, popCount: 2 * Math.min(MAX_POP_IMAGES, opening.window) };
      },
      keys: (section) => [section.keys.frames, section.keys.acks, section.keys.reader],
      switched: () => pairer.reset(),
      async read(section) {
        // Acks of a section that ended are not sent: its link is closed, and they would recreate its deleted ack list.
        if (unsent !== undefined && unsent.keys !== section.keys) unsent = undefined;
        reader.stream.cork();
        if (unsent !== undefined) sendAcks(unsent);
        unsent = undefined;
        // The reply is taken in a callback and only its acks come back here: V8 keeps a value this
        // function held across an await alive in its saved registers (seen in a heap snapshot), so a
        // whole reply of images would stay in memory while the next pop blocks.
        const taking = pop(section.keys.frames, READ_BLOCK_MS / 1000, section.popCount).then(takeElements);
        reader.stream.uncork();
        const taken = await taking;
        if (taken.length > 0) unsent = { keys: section.keys, acks: taken };
      },
      async readFailed(_section, err) {
        log.warn({ err: errorMessage(err) }, 'redis-list: popping images failed');
      },
    };
  });
}

/** A Redis list through a Redis server (REDIS_URL): LPUSH / BLMPOP, acks on a second list. */
export const redisListTransport: Transport = {
  name: 'redis-list',
  label: 'Redis list',
  summary: {
    libraries: 'ioredis',
    image: 'list, `LPUSH` / `BLMPOP`',
    ack: 'list, `BLMPOP`',
  },
  traits: {
    baseline: false,
    batchedArrivals:
      'Redis list: ioredis hands over a BLMPOP reply whole, so the images of one pop are in hand together and ' +
      'their arrival stamps are taken one after the other as the reply is read',
  },
  ...redisDescriptors(false),
  connect,
  listen,
};
