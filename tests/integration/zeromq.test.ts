import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { Dealer } from 'zeromq';
import { imageChecksum } from '../../services/core/checksum.js';
import { ErrorCode, ItbError } from '../../services/core/errors.js';
import { encodeFrameHeader, type Ack } from '../../services/core/frame.js';
import type { ReceivedFrame, ReceiverListener, TransmitterLink } from '../../services/transports/contract.js';
import { createDealer, createRouter, HIGH_WATER_MARK_MESSAGES, zeromqTransport } from '../../services/transports/zeromq.js';
import { activeResources, leakedResources } from '../helpers/handles.js';
import { testLog, transferThrough } from '../helpers/harness.js';

// What is particular to ZeroMQ (the shared suite in transports.test.ts covers the contract):
// high-water marks, one pending send per socket at a wide window, the lazy connect, malformed
// multipart messages and libzmq's own size limit.


async function waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A port nothing listens on: one the OS just handed out and took back. */
async function unusedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

/** A receiver that records what it delivered and rejected. */
async function recordingListener(maxImageBytes: number): Promise<{ listener: ReceiverListener; delivered: ReceivedFrame[]; rejects: string[] }> {
  const delivered: ReceivedFrame[] = [];
  const rejects: string[] = [];
  const listener = await zeromqTransport.listen({
    host: '127.0.0.1', bindHost: '127.0.0.1', port: 0, redisUrl: undefined, maxImageBytes, log: testLog,
    deliver(frame) {
      delivered.push(frame);
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'ok' };
    },
    onReject(reason) {
      rejects.push(reason);
    },
  });
  return { listener, delivered, rejects };
}

/** A transmitter link that records acks and failures. */
async function recordingLink(port: number, connectTimeoutMs = 5000): Promise<{ link: TransmitterLink; acks: Ack[]; failures: Error[] }> {
  const acks: Ack[] = [];
  const failures: Error[] = [];
  const link = await zeromqTransport.connect({
    host: '127.0.0.1', bindHost: '127.0.0.1', port, redisUrl: undefined, maxImageBytes: 64 * 1024 * 1024, log: testLog, connectTimeoutMs,
    onAck: (ack) => acks.push(ack),
    onFailure: (err) => failures.push(err),
  });
  return { link, acks, failures };
}

function frameFor(image: Buffer, seq: number, sizeBytes = image.length): Buffer {
  return encodeFrameHeader({ sectionId: 3, seq, sizeBytes, checksum: imageChecksum(image), sentAtNs: process.hrtime.bigint() });
}

describe('zeromq', () => {
  it('sets small high-water marks, a per-part size limit and mandatory routing on the sockets it creates', async () => {
    const dealer = createDealer('127.0.0.1');
    const router = createRouter('127.0.0.1', 5_000_000);
    try {
      expect(HIGH_WATER_MARK_MESSAGES).toBeLessThan(1000);
      for (const socket of [dealer, router]) {
        expect(socket.sendHighWaterMark).toBe(HIGH_WATER_MARK_MESSAGES);
        expect(socket.receiveHighWaterMark).toBe(HIGH_WATER_MARK_MESSAGES);
      }
      expect(router.maxMessageSize).toBe(5_000_000);
      expect(dealer.maxMessageSize).toBeGreaterThanOrEqual(64); // acks are 12 bytes, ZMTP commands ~50
      expect(dealer.immediate).toBe(true);
      // ZMQ_ROUTER_MANDATORY is write-only in libzmq: check it by what it does, an unroutable
      // message fails instead of vanishing.
      expect(router.sendTimeout).toBeGreaterThan(0);
      await router.bind('tcp://127.0.0.1:*');
      router.sendTimeout = 0; // with no peer at all, the send would otherwise wait sendTimeout first
      await expect(router.send([Buffer.from('nobody'), Buffer.from('ack')])).rejects.toMatchObject({ code: 'EHOSTUNREACH' });
    } finally {
      dealer.close();
      router.close();
    }
  });

  it('delivers 2,000 1 KB images at window 64 with one pending send per socket (no EBUSY, no drop)', async () => {
    const images = Array.from({ length: 2000 }, () => randomBytes(1024));
    const outcome = await transferThrough(zeromqTransport, images, { window: 64 });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.received.map((r) => r.seq)).toEqual(images.map((_, i) => i));
    expect(outcome.received.every((r) => r.bytes.equals(images[r.seq]!))).toBe(true);
    expect(outcome.acks.map((a) => a.seq)).toEqual(images.map((_, i) => i));
  }, 60_000);

  it('handshakes and delivers with MAX_IMAGE_SIZE of 1 byte (ZMTP commands are under the part limit too)', async () => {
    const outcome = await transferThrough(zeromqTransport, [randomBytes(1), randomBytes(1)], { window: 1, maxImageBytes: 1 });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.acks.map((a) => a.seq)).toEqual([0, 1]);
  }, 20_000);

  it('connects to a receiver that starts listening after connect() was called', async () => {
    const port = await unusedPort();
    const linking = recordingLink(port, 5000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const listener = await zeromqTransport.listen({
      host: '127.0.0.1', bindHost: '127.0.0.1', port, redisUrl: undefined, maxImageBytes: 1024, log: testLog,
      deliver: (frame) => ({ sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'ok' }),
      onReject: () => {},
    });
    const { link, acks } = await linking;
    try {
      expect(listener.port).toBe(port);
      const image = randomBytes(100);
      await link.send(frameFor(image, 5), image);
      await waitUntil(() => acks.length === 1, 5000, 'the ack');
      expect(acks[0]?.seq).toBe(5);
    } finally {
      await link.close();
      await listener.close();
    }
  }, 20_000);

  it('delivers everything, nothing dropped, when the window (256) is wider than the high-water mark', async () => {
    const images = Array.from({ length: 600 }, () => randomBytes(64 * 1024));
    const outcome = await transferThrough(zeromqTransport, images, { window: 256 });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.received.map((r) => r.seq)).toEqual(images.map((_, i) => i));
    expect(outcome.received.every((r) => r.bytes.equals(images[r.seq]!))).toBe(true);
  }, 60_000);

  it('rejects connect() within connectTimeoutMs with ITB_ERR_TIMEOUT when nothing listens', async () => {
    const before = activeResources();
    const port = await unusedPort();
    const startedMs = Date.now();
    const err: unknown = await zeromqTransport
      .connect({
        host: '127.0.0.1', bindHost: '127.0.0.1', port, redisUrl: undefined, maxImageBytes: 1024, log: testLog, connectTimeoutMs: 500,
        onAck: () => {},
        onFailure: () => {},
      })
      .then(
        () => new Error('connect() resolved'),
        (e: unknown) => e,
      );
    const elapsedMs = Date.now() - startedMs;
    expect(err).toBeInstanceOf(ItbError);
    expect((err as ItbError).code).toBe(ErrorCode.timeout);
    expect((err as ItbError).message).toContain(`127.0.0.1:${port}`);
    expect(elapsedMs).toBeGreaterThanOrEqual(450);
    expect(elapsedMs).toBeLessThan(1500);
    expect(await leakedResources(before)).toEqual([]);
  }, 10_000);

  it('rejects malformed messages from a raw peer, acks none of them, and keeps serving', async () => {
    const { listener, delivered, rejects } = await recordingListener(1024 * 1024);
    const raw = new Dealer({ linger: 0, receiveTimeout: 300 });
    let transmitter: Awaited<ReturnType<typeof recordingLink>> | undefined;
    try {
      raw.connect(`tcp://127.0.0.1:${listener.port}`);
      const image = randomBytes(500);
      await raw.send([frameFor(image, 0), image, Buffer.from('extra')]); // 3 parts
      await raw.send([frameFor(image, 1)]); // 1 part
      await raw.send([randomBytes(40), image]); // bad magic
      await raw.send([frameFor(image, 2, 499), image]); // length differs from the header
      await waitUntil(() => rejects.length >= 4, 5000, '4 rejects');
      expect(rejects[0]).toMatch(/3 parts, expected 2/);
      expect(rejects[1]).toMatch(/1 parts, expected 2/);
      expect(rejects[2]).toMatch(/magic/);
      expect(rejects[3]).toMatch(/500 bytes, header announced 499/);
      expect(delivered).toEqual([]);
      await expect(raw.receive()).rejects.toMatchObject({ code: 'EAGAIN' });

      transmitter = await recordingLink(listener.port);
      const good = randomBytes(4096);
      await transmitter.link.send(frameFor(good, 9), good);
      await waitUntil(() => transmitter!.acks.length === 1, 5000, 'the ack');
      expect(transmitter.acks).toEqual([{ sectionId: 3, seq: 9, status: 'ok' }]);
      expect(delivered).toHaveLength(1);
      expect(Buffer.from(delivered[0]!.payload as Buffer).equals(good)).toBe(true);
      expect(rejects).toHaveLength(4);
      expect(transmitter.failures).toEqual([]);
    } finally {
      raw.close();
      await transmitter?.link.close();
      await listener.close();
    }
  }, 20_000);

  it('drops a peer that sends a part over maxImageBytes before allocating it; the transmitter fails', async () => {
    const { listener, delivered, rejects } = await recordingListener(100_000);
    const { link, failures } = await recordingLink(listener.port);
    try {
      const image = randomBytes(200_000);
      await link.send(frameFor(image, 0, 100_000), image);
      await waitUntil(() => failures.length > 0, 5000, 'the transmitter failure');
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatchObject({ code: ErrorCode.transport });
      expect(delivered).toEqual([]);
      expect(rejects).toEqual([]);
      await expect(link.send(frameFor(image, 1), image)).rejects.toBe(failures[0]);
    } finally {
      await link.close();
      await listener.close();
    }
  }, 20_000);

  it('reports a receiver that goes away as one failure, and nothing after close()', async () => {
    const before = activeResources();
    const first = await recordingListener(1024);
    const a = await recordingLink(first.listener.port);
    await first.listener.close();
    await waitUntil(() => a.failures.length > 0, 5000, 'the failure');
    await new Promise((resolve) => setTimeout(resolve, 300)); // reconnect attempts must not report again
    expect(a.failures).toHaveLength(1);
    expect(a.failures[0]).toMatchObject({ code: ErrorCode.transport });
    await a.link.close();

    const second = await recordingListener(1024);
    const b = await recordingLink(second.listener.port);
    await b.link.close();
    await second.listener.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(b.failures).toEqual([]);
    expect(await leakedResources(before)).toEqual([]);
  }, 20_000);
});
