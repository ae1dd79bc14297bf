import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import type { TransmitterOptions } from '../../services/transports/contract.js';
import { startPrivateNats } from '../../services/transports/kit/nats.js';
import { natsJetstreamTransport, sectionStream } from '../../services/transports/nats-jetstream/transport.js';
import {
  brokerLinkOptions,
  listenThrough,
  privateBrokerForFile,
  type BrokerListening,
  type LinkSeen,
} from '../helpers/broker.js';
import { eventually, stampedHeader, testDoor, type TestDoor } from '../helpers/harness.js';

// Only what is PARTICULAR to JetStream; the shared suite in transports.test.ts runs the contract
// (every size, handles, connect() timeout, bad headers, a delivery that throws, the server going
// away) for nats-jetstream too. Here: publishes awaiting their PubAck are bounded by WINDOW; an
// image over the server's max_payload fails the section, naming the limit, before anything is
// sent; a server without JetStream fails the section with that reason; the server killed mid-
// section fails link and listener within a short IMAGE_TIMEOUT_MS; the section's stream is in
// memory, counts what was sent, and is gone once the section closes.

const MIB = 1024 * 1024;
/** IMAGE_TIMEOUT_MS of these tests: short, so a failure that waits for it would show. */
const IMAGE_TIMEOUT_MS = 1000;

const nats = privateBrokerForFile(() => startPrivateNats());

/** A listener on `url` for `section` (not yet prepared), recording what it delivered, rejected and its failures. */
function listenFor(url: string, section: TestDoor): Promise<BrokerListening> {
  return listenThrough(natsJetstreamTransport, url, section, { idleTimeoutMs: IMAGE_TIMEOUT_MS, prepared: false });
}

/** Options of a link through `url` for `section`, recording acks and failures in `seen`. */
function linkOptions(
  url: string,
  section: TestDoor,
  imageBytes: number,
  seen: LinkSeen,
  window = 16,
): TransmitterOptions {
  return brokerLinkOptions(url, section.credential, imageBytes, seen, { window });
}

/**
 * A TCP proxy to `target` that counts the client's `HPUB <subject> ` commands and, while `hold` is
 * set, holds back everything the server sends (PubAcks and acks included).
 */
async function holdingProxy(
  target: string,
  subject: string,
): Promise<{ url: string; published(): number; hold(on: boolean): void; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const marker = `HPUB ${subject} `;
  let published = 0;
  let holding = false;
  const held: (() => void)[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    let tail = '';
    client.on('data', (chunk) => {
      const text = tail + chunk.toString('latin1');
      published += text.split(marker).length - 1;
      tail = text.slice(-marker.length + 1);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (holding) held.push(() => client.write(chunk));
      else client.write(chunk);
    });
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      a.on('close', () => b.destroy());
      a.on('error', () => b.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `nats://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    published: () => published,
    hold(on) {
      holding = on;
      if (!on) for (const write of held.splice(0)) write();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('nats-jetstream transport: JetStream specifics', () => {
  it('keeps at most WINDOW publishes awaiting their PubAck, and sends the rest as PubAcks come back', async () => {
    const window = 4;
    const section = testDoor('nats-jetstream', 7, 10_000, window);
    const { listener, delivered } = await listenFor(nats.url, section);
    await section.prepare(listener, window);
    const proxy = await holdingProxy(nats.url, sectionStream(section.credential).subject);
    const seen = { acks: [] as number[], failures: [] as Error[] };
    const link = await natsJetstreamTransport.connect(linkOptions(proxy.url, section, 1000, seen, window));
    try {
      proxy.hold(true);
      const images = Array.from({ length: 3 * window }, () => randomBytes(1000));
      for (const [seq, image] of images.entries()) link.send(stampedHeader(image, seq), image);
      await eventually(() => proxy.published() >= window);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // No PubAck came back: the link sent WINDOW images and holds the rest.
      expect(proxy.published()).toBe(window);
      proxy.hold(false);
      await eventually(() => seen.acks.length === images.length || seen.failures.length > 0);
      expect(seen.failures).toEqual([]);
      expect(proxy.published()).toBe(images.length);
      expect(seen.acks).toEqual(images.map((_, seq) => seq));
      expect(delivered.map((f) => f.header.seq)).toEqual(images.map((_, seq) => seq));
    } finally {
      await link.close();
      await listener.close();
      await proxy.close();
    }
  }, 20_000);

  it("fails the section with the server's max_payload named, before any image is sent; one that fits goes " +
    'through', async () => {
    const small = await startPrivateNats(MIB);
    const section = testDoor('nats-jetstream');
    const { listener, delivered } = await listenFor(small.url, section);
    const observer = await natsConnect({ servers: small.url, reconnect: false });
    try {
      await section.prepare(listener);
      const seen = { acks: [] as number[], failures: [] as Error[] };
      const outcome = await natsJetstreamTransport.connect(linkOptions(small.url, section, MIB, seen)).then(
        () => new Error('connect() resolved'),
        (err: unknown) => err,
      );
      expect(outcome).toMatchObject({ code: ErrorCode.transport });
      expect((outcome as Error).message).toContain(`over the max_payload of ${MIB} bytes`);
      expect((outcome as Error).message).toContain('raise max_payload');
      const jsm = await jetstreamManager(observer);
      const stream = sectionStream(section.credential);
      expect((await jsm.streams.info(stream.name)).state.last_seq).toBe(0);

      const image = randomBytes(MIB - 200);
      const link = await natsJetstreamTransport.connect(linkOptions(small.url, section, image.length, seen));
      try {
        link.send(stampedHeader(image, 0), image);
        await eventually(() => seen.acks.length === 1 || seen.failures.length > 0);
      } finally {
        await link.close();
      }
      expect(seen.failures).toEqual([]);
      expect(delivered.map((f) => f.header.seq)).toEqual([0]);
    } finally {
      await observer.close();
      await listener.close();
      await small.close();
    }
  }, 15_000);

  it('fails the section with the reason when the server has no JetStream', async () => {
    const plain = await startPrivateNats(undefined, '127.0.0.1', { jetStream: false });
    const section = testDoor('nats-jetstream');
    const { listener } = await listenFor(plain.url, section);
    try {
      await expect(section.prepare(listener)).rejects.toThrow(/has no JetStream/);
      const seen = { acks: [] as number[], failures: [] as Error[] };
      await expect(natsJetstreamTransport.connect(linkOptions(plain.url, section, 1000, seen))).rejects.toMatchObject({
        code: ErrorCode.transport,
        message: expect.stringMatching(/NATS at nats:\/\/127\.0\.0\.1:\d+ has no JetStream.*-js/),
      });
    } finally {
      await listener.close();
      await plain.close();
    }
  }, 15_000);

  it('fails link and listener with the reason within IMAGE_TIMEOUT_MS when the server dies mid-section', async () => {
    const own = await startPrivateNats();
    const section = testDoor('nats-jetstream');
    const { listener, failures } = await listenFor(own.url, section);
    const seen = { acks: [] as number[], failures: [] as Error[] };
    await section.prepare(listener);
    const link = await natsJetstreamTransport.connect(linkOptions(own.url, section, 100_000, seen));
    try {
      const image = randomBytes(100_000);
      link.send(stampedHeader(image, 0), image);
      await eventually(() => seen.acks.length === 1);
      for (let seq = 1; seq < 8; seq++) link.send(stampedHeader(image, seq), image);
      await own.close();
      const diedAtMs = Date.now();
      await eventually(() => seen.failures.length > 0 && failures.length > 0);
      expect(Date.now() - diedAtMs).toBeLessThan(IMAGE_TIMEOUT_MS);
      expect(seen.failures).toHaveLength(1);
      expect(seen.failures[0]).toMatchObject({ code: ErrorCode.transport });
      expect(seen.failures[0]!.message).toMatch(/NATS JetStream link through nats:\/\/127\.0\.0\.1:\d+: /);
      expect(failures).toHaveLength(1);
      expect(failures[0]).toContain(`lost its connection to NATS JetStream at ${own.url}`);
    } finally {
      await link.close();
      await listener.close();
      await own.close();
    }
  }, 15_000);

  it("keeps the section's images in a memory stream that counts every one sent, acked by WINDOW, and removes it " +
    'when the section closes', async () => {
    const window = 8;
    const section = testDoor('nats-jetstream', 7, 10_000, window);
    const { listener, delivered, rejects } = await listenFor(nats.url, section);
    const observer = await natsConnect({ servers: nats.url, reconnect: false });
    try {
      await section.prepare(listener, window);
      const jsm = await jetstreamManager(observer);
      const stream = sectionStream(section.credential);
      const info = await jsm.streams.info(stream.name);
      expect(info.config).toMatchObject({ storage: 'memory', retention: 'workqueue', subjects: [stream.subject] });
      const consumers = await jsm.consumers.list(stream.name).next();
      expect(consumers.map((c) => c.config)).toMatchObject([{ ack_policy: 'explicit', max_ack_pending: window }]);

      const seen = { acks: [] as number[], failures: [] as Error[] };
      const link = await natsJetstreamTransport.connect(linkOptions(nats.url, section, 2000, seen, window));
      const sent = 20;
      try {
        for (let seq = 0; seq < sent; seq++) {
          await eventually(() => seq - seen.acks.length < window);
          const image = randomBytes(2000);
          link.send(stampedHeader(image, seq), image);
        }
        await eventually(() => seen.acks.length === sent || seen.failures.length > 0);
      } finally {
        await link.close();
      }
      // Counted end to end: the broker stored as many as were sent, and all were received and acked.
      const state = (await jsm.streams.info(stream.name)).state;
      expect(state.last_seq).toBe(sent);
      expect(delivered).toHaveLength(sent);
      // Work-queue retention: each message left the stream once the receiver acked it to JetStream.
      let left = state.messages;
      for (let tries = 0; left > 0 && tries < 50; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        left = (await jsm.streams.info(stream.name)).state.messages;
      }
      expect(left).toBe(0);
      expect(rejects).toEqual([]);

      await listener.closeSection?.();
      const names = await jsm.streams.names().next();
      expect(names).not.toContain(stream.name);
    } finally {
      await observer.close();
      await listener.close();
    }
  }, 20_000);
});
