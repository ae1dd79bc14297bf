import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { commandSeq, encodeFrameHeader } from '../../services/core/wire/frame.js';
import { imageChecksum } from '../../services/core/wire/checksum.js';
import { Doorkeeper } from '../../services/receiver/door.js';
import type { Transport } from '../../services/transports/contract.js';
import { grpcConnectTransport } from '../../services/transports/grpc-connect/transport.js';
import { grpcUnaryTransport } from '../../services/transports/grpc-unary/transport.js';
import { grpcTransport } from '../../services/transports/grpc/transport.js';
import { eventually, openPair, stampedHeader } from '../helpers/harness.js';

// COMMAND_RATE's lane on the gRPC transports that give it a stream (or call) of its own on the link's one connection:
// a command handed over right after a large image goes there, where HTTP/2 may interleave its DATA frames with the
// image's (whether it does is Node's scheduling: see the test); the same command sent through send() goes behind the
// image on the image stream, its ack after the image's, whatever the machine's load.

const MIB = 1024 * 1024;
/** Large enough that writing it takes many of HTTP/2's 16 KiB DATA frames, so a command has something to pass. */
const IMAGE_BYTES = 16 * MIB;
const COMMAND = randomBytes(64);

/** A command frame's header, stamped now. */
function commandHeader(index: number): Buffer {
  return encodeFrameHeader({
    sectionId: 7,
    seq: commandSeq('alone', index),
    sizeBytes: COMMAND.length,
    checksum: imageChecksum(COMMAND),
    sentAtNs: process.hrtime.bigint(),
  });
}

/** Where each call or connection the door admitted came from ("grpc from 127.0.0.1:5000"), from now on. */
function admittedFrom(): string[] {
  const froms: string[] = [];
  const door = Doorkeeper.prototype as unknown as { admit(...args: unknown[]): unknown };
  const admit = door.admit;
  vi.spyOn(door, 'admit').mockImplementation(function (this: unknown, ...args: unknown[]) {
    const pass = admit.apply(this, args);
    if (pass !== undefined) froms.push(String(args[2]));
    return pass;
  });
  return froms;
}

afterEach(() => {
  vi.restoreAllMocks();
});

/** Sends a large image and a command right after it (through sendCommand or send); returns the acks' seqs in order. */
async function ackOrder(transport: Transport, viaSendCommand: boolean): Promise<number[]> {
  const froms = admittedFrom();
  const pair = await openPair(transport, { window: 4, imageBytes: IMAGE_BYTES, commandLane: true });
  try {
    const image = randomBytes(IMAGE_BYTES);
    pair.link.send(stampedHeader(image, 0), image);
    if (viaSendCommand) {
      expect(pair.link.sendCommand).toBeDefined();
      pair.link.sendCommand?.(commandHeader(0), COMMAND);
    } else pair.link.send(commandHeader(0), COMMAND);
    await eventually(() => pair.seen.acks.length === 2 || pair.seen.failures.length > 0, 20_000);
    expect(pair.seen.failures).toEqual([]);
    expect(pair.seen.rejects).toEqual([]);
    expect(pair.seen.acks.every((ack) => ack.status === 'accepted')).toBe(true);
    // Every call the door admitted came on the one connection the link opened: the lane is on it, not beside it. A
    // stream transport opens its command stream at the first command: none without one.
    const streams =
      transport === grpcUnaryTransport || viaSendCommand ? (transport.traits.connectionsPerLink?.(4) ?? 1) : 1;
    expect(froms).toHaveLength(streams);
    expect(new Set(froms).size).toBe(1);
    return pair.seen.acks.map((ack) => ack.seq);
  } finally {
    await pair.close();
  }
}

describe.each([grpcTransport, grpcConnectTransport, grpcUnaryTransport])('command lane on $name', (transport) => {
  it('sends a command handed over right after a 16 MiB image on a call of its own, same connection', async () => {
    // Which ack comes first is not asserted: it is up to Node's HTTP/2 (nghttp2) scheduling of the two streams. On
    // Node 20 (nghttp2 1.61) the command's came first; on Node 24 (nghttp2 1.70) the image's, every time.
    expect((await ackOrder(transport, true)).sort((a, b) => a - b)).toEqual([0, commandSeq('alone', 0)]);
  }, 90_000);

  it('the same command sent through send() waits behind the image: acknowledged after it', async () => {
    expect(await ackOrder(transport, false)).toEqual([0, commandSeq('alone', 0)]);
  }, 90_000);

  it('a link connected without the lane has no sendCommand: commands go through send()', async () => {
    const pair = await openPair(transport, { window: 4 });
    try {
      expect(pair.link.sendCommand).toBeUndefined();
    } finally {
      await pair.close();
    }
  });
});

describe('command lane on grpc-unary', () => {
  it('commands beside a full WINDOW of image calls are neither refused nor held behind them, past the most open ' +
    'command calls', async () => {
    // WINDOW 1 and one image call open: a command call counted among the images' would be refused (RESOURCE_EXHAUSTED).
    const pair = await openPair(grpcUnaryTransport, { window: 1, imageBytes: IMAGE_BYTES, commandLane: true });
    try {
      const image = randomBytes(IMAGE_BYTES);
      pair.link.send(stampedHeader(image, 0), image);
      // More than the command calls a connection may have open at once: the link holds the rest until some are
      // answered.
      const count = 40;
      for (let index = 0; index < count; index++) pair.link.sendCommand?.(commandHeader(index), COMMAND);
      await eventually(() => pair.seen.acks.length === count + 1 || pair.seen.failures.length > 0, 20_000);
      expect(pair.seen.failures).toEqual([]);
      expect(pair.seen.rejects).toEqual([]);
      expect(pair.section.refusals).toEqual([]);
      expect(new Set(pair.seen.acks.map((ack) => ack.seq)).size).toBe(count + 1);
    } finally {
      await pair.close();
    }
  }, 90_000);

  it('drops a call marked a command that carries an image, so no image passes the ones before it', async () => {
    const pair = await openPair(grpcUnaryTransport, { window: 4, commandLane: true });
    try {
      const image = randomBytes(1024);
      pair.link.sendCommand?.(stampedHeader(image, 3), image);
      pair.link.sendCommand?.(commandHeader(0), COMMAND);
      await eventually(() => pair.seen.acks.length === 1 && pair.seen.rejects.length === 1);
      expect(pair.seen.acks.map((ack) => ack.seq)).toEqual([commandSeq('alone', 0)]);
      expect(pair.seen.rejects).toEqual([expect.stringMatching(/marked a command's carries an image/)]);
      expect(pair.seen.failures).toEqual([]);
    } finally {
      await pair.close();
    }
  }, 90_000);
});
