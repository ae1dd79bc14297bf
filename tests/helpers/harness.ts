import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { inject } from 'vitest';
import { sectionCredential, type SectionCredential } from '../../services/core/wire/auth.js';
import { ImagePartHasher, imageChecksum, type PartHasher } from '../../services/core/wire/checksum.js';
import { encodeFrameHeader, type Ack } from '../../services/core/wire/frame.js';
import type {
  Door,
  LocalServer,
  ReceivedFrame,
  ReceiverListener,
  TransmitterLink,
  Transport,
} from '../../services/transports/contract.js';
import { transportByName } from '../../services/transports/index.js';
import { connectionsPerSection, Doorkeeper } from '../../services/receiver/door.js';

/** `text` as a regular expression that matches it literally (labels such as "HTTP+JSON"). */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `text` without colour (SGR) sequences, which do not move a terminal's cursor. */
export function withoutColour(text: string): string {
  return text.replace(/\x1b\[[0-9;]*m/g, '');
}

/** A logger that prints only when a test run asks for it (ITB_TEST_LOG=debug). */
export const testLog = pino({ level: process.env.ITB_TEST_LOG ?? 'silent' });

/**
 * The servers transports go through (Redis, NATS), one per URL setting (the Redis transports
 * share one), started from the transport table's own `localServer` so tests run them exactly as
 * `npm start` does.
 */
export class LocalServers {
  /** By the setting's env var (REDIS_URL). */
  private readonly servers = new Map<string, LocalServer>();

  /**
   * Starts a server for every URL setting of `table` that has a local one; AMQP_URL is the project's shared RabbitMQ
   * (tests/setup/shared-rabbit.ts) where the project has one, left running at closeAll.
   */
  async startFor(table: readonly Transport[]): Promise<void> {
    for (const transport of table) {
      const envVar = transport.deployment.setting.envVar;
      if (!transport.deployment.localServer || this.servers.has(envVar)) continue;
      const shared = envVar === 'AMQP_URL' ? sharedAmqpUrl() : undefined;
      this.servers.set(
        envVar,
        shared === undefined ? await transport.deployment.localServer.start() : { url: shared, close: async () => {} },
      );
    }
  }

  /** The URL setting for `transport`: its server's, or undefined when it has none. */
  urlFor(transport: Transport): string | undefined {
    return transport.deployment.setting.kind === 'url'
      ? this.servers.get(transport.deployment.setting.envVar)?.url
      : undefined;
  }

  /** The env variables that point every started transport at its server (REDIS_URL=...). */
  env(table: readonly Transport[]): Record<string, string> {
    return Object.fromEntries(
      table.flatMap((t) =>
        t.deployment.setting.kind === 'url' && this.servers.has(t.deployment.setting.envVar)
          ? [[t.deployment.setting.envVar, this.servers.get(t.deployment.setting.envVar)!.url]]
          : [],
      ),
    );
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.close()));
    this.servers.clear();
  }
}

/**
 * The AUTH_TOKEN every test's services share: one of this test process's own, so the queues of files that share a
 * broker (named after the section's credential, which derives from it) never meet.
 */
export const TEST_AUTH_TOKEN = `test-secret-${randomBytes(8).toString('hex')}`;

/** The project's shared RabbitMQ, or undefined where the project starts none (tests/setup/shared-rabbit.ts). */
function sharedAmqpUrl(): string | undefined {
  // inject answers undefined for what the project did not provide.
  return inject('sharedAmqpUrl') as string | undefined;
}

/**
 * A door as the receiver app gives a transport's listener, already open for one section, and that section's credential.
 */
export interface TestDoor {
  doorkeeper: Doorkeeper;
  door: Door;
  credential: SectionCredential;
  /** Every refusal the door reported, worded as the receiver logs them. */
  refusals: string[];
  idleTimeoutMs: number;
  /** Lets the listener prepare the section, as the receiver app does before the transmitter connects. */
  prepare(listener: ReceiverListener, window?: number): Promise<void>;
  /**
   * Ends the section and opens section `sectionId` in its place, prepared on `listener`; `credential` is then the new
   * one's.
   */
  reopen(listener: ReceiverListener, sectionId: number): Promise<void>;
}

/** A door open for section `sectionId` of `transportName`, with the test token. */
export function testDoor(transportName: string, sectionId = 7, idleTimeoutMs = 10_000, window = 64): TestDoor {
  const connections = connectionsPerSection(transportByName(transportName), window);
  const refusals: string[] = [];
  const doorkeeper = new Doorkeeper((_transport, reason) => refusals.push(reason));
  const testDoor: TestDoor = {
    doorkeeper,
    door: doorkeeper.door(transportName),
    credential: sectionCredential(TEST_AUTH_TOKEN, sectionId),
    refusals,
    idleTimeoutMs,
    async prepare(listener, window = 64) {
      await listener.openSection?.({ credential: testDoor.credential, window, transmitterHost: '127.0.0.1' });
    },
    async reopen(listener, nextSectionId) {
      doorkeeper.closeSection();
      await listener.closeSection?.();
      testDoor.credential = sectionCredential(TEST_AUTH_TOKEN, nextSectionId);
      doorkeeper.openSection(transportName, testDoor.credential, connections);
      await testDoor.prepare(listener);
    },
  };
  doorkeeper.openSection(transportName, testDoor.credential, connections);
  return testDoor;
}

/** A frame header as the transmitter builds it, stamped now. */
export function stampedHeader(
  image: Buffer,
  seq: number,
  overrides: { sectionId?: number; sizeBytes?: number } = {},
): Buffer {
  return encodeFrameHeader({
    sectionId: overrides.sectionId ?? 7,
    seq,
    sizeBytes: overrides.sizeBytes ?? image.length,
    checksum: imageChecksum(image),
    sentAtNs: process.hrtime.bigint(),
  });
}

/** What each side of a hand-opened pair saw. */
export interface PairSeen {
  delivered: ReceivedFrame[];
  rejects: string[];
  acks: Ack[];
  failures: Error[];
}

/** A listener and a link opened by hand, recording what each side saw; `close()` closes both. */
export interface Pair {
  seen: PairSeen;
  /** The door the listener was given, open for the link's section. */
  section: TestDoor;
  link: TransmitterLink;
  listener: ReceiverListener;
  /** The listener's socket file, for a transport whose setting is a socket. */
  socketPath: string | undefined;
  close(): Promise<void>;
}

/**
 * For a transport whose setting is a socket: a path for its socket file in a directory of its own (0700, as
 * SOCKET_DIR must be), so parallel tests never meet; undefined for the others.
 */
export function testSocketPath(transport: Transport): string | undefined {
  const setting = transport.deployment.setting;
  if (setting.kind !== 'socket') return undefined;
  return path.join(mkdtempSync(path.join(os.tmpdir(), 'itb-sock-')), setting.fileName);
}

/** Options of {@link openPair}; limits may differ per side to test one side's bound. */
export interface PairOptions {
  url?: string;
  receiverMaxImageBytes?: number;
  transmitterMaxImageBytes?: number;
  /** Makes the receiver's deliver throw for these seqs. */
  throwOnSeqs?: readonly number[];
  /** Size of the images the link will send (TransmitterOptions.imageBytes); 1 MiB unless given. */
  imageBytes?: number;
  /** The section's WINDOW; 64 unless given. */
  window?: number;
  /** Connects the link as the one carrying COMMAND_RATE's commands (TransmitterOptions.commandLane). */
  commandLane?: boolean;
  /** The listener's ReceiverOptions.partHasher; none unless given. */
  partHasher?: () => PartHasher;
  /** Called inside the receiver's deliver with each frame it takes, before its ack is returned. */
  onDeliver?: (frame: ReceivedFrame) => void;
}

/** Opens a listener on a free port and a link to it, both through `transport`'s real library. */
export async function openPair(transport: Transport, options: PairOptions = {}): Promise<Pair> {
  const seen: PairSeen = { delivered: [], rejects: [], acks: [], failures: [] };
  const window = options.window ?? 64;
  const section = testDoor(transport.name, 7, 10_000, window);
  const socketPath = testSocketPath(transport);
  const listener = await transport.listen({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port: 0,
    url: options.url,
    socketPath,
    maxImageBytes: options.receiverMaxImageBytes ?? 64 * 1024 * 1024,
    log: testLog,
    door: section.door,
    idleTimeoutMs: section.idleTimeoutMs,
    ...(options.partHasher === undefined ? {} : { partHasher: options.partHasher }),
    deliver(frame) {
      if (options.throwOnSeqs?.includes(frame.header.seq))
        throw new Error(`delivery of seq ${frame.header.seq} failed on purpose`);
      seen.delivered.push(frame);
      options.onDeliver?.(frame);
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' };
    },
    onReject(reason) {
      seen.rejects.push(reason);
    },
  });
  let link: TransmitterLink;
  try {
    await section.prepare(listener, window);
    link = await transport.connect({
      host: '127.0.0.1',
      bindHost: '127.0.0.1',
      port: listener.port,
      url: options.url,
      socketPath,
      maxImageBytes: options.transmitterMaxImageBytes ?? 64 * 1024 * 1024,
      log: testLog,
      connectTimeoutMs: 5000,
      imageBytes: options.imageBytes ?? 1024 * 1024,
      window,
      ...(options.commandLane === true ? { commandLane: true } : {}),
      credential: section.credential,
      onAck(ack) {
        seen.acks.push(ack);
      },
      onFailure(err) {
        seen.failures.push(err);
      },
    });
  } catch (err) {
    await listener.close();
    throw err;
  }
  return {
    seen,
    section,
    link,
    listener,
    socketPath,
    async close() {
      await link.close();
      await listener.close();
    },
  };
}

/** Polls until `condition` holds; fails the test after `timeoutMs` rather than hanging. */
export async function eventually(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** What one pass of images through a transport produced, on both sides. */
export interface TransferOutcome {
  received: {
    seq: number;
    sectionId: number;
    bytes: Buffer;
    sentAtNs: bigint;
    arrivalNs: bigint;
    /** The sum the transport made of the image's parts as it read them (the receiver app's part hasher), if it did. */
    partsChecksum: bigint | undefined;
  }[];
  acks: Ack[];
  rejects: string[];
}

/**
 * Sends `images` through one transport with the transmitter's rules: every image the window
 * admits is stamped at once, then handed over; returns what the receiver side delivered and what
 * came back. Everything is closed before it returns.
 */
export async function transferThrough(
  transport: Transport,
  images: readonly Buffer[],
  options: {
    window: number;
    url?: string;
    maxImageBytes?: number;
    sectionId?: number;
    timeoutMs?: number;
    closeTwice?: boolean;
    /**
     * Runs the link's connect (seq undefined) and each send (its seq) inside it: a test that watches the sender's calls
     * marks them so.
     */
    asSender?: <T>(work: () => T, seq: number | undefined) => T;
  },
): Promise<TransferOutcome> {
  const sectionId = options.sectionId ?? 7;
  const maxImageBytes = options.maxImageBytes ?? 64 * 1024 * 1024;
  const outcome: TransferOutcome = { received: [], acks: [], rejects: [] };
  const section = testDoor(transport.name, sectionId, 10_000, options.window);
  const socketPath = testSocketPath(transport);
  const listener = await transport.listen({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port: 0,
    url: options.url,
    socketPath,
    maxImageBytes,
    log: testLog,
    door: section.door,
    idleTimeoutMs: section.idleTimeoutMs,
    // As the receiver app gives it with VERIFY=true: a byte stream sums what it reads.
    partHasher: () => new ImagePartHasher(),
    deliver(frame: ReceivedFrame): Ack {
      const bytes = Buffer.isBuffer(frame.payload) ? Buffer.from(frame.payload) : Buffer.concat(frame.payload);
      outcome.received.push({
        seq: frame.header.seq,
        sectionId: frame.header.sectionId,
        bytes,
        sentAtNs: frame.header.sentAtNs,
        arrivalNs: frame.arrivalNs,
        partsChecksum: frame.partsChecksum?.value,
      });
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' };
    },
    onReject(reason) {
      outcome.rejects.push(reason);
    },
  });
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  let link: TransmitterLink | undefined;
  const waitFor = async (condition: () => boolean): Promise<void> => {
    const deadline = Date.now() + (options.timeoutMs ?? 20_000);
    while (!condition()) {
      if (failure) throw failure;
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`timed out with ${outcome.acks.length}/${images.length} acks`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  };
  try {
    await section.prepare(listener, options.window);
    const asSender = options.asSender ?? (<T>(work: () => T): T => work());
    link = await asSender(
      () =>
        transport.connect({
          host: '127.0.0.1',
          bindHost: '127.0.0.1',
          port: listener.port,
          url: options.url,
          socketPath,
          maxImageBytes,
          log: testLog,
          connectTimeoutMs: 5000,
          imageBytes: images.reduce((most, image) => Math.max(most, image.length), 1),
          window: options.window,
          credential: section.credential,
          onAck(ack) {
            outcome.acks.push(ack);
            wake?.();
          },
          onFailure(err) {
            failure = err;
            wake?.();
          },
        }),
      undefined,
    );
    const sending = link;
    for (let seq = 0; seq < images.length; ) {
      await waitFor(() => seq - outcome.acks.length < options.window);
      const admitted: [Buffer, Buffer, number][] = [];
      for (; seq < images.length && seq - outcome.acks.length < options.window; seq++)
        admitted.push([stampedHeader(images[seq]!, seq, { sectionId }), images[seq]!, seq]);
      for (const [header, image, at] of admitted) asSender(() => sending.send(header, image), at);
    }
    await waitFor(() => outcome.acks.length >= images.length);
  } finally {
    await link?.close();
    await listener.close();
    if (options.closeTwice) {
      await link?.close();
      await listener.close();
    }
  }
  return outcome;
}

/**
 * Sends seqs [from, from + count) of `image` keeping at most `window` unacknowledged, then waits for every ack; a link
 * failure fails at once.
 */
export async function pump(pair: Pair, image: Buffer, from: number, count: number, window: number): Promise<void> {
  const acked = (n: number) => (): boolean => pair.seen.acks.length >= n || pair.seen.failures.length > 0;
  for (let seq = from; seq < from + count; seq++) {
    await eventually(acked(seq - window + 1), 20_000);
    if (pair.seen.failures[0]) throw pair.seen.failures[0];
    pair.link.send(stampedHeader(image, seq), image);
  }
  await eventually(acked(from + count), 20_000);
  if (pair.seen.failures[0]) throw pair.seen.failures[0];
}
