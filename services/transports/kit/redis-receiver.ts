import type { Redis } from 'ioredis';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { encodeAck, FRAME_HEADER_BYTES, type FrameHeader } from '../../core/wire/frame.js';
import { sleep } from '../../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, SectionOpening } from '../contract.js';
import { BrokerReceiver } from './broker-receiver.js';
import type { FrameGate } from './gate.js';
import { closeClient, dropKeys, openPair, readBroker, RECEIVER_CONNECT_TIMEOUT_MS, requireBroker } from './redis.js';

// What the Redis transports' receivers share beyond the broker skeleton (broker-receiver.ts): the
// failure when a connection of theirs closes, the pairing of header and image read as two parts,
// and the whole of a receiver that polls (redis: XREADGROUP, redis-list: BLMPOP): a reader
// connection that blocks in its reads, in a loop that idles between sections and is moved from
// one section to the next by UNBLOCK, and a writer connection that prepares and deletes keys.

/** Block time of a polling receiver's reads: short, so the loop re-checks its section; close() does not wait for it. */
export const READ_BLOCK_MS = 1000;
/** How long a polling receiver waits after a failed read before the next. */
const READ_ERROR_PAUSE_MS = 100;

/** Fails `receiver`, once, when any of `clients` closes while it is not closing itself (a connection to Redis lost). */
export function failOnClose(clients: readonly Redis[], receiver: Pick<BrokerReceiver<unknown>, 'fail'>): void {
  for (const client of clients) client.on('close', () => receiver.fail());
}

/**
 * Turns what a Redis transport read (list elements, channel messages) back into frames: a header,
 * then its image as the next part; with `joined`, a part longer than a header is header and image
 * together (redis-pubsub's small images). A header the gate rejects is followed by its image, which
 * is dropped unread; a part that cannot be a header where one is due is rejected alone, so the next
 * pair is read normally.
 */
export class FramePairer {
  private header: FrameHeader | undefined;
  private skipImage = false;

  constructor(
    private readonly gate: FrameGate,
    private readonly joined: boolean,
  ) {}

  /** Takes one part; returns the ack to send when it completed a frame the gate took. */
  take(part: Buffer): Buffer | undefined {
    if (this.skipImage) {
      this.skipImage = false;
      return undefined;
    }
    const header = this.header;
    if (header !== undefined) {
      this.header = undefined;
      const ack = this.gate.take(header, part);
      return ack === undefined ? undefined : encodeAck(ack);
    }
    if (this.joined && part.length > FRAME_HEADER_BYTES) {
      const ack = this.gate.frame(part.subarray(0, FRAME_HEADER_BYTES), part.subarray(FRAME_HEADER_BYTES));
      return ack === undefined ? undefined : encodeAck(ack);
    }
    if (this.joined && part.length < FRAME_HEADER_BYTES) {
      this.gate.reject(`message of ${part.length} bytes, shorter than a frame header`);
      return undefined;
    }
    this.header = this.gate.header(part);
    this.skipImage = this.header === undefined && part.length === FRAME_HEADER_BYTES;
    return undefined;
  }

  /** Forgets a half-read frame: the section it belonged to is over. */
  reset(): void {
    this.header = undefined;
    this.skipImage = false;
  }
}

/** The connections of a polling receiver, and its skeleton (the open section; closing). */
export interface PollingConnections<Section> {
  /** The connection that blocks in the reads. */
  reader: Redis;
  /** The connection that prepares, writes and deletes keys. */
  writer: Redis;
  receiver: BrokerReceiver<Section>;
  /** The broker as messages name it (BrokerAddress.shown). */
  shown: string;
}

/** What one polling Redis receiver does of its own; listenPolling() does the rest. */
export interface PollingReads<Section> {
  /** Prepares the opening section's keys (before the transmitter is told to connect) and returns it. */
  open(opening: SectionOpening): Promise<Section>;
  /** The keys of a section: deleted when it ends, and when the listener closes with it open. */
  keys(section: Section): string[];
  /** One read of the open section (a blocking pop or read, and what follows it); rejects when the read failed. */
  read(section: Section): Promise<void>;
  /** Says why a read of the open section failed, and mends what it can; the loop pauses, then reads again. */
  readFailed(section: Section, err: unknown): Promise<void>;
  /** Forgets what was half read: the reader moves to another section, or to none. */
  switched?(): void;
}

/**
 * The receiver side of a Redis transport that polls: a reader and a writer connection, the reads of
 * `reads` (made once with them) in a loop on the open section, and the section's keys deleted when it
 * ends. Opening or ending a section wakes the reader, whether it waits for a section or blocks on
 * the previous one's keys (CLIENT UNBLOCK).
 */
export async function listenPolling<Section>(
  options: ReceiverOptions,
  transport: string,
  reads: (connections: PollingConnections<Section>) => PollingReads<Section>,
): Promise<ReceiverListener> {
  const broker = requireBroker(options, transport);
  const [reader, writer] = await openPair(broker, RECEIVER_CONNECT_TIMEOUT_MS);
  let readerId: number;
  try {
    readerId = Number(await reader.client('ID'));
  } catch (err) {
    await Promise.all([closeClient(reader), closeClient(writer)]);
    throw new ItbError(
      ErrorCode.transport,
      `cannot set up the receiver on Redis at ${broker.shown}: ${errorMessage(err)}`,
      { cause: err },
    );
  }
  const receiver = new BrokerReceiver<Section>(options, { transport, server: 'Redis', shown: broker.shown });
  failOnClose([reader, writer], receiver);
  const polling = reads({ reader, writer, receiver, shown: broker.shown });
  let wakeIdleReader: () => void = () => {};
  const switchSection = async (): Promise<void> => {
    polling.switched?.();
    wakeIdleReader();
    await writer.client('UNBLOCK', readerId);
  };

  const readLoop = (async () => {
    while (!receiver.closing) {
      const section = receiver.section;
      if (section === undefined) {
        await new Promise<void>((resolve) => {
          wakeIdleReader = resolve;
          setTimeout(resolve, READ_BLOCK_MS);
        });
        continue;
      }
      try {
        await polling.read(section);
      } catch (err) {
        if (receiver.closing || reader.status === 'end') return;
        if (receiver.section !== section) continue;
        await polling.readFailed(section, err);
        await sleep(READ_ERROR_PAUSE_MS);
      }
    }
  })();

  return receiver.listener(
    {
      open: (opening) => polling.open(opening),
      start: switchSection,
      async end(ended) {
        await switchSection();
        await dropKeys(writer, polling.keys(ended));
      },
      async close(open) {
        wakeIdleReader();
        // The reader is blocked in its read: dropping its connection ends the loop at once.
        await closeClient(reader);
        await readLoop;
        // Leave nothing behind in Redis.
        if (open !== undefined) await dropKeys(writer, polling.keys(open));
        await closeClient(writer);
      },
    },
    { readBroker: () => readBroker(writer) },
  );
}
