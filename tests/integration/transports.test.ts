import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import { imageChecksum } from '../../services/core/wire/checksum.js';
import { freePort } from '../../services/shared/net.js';
import type { LocalServer, Transport } from '../../services/transports/contract.js';
import { transports } from '../../services/transports/index.js';
import { activeResources, leakedResources } from '../helpers/handles.js';
import {
  eventually,
  LocalServers,
  openPair,
  stampedHeader,
  testDoor,
  testLog,
  testSocketPath,
  transferThrough,
} from '../helpers/harness.js';

// One suite, every transport in the table, real sockets on loopback and real servers: the same
// contract must hold whatever carries the bytes. A transport added to the table is tested here
// with no change to this file.

const MIB = 1024 * 1024;
const servers = new LocalServers();
beforeAll(async () => {
  await servers.startFor(transports);
});
afterAll(async () => {
  await servers.closeAll();
});

/** An endpoint where nothing answers: a closed loopback port, as a port or as a URL of the transport's scheme. */
async function deadEndpoint(
  transport: Transport,
): Promise<{ port: number; url: string | undefined; socketPath: string | undefined; where: string }> {
  // Two: a transport may bind the port after it (zeromq-pubsub's acks), which must be free as well.
  const port = await freePort(2);
  const url =
    transport.deployment.setting.kind === 'url'
      ? `${transport.deployment.setting.schemes[0]}://127.0.0.1:${port}`
      : undefined;
  // A socket file nobody made: its directory exists, the file does not.
  const socketPath = testSocketPath(transport);
  return {
    port: transport.deployment.setting.kind === 'port' ? port : 0,
    url,
    socketPath,
    where: socketPath ?? `127.0.0.1:${port}`,
  };
}

const cases = [
  { name: '1-byte images', sizeBytes: 1, count: 5, window: 1 },
  { name: '1 KB images, window 8', sizeBytes: 1000, count: 40, window: 8 },
  { name: '533 KB images, window 4', sizeBytes: 545_792, count: 12, window: 4 },
  { name: "12 MB images (over gRPC's 4 MB default)", sizeBytes: 12_000_000, count: 3, window: 2 },
];

for (const transport of transports) {
  describe(transport.name, () => {
    const url = (): string | undefined => servers.urlFor(transport);

    // A latest-frame key delivers every image only at window 1 (redis-kv.test.ts holds what it does at more).
    const supersedes = transport.traits.supersedesImages !== undefined;
    for (const c of cases) {
      const window = supersedes ? 1 : c.window;
      const title = `delivers ${c.name}${window === c.window ? '' : ' (at window 1)'} intact, in order`;
      it(`${title}, with positive times`, async () => {
        const images = Array.from({ length: c.count }, () => randomBytes(c.sizeBytes));
        const outcome = await transferThrough(transport, images, { window, url: url() });
        expect(outcome.rejects).toEqual([]);
        expect(outcome.received.map((r) => r.seq)).toEqual(images.map((_, i) => i));
        for (const r of outcome.received) {
          expect(r.bytes.equals(images[r.seq]!)).toBe(true);
          expect(r.arrivalNs).toBeGreaterThan(r.sentAtNs);
          // A sum made part by part as the image was read (a byte stream's large image) is the image's checksum.
          if (r.partsChecksum !== undefined) expect(r.partsChecksum).toBe(imageChecksum(images[r.seq]!));
        }
        expect(outcome.acks.map((a) => [a.seq, a.status])).toEqual(images.map((_, i) => [i, 'accepted']));
      }, 60_000);
    }

    it('leaves no open handle after close, and close is safe twice', async () => {
      const before = activeResources();
      const outcome = await transferThrough(transport, [randomBytes(2048)], {
        window: 1,
        url: url(),
        closeTwice: true,
      });
      expect(outcome.acks).toHaveLength(1);
      expect(await leakedResources(before)).toEqual([]);
    }, 90_000);

    it('connect() with nothing there rejects within connectTimeoutMs with ITB_ERR_TIMEOUT naming the address, ' +
      'leaving nothing open', async () => {
      const dead = await deadEndpoint(transport);
      const before = activeResources();
      const startedMs = Date.now();
      const outcome = await transport
        .connect({
          host: '127.0.0.1',
          bindHost: '127.0.0.1',
          port: dead.port,
          url: dead.url,
          socketPath: dead.socketPath,
          maxImageBytes: MIB,
          log: testLog,
          connectTimeoutMs: 600,
          imageBytes: 1024 * 1024,
          window: 64,
          credential: testDoor(transport.name).credential,
          onAck() {},
          onFailure() {},
        })
        .then(
          () => new Error('connect() resolved'),
          (err: unknown) => err,
        );
      const elapsedMs = Date.now() - startedMs;
      expect(outcome).toMatchObject({ code: ErrorCode.timeout, message: expect.stringContaining(dead.where) });
      // It kept trying for the whole budget (a refusal is retried, as for a receiver still starting), and
      // gave up then: a loaded machine adds a second or two, a retry past the budget adds far more.
      expect(elapsedMs).toBeGreaterThanOrEqual(550);
      expect(elapsedMs).toBeLessThan(4000);
      expect(await leakedResources(before)).toEqual([]);
    }, 10_000);

    it('drops a frame with a bad magic or announcing more than MAX_IMAGE_SIZE, reports it, delivers nothing of it, ' +
      'and keeps listening', async () => {
      for (const bad of ['magic', 'oversize'] as const) {
        const pair = await openPair(transport, { url: url(), receiverMaxImageBytes: MIB });
        try {
          const image = randomBytes(1000);
          const header = stampedHeader(image, 0, bad === 'oversize' ? { sizeBytes: 10_000_000_000 } : {});
          if (bad === 'magic') header.writeUInt32BE(0xdeadbeef, 0);
          pair.link.send(header, image);
          await eventually(() => pair.seen.rejects.length > 0);
          expect(pair.seen.rejects[0]).toMatch(bad === 'magic' ? /bad frame magic/ : /over MAX_IMAGE_SIZE/);
          expect(pair.seen.delivered).toEqual([]);
          expect(pair.seen.acks).toEqual([]);
        } finally {
          await pair.link.close();
        }
        // The listener serves the next section's link normally.
        await pair.section.reopen(pair.listener, 8);
        const next = await transport.connect({
          host: '127.0.0.1',
          bindHost: '127.0.0.1',
          port: pair.listener.port,
          url: url(),
          socketPath: pair.socketPath,
          maxImageBytes: MIB,
          log: testLog,
          connectTimeoutMs: 5000,
          imageBytes: 1024 * 1024,
          window: 64,
          credential: pair.section.credential,
          onAck: (ack) => pair.seen.acks.push(ack),
          onFailure: (err) => pair.seen.failures.push(err),
        });
        try {
          const image = randomBytes(3000);
          next.send(stampedHeader(image, 5), image);
          await eventually(() => pair.seen.acks.length === 1);
          expect(pair.seen.acks).toEqual([{ sectionId: 7, seq: 5, status: 'accepted' }]);
          expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual([5]);
        } finally {
          await next.close();
          await pair.listener.close();
        }
      }
    }, 90_000);

    it('drops a frame whose delivery throws: reported, never acked, and the next frame on the same link goes ' +
      'through', async () => {
      const pair = await openPair(transport, { url: url(), throwOnSeqs: [0] });
      try {
        const images = [randomBytes(2000), randomBytes(2000)];
        pair.link.send(stampedHeader(images[0]!, 0), images[0]!);
        // A latest-frame key would let the second image supersede the first before it is read.
        if (supersedes) await eventually(() => pair.seen.rejects.length === 1);
        pair.link.send(stampedHeader(images[1]!, 1), images[1]!);
        await eventually(() => pair.seen.acks.length === 1 && pair.seen.rejects.length === 1);
        expect(pair.seen.rejects[0]).toMatch(/seq 0 not delivered: delivery of seq 0 failed on purpose/);
        expect(pair.seen.acks.map((a) => a.seq)).toEqual([1]);
        expect(pair.seen.failures).toEqual([]);
      } finally {
        await pair.close();
      }
    }, 20_000);

    it('reports a peer that goes away as one failure, nothing after close(), and close() of a healthy link reports ' +
      'none', async () => {
      // The peer a link depends on: the receiver's listener, or the server the transport goes through.
      let broker: LocalServer | undefined;
      if (transport.deployment.localServer) broker = await transport.deployment.localServer.start();
      const pair = await openPair(transport, { url: broker?.url });
      try {
        if (broker) await broker.close();
        else await pair.listener.close();
        await eventually(() => pair.seen.failures.length > 0);
        await new Promise((resolve) => setTimeout(resolve, 300)); // reconnect attempts must not report again
        await pair.link.close();
        const image = randomBytes(10);
        pair.link.send(stampedHeader(image, 0), image); // after close: ignored, never reported
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(pair.seen.failures).toHaveLength(1);
        expect(pair.seen.failures[0]).toMatchObject({ code: ErrorCode.transport });
      } finally {
        await pair.close();
        await broker?.close();
      }
      const healthy = await openPair(transport, { url: url() });
      await healthy.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(healthy.seen.failures).toEqual([]);
      expect(healthy.seen.rejects).toEqual([]);
      // A broker of its own to stop: RabbitMQ's boot alone took 9 s on a quiet 2-core machine and over 30 s beside
      // three other test files and two CPU burners. The broker's own start is bounded (60 s); nothing here is timed.
    }, 120_000);

    if (transport.deployment.setting.kind !== 'url') {
      it('connects to a receiver that starts listening after connect() began', async () => {
        const { setting } = transport.deployment;
        // With the ports it binds after it (zeromq-pubsub's acks) free and given to no other test of this worker.
        const port = setting.kind === 'port' ? await freePort(1 + (setting.nextPorts ?? 0)) : 0;
        const socketPath = testSocketPath(transport);
        const acks: number[] = [];
        const section = testDoor(transport.name);
        const linking = transport.connect({
          host: '127.0.0.1',
          bindHost: '127.0.0.1',
          port,
          url: undefined,
          socketPath,
          maxImageBytes: MIB,
          log: testLog,
          connectTimeoutMs: 5000,
          imageBytes: 1024 * 1024,
          window: 64,
          credential: section.credential,
          onAck: (ack) => acks.push(ack.seq),
          onFailure() {},
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
        const listener = await transport.listen({
          host: '127.0.0.1',
          bindHost: '127.0.0.1',
          port,
          url: undefined,
          socketPath,
          maxImageBytes: MIB,
          log: testLog,
          door: section.door,
          idleTimeoutMs: section.idleTimeoutMs,
          deliver: (frame) => ({ sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' }),
          onReject() {},
        });
        // As the receiver app does before the transmitter is told to connect (a listener that dials the transmitter
        // starts here).
        await section.prepare(listener);
        const link = await linking;
        try {
          expect(listener.port).toBe(port);
          const image = randomBytes(100);
          link.send(stampedHeader(image, 3), image);
          await eventually(() => acks.length === 1);
          expect(acks).toEqual([3]);
        } finally {
          await link.close();
          await listener.close();
        }
      }, 20_000);
    }
  });
}
