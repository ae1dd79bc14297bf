import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Ack } from '../../services/core/wire/frame.js';
import type { Transport } from '../../services/transports/contract.js';
import { grpcConnectTransport } from '../../services/transports/grpc-connect/transport.js';
import { grpcTransport } from '../../services/transports/grpc/transport.js';
import { eventually, stampedHeader, testDoor, testLog } from '../helpers/harness.js';

// grpc and grpc-connect are two libraries on one protocol, and the bench's two rows measure the
// same wire only if each side of one talks to the other's: a grpc-js client (the grpc transport's
// transmitter) streams to the Connect server (grpc-connect's receiver), and a Connect client
// streams to the grpc-js server, each with the door's credential in its metadata, images intact.

const MIB = 1024 * 1024;
/** The bundled asset's size: 533 KiB. */
const ASSET_BYTES = 545_792;

/**
 * Streams `images` from `sender`'s transmitter to `receiver`'s listener, WINDOW `window`; what arrived and came back.
 */
async function across(
  sender: Transport,
  receiver: Transport,
  images: readonly Buffer[],
  window: number,
  maxImageBytes: number,
): Promise<{ delivered: { seq: number; bytes: Buffer }[]; acks: Ack[]; rejects: string[]; failures: Error[] }> {
  const delivered: { seq: number; bytes: Buffer }[] = [];
  const acks: Ack[] = [];
  const rejects: string[] = [];
  const failures: Error[] = [];
  const section = testDoor(receiver.name, 7, 10_000, window);
  const listener = await receiver.listen({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port: 0,
    url: undefined,
    maxImageBytes,
    log: testLog,
    door: section.door,
    idleTimeoutMs: section.idleTimeoutMs,
    deliver(frame) {
      const bytes = Buffer.isBuffer(frame.payload) ? Buffer.from(frame.payload) : Buffer.concat(frame.payload);
      delivered.push({ seq: frame.header.seq, bytes });
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' };
    },
    onReject: (reason) => rejects.push(reason),
  });
  try {
    await section.prepare(listener, window);
    const link = await sender.connect({
      host: '127.0.0.1',
      bindHost: '127.0.0.1',
      port: listener.port,
      url: undefined,
      maxImageBytes,
      log: testLog,
      connectTimeoutMs: 5000,
      imageBytes: images[0]!.length,
      window,
      credential: section.credential,
      onAck: (ack) => acks.push(ack),
      onFailure: (err) => failures.push(err),
    });
    try {
      for (const [seq, image] of images.entries()) {
        await eventually(() => failures.length > 0 || seq - acks.length < window, 20_000);
        if (failures.length > 0) break;
        link.send(stampedHeader(image, seq), image);
      }
      await eventually(() => failures.length > 0 || acks.length === images.length, 30_000);
    } finally {
      await link.close();
    }
  } finally {
    await listener.close();
  }
  return { delivered, acks, rejects, failures };
}

describe('gRPC interoperability: grpc-js and Connect for Node', () => {
  for (const [sender, receiver] of [
    [grpcTransport, grpcConnectTransport],
    [grpcConnectTransport, grpcTransport],
  ] as const) {
    for (const { what, sizeBytes, count, window } of [
      { what: '533 KiB', sizeBytes: ASSET_BYTES, count: 16, window: 8 },
      { what: '16 MiB', sizeBytes: 16 * MIB, count: 3, window: 2 },
    ]) {
      it(`${sender.name}'s transmitter streams ${what} images to ${receiver.name}'s receiver, intact`, async () => {
        const images = Array.from({ length: count }, () => randomBytes(sizeBytes));
        const outcome = await across(sender, receiver, images, window, 16 * MIB);
        expect(outcome.failures).toEqual([]);
        expect(outcome.rejects).toEqual([]);
        expect(outcome.delivered.map((d) => d.seq)).toEqual(images.map((_, i) => i));
        for (const d of outcome.delivered) expect(d.bytes.equals(images[d.seq]!)).toBe(true);
        expect(outcome.acks.map((a) => [a.seq, a.status])).toEqual(images.map((_, i) => [i, 'accepted']));
      }, 60_000);
    }
  }
});
