import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import type { Ack } from '../../services/core/wire/frame.js';
import type { ReceiverListener, TransmitterLink, TransmitterOptions } from '../../services/transports/contract.js';
import { HIGH_WATER_MARK_MESSAGES, PART_LIMIT_FLOOR_BYTES } from '../../services/transports/kit/zeromq.js';
import {
  createPairDialer,
  createPairListener,
  zeromqPairTransport,
} from '../../services/transports/zeromq-pair/transport.js';
import { eventually, stampedHeader, testDoor, testLog, type TestDoor } from '../helpers/harness.js';

// Only what is PARTICULAR to ZeroMQ PAIR. The contract every transport shares is tested for it by
// the shared suite in transports.test.ts. Here: its sockets' options and declared limits, what a
// second transmitter gets while the first is linked (nothing), that the next section's link still
// gets in once the first is gone, and the receive loop's wake-up with ZAP on, repeated.

const MIB = 1024 * 1024;
/** The asset's size: the wake-up problem showed with large first images. */
const LARGE_IMAGE_BYTES = 545_792;

/** What a listener delivered, by section. */
interface Delivered {
  frames: { sectionId: number; seq: number }[];
  rejects: string[];
}

async function listen(section: TestDoor, delivered: Delivered): Promise<ReceiverListener> {
  return zeromqPairTransport.listen({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port: 0,
    url: undefined,
    maxImageBytes: MIB,
    log: testLog,
    door: section.door,
    idleTimeoutMs: section.idleTimeoutMs,
    deliver(frame) {
      delivered.frames.push({ sectionId: frame.header.sectionId, seq: frame.header.seq });
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' };
    },
    onReject: (reason) => delivered.rejects.push(reason),
  });
}

/** What one link saw. */
interface LinkSeen {
  acks: Ack[];
  failures: Error[];
}

function linkOptions(port: number, section: TestDoor, seen: LinkSeen): TransmitterOptions {
  return {
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port,
    url: undefined,
    maxImageBytes: MIB,
    log: testLog,
    connectTimeoutMs: 3000,
    imageBytes: LARGE_IMAGE_BYTES,
    window: 64,
    credential: section.credential,
    onAck: (ack) => seen.acks.push(ack),
    onFailure: (err) => seen.failures.push(err),
  };
}

/** Sends seqs [from, from + count) of `image` on `link` for section `sectionId`. */
function sendImages(link: TransmitterLink, image: Buffer, sectionId: number, from: number, count: number): void {
  for (let seq = from; seq < from + count; seq++) link.send(stampedHeader(image, seq, { sectionId }), image);
}

describe('zeromq-pair transport', () => {
  it('sets the common marks and part limits on its PAIR sockets, and declares one client and one receiver', () => {
    const dialer = createPairDialer('127.0.0.1', testDoor('zeromq-pair').credential.text);
    const listener = createPairListener('127.0.0.1', 5_000_000);
    try {
      for (const socket of [dialer, listener]) {
        expect(socket.sendHighWaterMark).toBe(HIGH_WATER_MARK_MESSAGES);
        expect(socket.receiveHighWaterMark).toBe(HIGH_WATER_MARK_MESSAGES);
      }
      expect(listener.maxMessageSize).toBe(5_000_000);
      expect(dialer.maxMessageSize).toBe(PART_LIMIT_FLOOR_BYTES); // acks are 12 bytes
      expect(dialer.immediate).toBe(true);
      expect(listener.heartbeatInterval).toBeGreaterThan(0);
      expect(listener.plainServer).toBe(true);
    } finally {
      dialer.close();
      listener.close();
    }
    expect(zeromqPairTransport.traits.maxClients?.clients).toBe(1);
    expect(zeromqPairTransport.traits.maxReceivers?.receivers).toBe(1);
    expect(zeromqPairTransport.deployment).toMatchObject({
      defaultRun: false,
      setting: { kind: 'port', envVar: 'ZEROMQ_PAIR_PORT', defaultPort: 5558 },
    });
  });

  it('refuses a second transmitter at the door while the first is linked; the first link keeps working', async () => {
    const section = testDoor('zeromq-pair');
    const delivered: Delivered = { frames: [], rejects: [] };
    const listener = await listen(section, delivered);
    const first: LinkSeen = { acks: [], failures: [] };
    const second: LinkSeen = { acks: [], failures: [] };
    const link = await zeromqPairTransport.connect(linkOptions(listener.port, section, first));
    try {
      const image = randomBytes(1024);
      sendImages(link, image, 7, 0, 3);
      await eventually(() => first.acks.length === 3);
      const refused = await zeromqPairTransport.connect(linkOptions(listener.port, section, second)).then(
        async (late) => {
          await late.close();
          return undefined;
        },
        (err: unknown) => err,
      );
      expect(refused).toMatchObject({ code: ErrorCode.refused });
      expect(section.refusals.join('\n')).toMatch(/zeromq from/);
      sendImages(link, image, 7, 3, 3);
      await eventually(() => first.acks.length === 6);
      expect(first.acks.map((a) => a.seq)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(first.failures).toEqual([]);
      expect(second.acks).toEqual([]);
      expect(delivered.rejects).toEqual([]);
    } finally {
      await link.close();
      await listener.close();
    }
  }, 20_000);

  it('a second transmitter the door lets in still gets nothing through the PAIR, and the first link keeps ' +
    'working; once the first is gone, the next link gets in', async () => {
    const section = testDoor('zeromq-pair');
    // Room for two connections in this section: only PAIR itself stands in the second one's way.
    section.doorkeeper.closeSection();
    section.doorkeeper.openSection('zeromq-pair', section.credential, 2);
    const delivered: Delivered = { frames: [], rejects: [] };
    const listener = await listen(section, delivered);
    const first: LinkSeen = { acks: [], failures: [] };
    const second: LinkSeen = { acks: [], failures: [] };
    const link = await zeromqPairTransport.connect(linkOptions(listener.port, section, first));
    let intruder: TransmitterLink | undefined;
    try {
      const image = randomBytes(1024);
      sendImages(link, image, 7, 0, 2);
      await eventually(() => first.acks.length === 2);
      // Its handshake completes (the door admits it), so it is PAIR alone that gives it nothing.
      intruder = await zeromqPairTransport.connect(linkOptions(listener.port, section, second));
      // Its images carry seqs the first link never sends.
      sendImages(intruder, image, 7, 100, 3);
      sendImages(link, image, 7, 2, 2);
      await eventually(() => first.acks.length === 4);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(delivered.frames.map((f) => f.seq)).toEqual([0, 1, 2, 3]);
      expect(second.acks).toEqual([]);
      expect(delivered.rejects).toEqual([]);
      expect(first.failures).toEqual([]);
      expect(first.acks.map((a) => a.seq)).toEqual([0, 1, 2, 3]);
    } finally {
      await intruder?.close();
      await link.close();
    }
    try {
      // The next section's link, once the first is gone: the PAIR takes a peer again.
      await section.reopen(listener, 8);
      const next: LinkSeen = { acks: [], failures: [] };
      const nextLink = await zeromqPairTransport.connect(linkOptions(listener.port, section, next));
      try {
        sendImages(nextLink, randomBytes(1024), 8, 0, 2);
        await eventually(() => next.acks.length === 2);
        expect(next.acks.map((a) => [a.sectionId, a.seq])).toEqual([
          [8, 0],
          [8, 1],
        ]);
      } finally {
        await nextLink.close();
      }
    } finally {
      await listener.close();
    }
  }, 90_000);

  it('wakes the receive loop for the first images of every link with ZAP on: 50 fresh listeners, each sent three ' +
    '533 KiB images at once after the handshake, all delivered', async () => {
    const cycles = 50;
    const image = randomBytes(LARGE_IMAGE_BYTES);
    const stuck: string[] = [];
    for (let cycle = 0; cycle < cycles && stuck.length < 3; cycle++) {
      const section = testDoor('zeromq-pair');
      const delivered: Delivered = { frames: [], rejects: [] };
      const listener = await listen(section, delivered);
      const seen: LinkSeen = { acks: [], failures: [] };
      const link = await zeromqPairTransport.connect(linkOptions(listener.port, section, seen));
      try {
        sendImages(link, image, 7, 0, 3);
        await eventually(() => seen.acks.length === 3, 2000).catch(() => {
          stuck.push(`cycle ${cycle}: ${delivered.frames.length} of 3 delivered, ${seen.acks.length} acked`);
        });
      } finally {
        await link.close();
        await listener.close();
      }
    }
    expect(stuck).toEqual([]);
  }, 120_000);
});
