import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Dealer } from 'zeromq';
import { ErrorCode } from '../../services/core/errors.js';
import { HIGH_WATER_MARK_MESSAGES } from '../../services/transports/kit/zeromq.js';
import { createDealer, createRouter } from '../../services/transports/kit/zeromq-router.js';
import { zeromqTransport } from '../../services/transports/zeromq/transport.js';
import { eventually, openPair, stampedHeader, testDoor, testLog, transferThrough } from '../helpers/harness.js';

// Only what is PARTICULAR to ZeroMQ. The contract every transport shares (delivery of every size,
// handles after close, connect() timeout, bad magic and oversize headers, a delivery that throws,
// a receiver that goes away, connecting before the receiver listens) is tested for ZeroMQ too by
// the shared suite in transports.test.ts. Here: the socket options (high-water marks, libzmq's
// per-part size limit, mandatory routing), zeromq.js's one pending send per socket at a wide
// window, a window wider than the high-water mark, a part limit too small for the handshake,
// malformed multipart messages, and libzmq dropping a peer whose part is over the limit.

describe('zeromq transport', () => {
  it('sets small high-water marks, a per-part size limit and mandatory routing on the sockets it creates', async () => {
    const dealer = createDealer('127.0.0.1', testDoor('zeromq').credential.text);
    const router = createRouter('127.0.0.1', 5_000_000);
    const tinyRouter = createRouter('127.0.0.1', 1);
    try {
      expect(HIGH_WATER_MARK_MESSAGES).toBeLessThan(1000); // libzmq's default would let MB images pile up
      for (const socket of [dealer, router]) {
        expect(socket.sendHighWaterMark).toBe(HIGH_WATER_MARK_MESSAGES);
        expect(socket.receiveHighWaterMark).toBe(HIGH_WATER_MARK_MESSAGES);
      }
      expect(router.maxMessageSize).toBe(5_000_000);
      // Never below what ZMTP's own commands (~50 bytes) and a 40-byte header need.
      expect(tinyRouter.maxMessageSize).toBeGreaterThanOrEqual(64);
      expect(dealer.maxMessageSize).toBeGreaterThanOrEqual(64); // acks are 12 bytes, ZMTP commands ~50
      expect(dealer.maxMessageSize).toBeLessThan(1024 * 1024);
      expect(dealer.immediate).toBe(true);
      expect(dealer.linger).toBe(0);
      // ZMQ_ROUTER_MANDATORY is write-only in libzmq: check it by what it does, an unroutable
      // message fails instead of vanishing.
      expect(router.sendTimeout).toBeGreaterThan(0);
      await router.bind('tcp://127.0.0.1:*');
      router.sendTimeout = 0; // with no peer at all, the send would otherwise wait sendTimeout first
      await expect(router.send([Buffer.from('nobody'), Buffer.from('ack')])).rejects.toMatchObject({
        code: 'EHOSTUNREACH',
      });
    } finally {
      dealer.close();
      router.close();
      tinyRouter.close();
    }
  });

  it('delivers 2,000 1 KB images at window 64 with one pending send per socket (no EBUSY, no drop)', async () => {
    const images = Array.from({ length: 2000 }, () => randomBytes(1024));
    const outcome = await transferThrough(zeromqTransport, images, { window: 64 });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.received.map((r) => r.seq)).toEqual(images.map((_, i) => i));
    expect(outcome.received.every((r) => r.bytes.equals(images[r.seq]!))).toBe(true);
    expect(outcome.acks.map((a) => [a.seq, a.status])).toEqual(images.map((_, i) => [i, 'accepted']));
  }, 60_000);

  it('handshakes and delivers with MAX_IMAGE_SIZE of 1 byte (ZMTP commands are under the part limit too)', async () => {
    const images = [randomBytes(1), randomBytes(1)];
    const outcome = await transferThrough(zeromqTransport, images, { window: 1, maxImageBytes: 1 });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.received.map((r) => r.bytes)).toEqual(images);
    expect(outcome.acks.map((a) => a.seq)).toEqual([0, 1]);
  }, 20_000);

  it('delivers everything, nothing dropped, when the window (256) is wider than the high-water mark', async () => {
    expect(256).toBeGreaterThan(HIGH_WATER_MARK_MESSAGES);
    const images = Array.from({ length: 600 }, () => randomBytes(64 * 1024));
    const outcome = await transferThrough(zeromqTransport, images, { window: 256 });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.received.map((r) => r.seq)).toEqual(images.map((_, i) => i));
    expect(outcome.received.every((r) => r.bytes.equals(images[r.seq]!))).toBe(true);
    expect(outcome.acks.map((a) => a.seq)).toEqual(images.map((_, i) => i));
  }, 60_000);

  it('rejects malformed multipart messages from a raw Dealer peer, acks none of them, and keeps serving', async () => {
    const pair = await openPair(zeromqTransport, { receiverMaxImageBytes: 1024 * 1024 });
    // The raw peer is the next section's link; the pair's own link stays connected.
    await pair.section.reopen(pair.listener, 8);
    const raw = new Dealer({
      linger: 0,
      receiveTimeout: 300,
      plainUsername: 'itb',
      plainPassword: pair.section.credential.text,
    });
    try {
      raw.connect(`tcp://127.0.0.1:${pair.listener.port}`);
      const image = randomBytes(500);
      await raw.send([stampedHeader(image, 0), image, Buffer.from('extra')]); // 3 parts
      await raw.send([stampedHeader(image, 1)]); // 1 part
      await raw.send([stampedHeader(image, 2).subarray(0, 20), image]); // truncated header
      await raw.send([stampedHeader(image, 3, { sizeBytes: 499 }), image]); // length differs from the header
      await eventually(() => pair.seen.rejects.length >= 4);
      expect(pair.seen.rejects).toEqual([
        'zeromq: message has 3 parts, expected 2 (header, image)',
        'zeromq: message has 1 parts, expected 2 (header, image)',
        'zeromq: frame header is 20 bytes, expected 40',
        'zeromq: image of 500 bytes, its header announces 499',
      ]);
      expect(pair.seen.delivered).toEqual([]);
      await expect(raw.receive()).rejects.toMatchObject({ code: 'EAGAIN' }); // no ack came back

      // The transport's own link, on the same Router, is served normally.
      const good = randomBytes(4096);
      pair.link.send(stampedHeader(good, 9), good);
      await eventually(() => pair.seen.acks.length === 1);
      expect(pair.seen.acks).toEqual([{ sectionId: 7, seq: 9, status: 'accepted' }]);
      expect(pair.seen.delivered).toHaveLength(1);
      expect(Buffer.from(pair.seen.delivered[0]!.payload as Buffer).equals(good)).toBe(true);
      expect(pair.seen.rejects).toHaveLength(4);
      expect(pair.seen.failures).toEqual([]);
      // And so is the raw peer, once it sends a well-formed message.
      raw.receiveTimeout = 5000;
      await raw.send([stampedHeader(good, 10), good]);
      const [ack] = await raw.receive();
      expect(ack?.readUInt32BE(4)).toBe(10);
    } finally {
      raw.close();
      await pair.close();
    }
  }, 20_000);

  it('drops a peer that sends a part over maxImageBytes before allocating it: the transmitter fails once, and the ' +
    'listener keeps serving', async () => {
    const pair = await openPair(zeromqTransport, { receiverMaxImageBytes: 100_000 });
    try {
      const image = randomBytes(200_000);
      // The header announces a size within the limit, so only libzmq's part limit can stop the image.
      expect(pair.link.send(stampedHeader(image, 0, { sizeBytes: 100_000 }), image)).toBeUndefined(); // never throws
      await eventually(() => pair.seen.failures.length > 0);
      expect(pair.seen.failures[0]).toMatchObject({
        code: ErrorCode.transport,
        message: expect.stringContaining(`127.0.0.1:${pair.listener.port}`),
      });
      expect(pair.seen.delivered).toEqual([]);
      expect(pair.seen.rejects).toEqual([]); // libzmq dropped it before the gate saw anything
      // libzmq keeps reconnecting behind the failed link: that must not report a second failure.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(pair.seen.failures).toHaveLength(1);
      expect(pair.seen.acks).toEqual([]);
      expect(pair.seen.delivered).toEqual([]);
    } finally {
      await pair.link.close();
    }
    // Only that peer was dropped: the next section's link to the same Router is served.
    await pair.section.reopen(pair.listener, 8);
    const acks: number[] = [];
    const failures: Error[] = [];
    const next = await zeromqTransport.connect({
      host: '127.0.0.1',
      bindHost: '127.0.0.1',
      port: pair.listener.port,
      url: undefined,
      maxImageBytes: 100_000,
      log: testLog,
      connectTimeoutMs: 5000,
      imageBytes: 1024 * 1024,
      window: 64,
      credential: pair.section.credential,
      onAck: (ack) => acks.push(ack.seq),
      onFailure: (err) => failures.push(err),
    });
    try {
      const image = randomBytes(100_000); // exactly the limit
      next.send(stampedHeader(image, 2), image);
      await eventually(() => acks.length === 1);
      expect(acks).toEqual([2]);
      expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual([2]);
      expect(failures).toEqual([]);
    } finally {
      await next.close();
      await pair.listener.close();
    }
  }, 20_000);

  // libzmq reconnects by itself after a disconnect: the link must not carry on over that new
  // connection once it has reported its failure (the run has already failed the section).
  it('after the link failed, sends nothing more and reports no ack, though libzmq reconnects', async () => {
    const pair = await openPair(zeromqTransport, { receiverMaxImageBytes: 100_000 });
    try {
      const image = randomBytes(200_000);
      pair.link.send(stampedHeader(image, 0, { sizeBytes: 100_000 }), image);
      await eventually(() => pair.seen.failures.length > 0);
      const small = randomBytes(10);
      pair.link.send(stampedHeader(small, 1), small);
      await new Promise((resolve) => setTimeout(resolve, 1000)); // well past libzmq's 100 ms reconnect interval
      expect(pair.seen.failures).toHaveLength(1);
      expect(pair.seen.delivered).toEqual([]);
      expect(pair.seen.acks).toEqual([]);
    } finally {
      await pair.close();
    }
  }, 20_000);
});
