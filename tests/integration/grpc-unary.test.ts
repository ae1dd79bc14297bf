import { randomBytes } from 'node:crypto';
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { sectionCredential } from '../../services/core/wire/auth.js';
import { ErrorCode } from '../../services/core/errors.js';
import { FRAME_HEADER_BYTES, type Ack } from '../../services/core/wire/frame.js';
import { nsToMs } from '../../services/core/model/stats.js';
import type {
  Door,
  ReceivedFrame,
  ReceiverListener,
  TransmitterLink,
  TransmitterOptions,
} from '../../services/transports/contract.js';
import { grpcUnaryTransport } from '../../services/transports/grpc-unary/transport.js';
import { loadProtoMethod, type AckMessage, type FrameMessage } from '../../services/transports/kit/grpc.js';
import {
  eventually,
  openPair,
  stampedHeader,
  TEST_AUTH_TOKEN,
  testDoor,
  testLog,
  type TestDoor,
} from '../helpers/harness.js';
import { grpcPartial } from '../helpers/hostile-clients.js';

// Only what is PARTICULAR to gRPC unary. The contract every transport shares (delivery of every
// size in order, handles after close, connect() timeout, bad magic and oversize headers, a
// delivery that throws, a receiver that goes away, connecting before the receiver listens) is
// tested for it too by the shared suite in transports.test.ts. Here: the per-call credential check
// and the per-connection door (one pass for all of a link's calls, WINDOW calls open at once on
// one connection, never more), grpc-js's message limits on each side, the door's drop, and a call
// that stalls mid-message, and the arrival stamp of a call that waits for an earlier one.

const MIB = 1024 * 1024;
const PUT_PATH = '/itb.ImageUnary/Put';

/** What a listener opened by hand saw, and the door's admissions (with the address each came from). */
interface Seen {
  delivered: ReceivedFrame[];
  rejects: string[];
  admitted: string[];
}

/** A grpc-unary listener on a free port behind `section`'s door, which records every admission. */
async function openListener(
  section: TestDoor,
  options: { window?: number; maxImageBytes?: number; onDeliver?: (frame: ReceivedFrame) => void } = {},
): Promise<{ listener: ReceiverListener; seen: Seen }> {
  const seen: Seen = { delivered: [], rejects: [], admitted: [] };
  const door: Door = {
    admit(presented, from, drop) {
      const pass = section.door.admit(presented, from, drop);
      if (pass) seen.admitted.push(from);
      return pass;
    },
    refuse: (from, reason) => section.door.refuse(from, reason),
    sectionConnections: () => section.door.sectionConnections(),
  };
  const listener = await grpcUnaryTransport.listen({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port: 0,
    url: undefined,
    maxImageBytes: options.maxImageBytes ?? 64 * MIB,
    log: testLog,
    door,
    idleTimeoutMs: section.idleTimeoutMs,
    deliver(frame) {
      seen.delivered.push(frame);
      options.onDeliver?.(frame);
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' };
    },
    onReject: (reason) => seen.rejects.push(reason),
  });
  await section.prepare(listener, options.window ?? 64);
  return { listener, seen };
}

/** A link to `port` recording its acks and failures. */
async function openLink(
  port: number,
  credentialText: TransmitterOptions['credential'],
  window: number,
  maxImageBytes = 64 * MIB,
): Promise<{ link: TransmitterLink; acks: Ack[]; failures: Error[] }> {
  const acks: Ack[] = [];
  const failures: Error[] = [];
  const link = await grpcUnaryTransport.connect({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port,
    url: undefined,
    maxImageBytes,
    log: testLog,
    connectTimeoutMs: 5000,
    imageBytes: MIB,
    window,
    credential: credentialText,
    onAck: (ack) => acks.push(ack),
    onFailure: (err) => failures.push(err),
  });
  return { link, acks, failures };
}

/** One Put on a channel of its own (or on `client`), presenting `credential` as a bearer token, or nothing. */
function rawPut(
  client: grpc.Client,
  credential: string | undefined,
  image: Buffer,
  seq: number,
): Promise<{ code: grpc.status; details: string; ack?: AckMessage }> {
  const { method } = loadProtoMethod<FrameMessage, AckMessage>('itb.ImageUnary', 'Put');
  const metadata = new grpc.Metadata();
  if (credential !== undefined) metadata.set('authorization', `Bearer ${credential}`);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      { header: stampedHeader(image, seq), payload: image },
      metadata,
      (err, ack) => {
        resolve(err ? { code: err.code, details: err.details } : { code: grpc.status.OK, details: 'OK', ack });
      },
    );
  });
}

/** A Put call's whole gRPC message (the 5-byte prefix, then the protobuf Frame) for `image` as `seq`. */
function putMessage(image: Buffer, seq: number): Buffer {
  const { method } = loadProtoMethod<FrameMessage, AckMessage>('itb.ImageUnary', 'Put');
  const body = method.requestSerialize({ header: stampedHeader(image, seq), payload: image });
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

/** Opens a Put call on `session` presenting `credential`; its answer is read and dropped. */
function openPut(session: http2.ClientHttp2Session, credential: string): http2.ClientHttp2Stream {
  const stream = session.request(
    {
      ':method': 'POST',
      ':path': PUT_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
      authorization: `Bearer ${credential}`,
    },
    { endStream: false },
  );
  stream.on('error', () => undefined);
  stream.resume();
  return stream;
}

describe('grpc-unary transport', () => {
  it('refuses a call with no credential or the wrong one (UNAUTHENTICATED) before reading it, delivering nothing; ' +
    'an admitted connection must present its credential on every call', async () => {
    const section = testDoor('grpc-unary');
    const { listener, seen } = await openListener(section);
    const image = randomBytes(1000);
    const clients: grpc.Client[] = [];
    const client = (): grpc.Client => {
      const made = new grpc.Client(`127.0.0.1:${listener.port}`, grpc.credentials.createInsecure());
      clients.push(made);
      return made;
    };
    try {
      expect(await rawPut(client(), undefined, image, 0)).toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      expect(await rawPut(client(), sectionCredential(TEST_AUTH_TOKEN, 8).text, image, 1)).toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
      });
      expect(await rawPut(client(), 'not-a-credential', image, 2)).toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      expect(seen.delivered).toEqual([]);
      expect(seen.admitted).toEqual([]);
      expect(section.refusals).toHaveLength(3);
      expect(section.refusals[0]).toMatch(
        /^grpc-unary from 127\.0\.0\.1:\d+: connection refused: presented no credential$/,
      );
      expect(section.refusals[1]).toMatch(/credential is not the open section's$/);

      // Admitted on its first call; a later call on the same connection with another credential, or none, is refused.
      const admitted = client();
      expect(await rawPut(admitted, section.credential.text, image, 3)).toMatchObject({
        code: grpc.status.OK,
        ack: { seq: 3 },
      });
      expect(await rawPut(admitted, sectionCredential(TEST_AUTH_TOKEN, 8).text, image, 4)).toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
      });
      expect(await rawPut(admitted, undefined, image, 5)).toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      expect(await rawPut(admitted, section.credential.text, image, 6)).toMatchObject({
        code: grpc.status.OK,
        ack: { seq: 6 },
      });
      expect(seen.delivered.map((f) => f.header.seq)).toEqual([3, 6]);
      expect(seen.admitted).toHaveLength(1);
      expect(section.refusals.slice(3)).toEqual([
        expect.stringMatching(/call refused: its credential is not the one its connection was admitted with$/),
        expect.stringMatching(/call refused: its credential is not the one its connection was admitted with$/),
      ]);
      expect(seen.rejects).toEqual([]);
    } finally {
      for (const made of clients) made.close();
      await listener.close();
    }
  }, 10_000);

  it('a link whose credential is refused fails as refused ' +
    '(ITB_ERR_REFUSED) on its first call, nothing delivered', async () => {
    const section = testDoor('grpc-unary');
    const { listener, seen } = await openListener(section);
    const { link, acks, failures } = await openLink(listener.port, sectionCredential(TEST_AUTH_TOKEN, 9), 4);
    try {
      const image = randomBytes(2000);
      for (let seq = 0; seq < 4; seq++) link.send(stampedHeader(image, seq), image);
      await eventually(() => failures.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatchObject({ code: ErrorCode.refused, message: expect.stringMatching(/UNAUTHENTICATED/) });
      expect(acks).toEqual([]);
      expect(seen.delivered).toEqual([]);
    } finally {
      await link.close();
      await listener.close();
    }
  }, 10_000);

  it('window 16: one connection and one door pass carry all ' +
    '16 calls, open at once, delivered and acked in order', async () => {
    const section = testDoor('grpc-unary', 7, 10_000, 16);
    const { listener, seen } = await openListener(section, { window: 16 });
    const { link, acks, failures } = await openLink(listener.port, section.credential, 16);
    try {
      const images = Array.from({ length: 16 }, () => randomBytes(MIB));
      images.forEach((image, seq) => {
        link.send(stampedHeader(image, seq), image);
      });
      await eventually(() => acks.length === 16 || failures.length > 0);
      expect(failures).toEqual([]);
      expect(acks.map((a) => a.seq)).toEqual(images.map((_, seq) => seq));
      expect(seen.delivered.map((f) => f.header.seq)).toEqual(images.map((_, seq) => seq));
      expect(seen.admitted).toHaveLength(1); // the first call took the pass; the other 15 shared it
      expect(section.refusals).toEqual([]);
      expect(seen.rejects).toEqual([]);
    } finally {
      await link.close();
      await listener.close();
    }
  }, 10_000);

  it("refuses calls over the section's WINDOW on one connection before reading them (RESOURCE_EXHAUSTED): 16 sent " +
    'at once are all open together', async () => {
    // The receiver's section allows 15; the link sends 16 large images in one go: the 16th call's
    // headers arrive while the other 15 are still open (each needs many flow-control round trips).
    const section = testDoor('grpc-unary', 7, 10_000, 16);
    const { listener, seen } = await openListener(section, { window: 15 });
    const { link, failures } = await openLink(listener.port, section.credential, 16);
    try {
      const image = randomBytes(MIB);
      for (let seq = 0; seq < 16; seq++) link.send(stampedHeader(image, seq), image);
      await eventually(() => failures.length > 0);
      expect(failures[0]).toMatchObject({
        code: ErrorCode.transport,
        message: expect.stringMatching(/RESOURCE_EXHAUSTED: more than 15 calls open at once/),
      });
      expect(seen.admitted).toHaveLength(1);
      const peer = /from (\S+)$/.exec(seen.admitted[0]!)?.[1];
      expect(section.refusals).toEqual([
        `grpc-unary from ${peer}: call refused: the connection already has 15 calls open (the section's WINDOW)`,
      ]);
    } finally {
      await link.close();
      await listener.close();
    }
  }, 10_000);

  it("over the receiver's MAX_IMAGE_SIZE: grpc-js refuses the call (RESOURCE_EXHAUSTED), the link fails, the " +
    'receiver reports it, nothing delivered; the listener serves the next section', async () => {
    const pair = await openPair(grpcUnaryTransport, { receiverMaxImageBytes: MIB, transmitterMaxImageBytes: 4 * MIB });
    try {
      const image = randomBytes(2 * MIB);
      pair.link.send(stampedHeader(image, 0), image);
      await eventually(() => pair.seen.rejects.length > 0 && pair.seen.failures.length > 0);
      expect(pair.seen.failures).toHaveLength(1);
      expect(pair.seen.failures[0]).toMatchObject({
        code: ErrorCode.transport,
        message: expect.stringMatching(/RESOURCE_EXHAUSTED: Received message larger than max/),
      });
      expect(pair.seen.rejects).toHaveLength(1);
      expect(pair.seen.rejects[0]).toMatch(
        new RegExp(
          `^grpc-unary from 127\\.0\\.0\\.1:\\d+: call ended before its image was answered: grpc-js refused the ` +
            `message \\(over the ${MIB + FRAME_HEADER_BYTES + 16}-byte limit`,
        ),
      );
      expect(pair.seen.delivered).toEqual([]);
      expect(pair.seen.acks).toEqual([]);
    } finally {
      await pair.link.close();
    }
    await pair.section.reopen(pair.listener, 8);
    const next = await openLink(pair.listener.port, pair.section.credential, 4, MIB);
    try {
      const image = randomBytes(MIB); // exactly the receiver's MAX_IMAGE_SIZE
      next.link.send(stampedHeader(image, 1, { sectionId: 8 }), image);
      await eventually(() => next.acks.length === 1);
      expect(next.acks).toEqual([{ sectionId: 8, seq: 1, status: 'accepted' }]);
      expect(next.failures).toEqual([]);
    } finally {
      await next.link.close();
      await pair.listener.close();
    }
  }, 10_000);

  it("over the transmitter's own MAX_IMAGE_SIZE: the call fails at once with RESOURCE_EXHAUSTED and so does the " +
    'link, nothing sent', async () => {
    const pair = await openPair(grpcUnaryTransport, { transmitterMaxImageBytes: MIB, receiverMaxImageBytes: 4 * MIB });
    try {
      const image = randomBytes(2 * MIB);
      expect(pair.link.send(stampedHeader(image, 0), image)).toBeUndefined();
      await eventually(() => pair.seen.failures.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(pair.seen.failures).toHaveLength(1);
      expect(pair.seen.failures[0]).toMatchObject({
        code: ErrorCode.transport,
        message: expect.stringMatching(/RESOURCE_EXHAUSTED: Attempted to send message with a size larger than/),
      });
      expect(pair.seen.delivered).toEqual([]);
      expect(pair.seen.acks).toEqual([]);
    } finally {
      await pair.close();
    }
  }, 10_000);

  it('the door dropping the link (its section ended) ends every call of its connection with UNAVAILABLE and closes ' +
    'it: one failure, no ack', async () => {
    const section = testDoor('grpc-unary', 7, 10_000, 8);
    // The section ends while the first image is being delivered, with the other 7 calls open.
    const { listener, seen } = await openListener(section, {
      window: 8,
      onDeliver: () => section.doorkeeper.closeSection(),
    });
    const { link, acks, failures } = await openLink(listener.port, section.credential, 8);
    try {
      const image = randomBytes(MIB);
      for (let seq = 0; seq < 8; seq++) link.send(stampedHeader(image, seq), image);
      await eventually(() => failures.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatchObject({
        code: ErrorCode.transport,
        message: expect.stringMatching(/UNAVAILABLE: the section ended/),
      });
      expect(acks).toEqual([]);
      expect(seen.delivered.map((f) => f.header.seq)).toEqual([0]);
      expect(seen.rejects).toEqual([]);
    } finally {
      await link.close();
      await listener.close();
    }
  }, 10_000);

  it('a call that waits for an earlier one is stamped ' +
    'when its message was in hand, not when its turn came', async () => {
    // Call 0 opens first and is held one byte short of whole; call 1 comes whole meanwhile, and is
    // handed over only once call 0 is (images arrive in order). Its stamp must be its receive time.
    // Long enough that "a fraction of the hold" leaves a loaded machine room (100 ms was met idle only).
    const HOLD_MS = 1000;
    const section = testDoor('grpc-unary', 7, 10_000, 2);
    const handedOverNs = new Map<number, bigint>();
    const { listener, seen } = await openListener(section, {
      window: 2,
      onDeliver: (frame) => handedOverNs.set(frame.header.seq, process.hrtime.bigint()),
    });
    const session = http2.connect(`http://127.0.0.1:${listener.port}`);
    session.on('error', () => undefined);
    try {
      const image = randomBytes(1000);
      const first = putMessage(image, 0);
      const waiting = openPut(session, section.credential.text);
      waiting.write(first.subarray(0, first.length - 1));
      const later = openPut(session, section.credential.text);
      later.end(putMessage(image, 1));
      await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
      expect(seen.delivered).toEqual([]); // call 1 is whole, and held for call 0
      const firstWholeNs = process.hrtime.bigint();
      waiting.end(first.subarray(first.length - 1));
      await eventually(() => seen.delivered.length === 2);

      const [delivered0, delivered1] = seen.delivered;
      expect([delivered0?.header.seq, delivered1?.header.seq]).toEqual([0, 1]);
      // The hold happened: call 1 was handed over after call 0 was whole...
      expect(handedOverNs.get(1)! > firstWholeNs).toBe(true);
      // ...yet its stamp is from before, within a fraction of the hold of when it was sent.
      expect(delivered1!.arrivalNs < firstWholeNs).toBe(true);
      expect(nsToMs(delivered1!.arrivalNs - delivered1!.header.sentAtNs)).toBeLessThan(HOLD_MS / 3);
      expect(delivered0!.arrivalNs >= firstWholeNs).toBe(true);
      expect(seen.rejects).toEqual([]);
    } finally {
      session.destroy();
      await listener.close();
    }
  }, 10_000);

  it('a call that stalls mid-message is ended after idleTimeoutMs; one without a credential is refused before its ' +
    'payload is read', async () => {
    const section = testDoor('grpc-unary', 7, 1500);
    const { listener, seen } = await openListener(section, { maxImageBytes: 16 * MIB });
    const [stalled, unproven] = await Promise.all([
      grpcPartial({
        port: listener.port,
        path: PUT_PATH,
        credential: section.credential.text,
        announcedBytes: 8 * MIB,
        sendBytes: MIB,
      }),
      grpcPartial({ port: listener.port, path: PUT_PATH, announcedBytes: 8 * MIB, sendBytes: MIB }),
    ]);
    try {
      expect(unproven.admitted()).toBe(false);
      expect(unproven.grpcStatus()).toBe(grpc.status.UNAUTHENTICATED);
      expect(stalled.admitted()).toBe(true);
      const startedMs = Date.now();
      expect(
        await Promise.race([stalled.closed, new Promise<false>((resolve) => setTimeout(() => resolve(false), 4000))]),
      ).toBe(true);
      expect(Date.now() - startedMs).toBeLessThan(4000);
      expect(stalled.grpcStatus()).toBe(grpc.status.DEADLINE_EXCEEDED);
      expect(section.refusals).toHaveLength(2);
      expect(section.refusals).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/connection refused: presented no credential$/),
          expect.stringMatching(/no whole message for 1500 ms \(IMAGE_TIMEOUT_MS\): call ended$/),
        ]),
      );
      expect(seen.delivered).toEqual([]);
    } finally {
      stalled.close();
      unproven.close();
      await listener.close();
    }
  }, 10_000);
});
