import { afterAll, beforeAll } from 'vitest';
import type { SectionCredential } from '../../services/core/wire/auth.js';
import type {
  LocalServer,
  ReceivedFrame,
  ReceiverListener,
  TransmitterOptions,
  Transport,
} from '../../services/transports/contract.js';
import { testLog, type TestDoor } from './harness.js';

// What the broker transports' own test files (nats, nats-jetstream, mqtt, amqp) share: one private
// broker for the whole file, and a listener and link options opened by hand against a broker URL,
// recording what each side saw. Each file keeps its own defaults in a one-line adapter.

const MIB = 1024 * 1024;

/**
 * The private broker `start` gives, started before the file's tests (beforeAll) and closed after
 * them (afterAll). What it returns stands for that broker: read it inside a test or a later hook;
 * reading it before the broker started throws.
 */
export function privateBrokerForFile<T extends LocalServer>(start: () => Promise<T>, startTimeoutMs?: number): T {
  let server: T | undefined;
  beforeAll(async () => {
    server = await start();
  }, startTimeoutMs);
  afterAll(async () => {
    await server?.close();
  });
  return new Proxy({} as T, {
    get(_target, key) {
      if (server === undefined) throw new Error('the private broker is read before beforeAll started it');
      const value: unknown = Reflect.get(server, key);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(server) : value;
    },
  });
}

/** What a listener opened through a broker recorded. */
export interface BrokerListening {
  listener: ReceiverListener;
  /** Every frame it delivered, in order. */
  delivered: ReceivedFrame[];
  /** The seq of every frame it delivered, in order. */
  seqs: number[];
  /** Every reason its gate rejected a message for. */
  rejects: string[];
  /** Every failure it reported. */
  failures: string[];
}

/** How {@link listenThrough} opens its listener besides transport, URL and section. */
export interface ListenThroughOptions {
  password?: string;
  /** Where its failures go; a new array unless a test passes its own. */
  failures?: string[];
  /** Its idle timeout (IMAGE_TIMEOUT_MS); the section's unless given. */
  idleTimeoutMs?: number;
  /** The window the section is prepared with; the door's default unless given. */
  window?: number;
  /** False: the section is not prepared on the listener (the test does it, or tests what happens without). */
  prepared?: boolean;
}

/**
 * A listener of `transport` through the broker at `url`, open for `section` (prepared, unless
 * `prepared` is false), accepting every frame and recording what it delivered, rejected and how it failed.
 */
export async function listenThrough(
  transport: Transport,
  url: string,
  section: TestDoor,
  options: ListenThroughOptions = {},
): Promise<BrokerListening> {
  const delivered: ReceivedFrame[] = [];
  const seqs: number[] = [];
  const rejects: string[] = [];
  const failures = options.failures ?? [];
  const listener = await transport.listen({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port: 0,
    url,
    password: options.password,
    maxImageBytes: 64 * MIB,
    log: testLog,
    door: section.door,
    idleTimeoutMs: options.idleTimeoutMs ?? section.idleTimeoutMs,
    deliver(frame) {
      delivered.push(frame);
      seqs.push(frame.header.seq);
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' };
    },
    onReject: (reason) => rejects.push(reason),
    onFailure: (reason) => failures.push(reason),
  });
  if (options.prepared !== false) {
    try {
      await section.prepare(listener, options.window);
    } catch (err) {
      await listener.close();
      throw err;
    }
  }
  return { listener, delivered, seqs, rejects, failures };
}

/** What a link's options record: the seq of every ack and every failure, in order. */
export interface LinkSeen {
  acks: number[];
  failures: Error[];
}

/**
 * Options of a link through the broker at `url` with `credential`'s section, for images of
 * `imageBytes` at a window of 16, recording acks and failures in `seen`; `more` overrides any of them.
 */
export function brokerLinkOptions(
  url: string,
  credential: SectionCredential,
  imageBytes: number,
  seen: LinkSeen,
  more: Partial<TransmitterOptions> = {},
): TransmitterOptions {
  return {
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port: 0,
    url,
    maxImageBytes: 64 * MIB,
    log: testLog,
    connectTimeoutMs: 3000,
    imageBytes,
    window: 16,
    credential,
    onAck: (ack) => seen.acks.push(ack.seq),
    onFailure: (err) => seen.failures.push(err),
    ...more,
  };
}
