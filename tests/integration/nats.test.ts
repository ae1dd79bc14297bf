import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { connect as natsConnect, headers as natsHeaders } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { sectionCredential } from '../../services/core/wire/auth.js';
import { ErrorCode } from '../../services/core/errors.js';
import { FRAME_HEADER_BYTES } from '../../services/core/wire/frame.js';
import type { ReceivedFrame } from '../../services/transports/contract.js';
import { sectionSubjects, startPrivateNats } from '../../services/transports/kit/nats.js';
import { natsTransport } from '../../services/transports/nats/transport.js';
import { brokerLinkOptions, listenThrough, privateBrokerForFile, type BrokerListening } from '../helpers/broker.js';
import { activeResources, leakedResources } from '../helpers/handles.js';
import { eventually, openPair, stampedHeader, TEST_AUTH_TOKEN, testDoor, type TestDoor } from '../helpers/harness.js';

// Only what is PARTICULAR to NATS. The contract every transport shares (delivery of every size, a
// 12 MB image included, handles after close, connect() timeout, bad headers, a delivery that
// throws, the server going away as one failure of the link) is tested for NATS too by the shared
// suite in transports.test.ts. Here: a section whose images are over the server's max_payload
// fails in connect() with the reason before anything is sent; only the open section's subject is
// read (another section's, and a closed section's, frames never arrive, and their links learn that
// nobody reads them); acks go only to the section's own inboxes; the server going away fails the
// listener too; a missing NATS_URL is named; and the private server leaves no config file behind.

const MIB = 1024 * 1024;

const nats = privateBrokerForFile(() => startPrivateNats());

/** A listener on `url` open for `section`, recording what it delivered and rejected. */
function listenFor(url: string, section: TestDoor, failures: string[] = []): Promise<BrokerListening> {
  return listenThrough(natsTransport, url, section, { failures });
}

/** A delivered frame's image bytes in one buffer. */
function bytesOf(frame: ReceivedFrame): Buffer {
  return Buffer.isBuffer(frame.payload) ? frame.payload : Buffer.concat(frame.payload);
}

describe('nats transport: NATS specifics', () => {
  it("fails connect() with the reason, before anything is sent, when an image is over the server's max_payload; " +
    'one at the limit goes through', async () => {
    const small = await startPrivateNats(MIB);
    const section = testDoor('nats');
    const { listener, delivered, rejects } = await listenFor(small.url, section);
    try {
      const before = activeResources();
      const seen = { acks: [] as number[], failures: [] as Error[] };
      const outcome = await natsTransport.connect(brokerLinkOptions(small.url, section.credential, MIB, seen)).then(
        () => new Error('connect() resolved'),
        (err: unknown) => err,
      );
      expect(outcome).toMatchObject({ code: ErrorCode.transport });
      const message = (outcome as Error).message;
      expect(message).toContain(`${MIB + FRAME_HEADER_BYTES}-byte NATS message`);
      expect(message).toContain(`max_payload of ${MIB} bytes`);
      expect(message).toContain('raise max_payload');
      expect(await leakedResources(before)).toEqual([]);

      // The largest image that fits, max_payload less the frame header, goes with its header
      // concatenated, and so does one for which the 81-byte header block is one byte too many;
      // one byte less, and it goes with its header apart.
      for (const [seq, imageBytes] of [
        [0, MIB - FRAME_HEADER_BYTES],
        [1, MIB - 80],
        [2, MIB - 81],
      ] as const) {
        const image = randomBytes(imageBytes);
        const link = await natsTransport.connect(brokerLinkOptions(small.url, section.credential, image.length, seen));
        try {
          link.send(stampedHeader(image, seq), image);
          await eventually(() => seen.acks.length === seq + 1 || seen.failures.length > 0);
        } finally {
          await link.close();
        }
        expect(delivered[seq] && bytesOf(delivered[seq]).equals(image)).toBe(true);
      }
      expect(seen.failures).toEqual([]);
      expect(delivered.map((f) => f.header.seq)).toEqual([0, 1, 2]);
      expect(rejects).toEqual([]);
    } finally {
      await listener.close();
      await small.close();
    }
  }, 10_000);

  it("names an image over NATS's 64 MB hard limit as one no server can carry", async () => {
    const section = testDoor('nats');
    const seen = { acks: [] as number[], failures: [] as Error[] };
    const outcome = await natsTransport
      .connect(brokerLinkOptions(nats.url, section.credential, 64 * MIB, seen))
      .catch((err: unknown) => err);
    expect(outcome).toMatchObject({ code: ErrorCode.transport, message: expect.stringContaining("NATS's hard limit") });
  }, 10_000);

  it("never delivers another section's frames, nor a closed " +
    "section's, and their links learn that nobody reads them", async () => {
    const pair = await openPair(natsTransport, { url: nats.url });
    const other = { acks: [] as number[], failures: [] as Error[] };
    const otherLink = await natsTransport.connect(
      brokerLinkOptions(nats.url, sectionCredential(TEST_AUTH_TOKEN, 8), 1000, other),
    );
    try {
      const image = randomBytes(1000);
      otherLink.send(stampedHeader(image, 0, { sectionId: 8 }), image);
      await eventually(() => other.failures.length > 0);
      expect(other.failures[0]).toMatchObject({
        code: ErrorCode.receiverUnreachable,
        message: expect.stringContaining('no receiver is reading this section'),
      });
      expect(other.acks).toEqual([]);

      // The open section's own link works meanwhile.
      pair.link.send(stampedHeader(image, 1), image);
      await eventually(() => pair.seen.acks.length === 1);

      // Section 7 ends and 9 opens: 7's link reaches nobody any more.
      await pair.section.reopen(pair.listener, 9);
      pair.link.send(stampedHeader(image, 2), image);
      await eventually(() => pair.seen.failures.length > 0);
      expect(pair.seen.failures[0]).toMatchObject({ code: ErrorCode.receiverUnreachable });
      expect(pair.seen.delivered.map((f) => [f.header.sectionId, f.header.seq])).toEqual([[7, 1]]);
      expect(pair.seen.acks.map((a) => a.seq)).toEqual([1]);
      expect(pair.seen.rejects).toEqual([]);
    } finally {
      await otherLink.close();
      await pair.close();
    }
  }, 10_000);

  it("rejects a frame whose reply subject is not the section's ack inbox (acking nothing there), or whose header " +
    'is malformed', async () => {
    const section = testDoor('nats');
    const { listener, delivered, rejects } = await listenFor(nats.url, section);
    const client = await natsConnect({ servers: nats.url, reconnect: false });
    try {
      const subjects = sectionSubjects(section.credential);
      const answered: number[] = [];
      client.subscribe('elsewhere', { callback: () => void answered.push(1) });
      const image = randomBytes(500);
      const frame = Buffer.concat([stampedHeader(image, 0), image]);
      client.publish(subjects.frames, frame, { reply: 'elsewhere' });
      client.publish(subjects.frames, frame);
      client.publish(subjects.frames, Buffer.alloc(10), { reply: `${subjects.acks}.x` });
      const badHeader = natsHeaders();
      badHeader.set('Itb-Frame', 'bm90IGEgaGVhZGVy');
      client.publish(subjects.frames, image, { reply: `${subjects.acks}.x`, headers: badHeader });
      await eventually(() => rejects.length === 4);
      await client.flush();
      expect(rejects[0]).toMatch(/^nats: message without this section's ack inbox as its reply subject/);
      expect(rejects[1]).toMatch(/^nats: message without this section's ack inbox as its reply subject/);
      expect(rejects[2]).toMatch(/^nats: message of 10 bytes, shorter than a 40-byte frame header/);
      expect(rejects[3]).toMatch(/^nats: message whose Itb-Frame header is not a 40-byte frame header/);
      expect(delivered).toEqual([]);
      expect(answered).toEqual([]);
    } finally {
      await client.close();
      await listener.close();
    }
  }, 10_000);

  it('fails the listener once, with the reason, when the NATS server goes away', async () => {
    const own = await startPrivateNats();
    const failures: string[] = [];
    const { listener } = await listenFor(own.url, testDoor('nats'), failures);
    try {
      await own.close();
      await eventually(() => failures.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(failures).toHaveLength(1);
      expect(failures[0]).toContain(`lost its connection to NATS at ${own.url}`);
    } finally {
      await listener.close();
      await own.close();
    }
  }, 10_000);

  it('fails at once, naming NATS_URL, when it is not set', async () => {
    const section = testDoor('nats');
    const seen = { acks: [] as number[], failures: [] as Error[] };
    await expect(
      natsTransport.connect({ ...brokerLinkOptions('', section.credential, 1000, seen), url: undefined }),
    ).rejects.toMatchObject({ code: ErrorCode.config, message: expect.stringContaining('NATS_URL is not set') });
  });

  it('starts its private server from a config file in a temporary directory and removes it at close', async () => {
    const own = await startPrivateNats();
    expect(existsSync(own.configPath)).toBe(true);
    await own.close();
    expect(existsSync(own.configPath)).toBe(false);
    expect(existsSync(path.dirname(own.configPath))).toBe(false);
    await own.close(); // safe twice
  }, 10_000);
});
