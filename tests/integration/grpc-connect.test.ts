import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import { fromBinary } from '@bufbuild/protobuf';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import { sectionCredential, type SectionCredential } from '../../services/core/wire/auth.js';
import { AckSchema } from '../../services/transports/gen/transfer_pb.js';
import { grpcConnectTransport } from '../../services/transports/grpc-connect/transport.js';
import { ACK_MESSAGE_MAX_BYTES } from '../../services/transports/kit/connect-rpc.js';
import { receiveWindowBytes } from '../../services/transports/kit/http2-windows.js';
import { eventually, stampedHeader, TEST_AUTH_TOKEN, testDoor, testLog, transferThrough } from '../helpers/harness.js';
import { frameMessage, openListener, rawSession, rawTransfer, type Closers } from '../helpers/raw-grpc.js';

// Only what is PARTICULAR to grpc-connect. The contract every transport shares is tested for it by
// transports.test.ts, and grpc-js on the other end by grpc-interop.test.ts. Here: the door (the
// bearer credential, checked before any message is read), and the three traps of Connect for Node
// on node:http2 that the transport undoes, each by its mechanism: no compression either way
// whatever the peer offers, the transmitter's receive windows that cover WINDOW acks in flight (the
// receiver's, as grpc's, in grpc-windows.test.ts), and session memory for an image over Node's 10 MB default.
// And that a call keeps no image it has delivered.

const MIB = 1024 * 1024;
const closers: Closers = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A transmitter link through grpc-connect to `port`, closed after the test. */
async function openLink(port: number, credential: SectionCredential, window = 1, maxImageBytes = MIB) {
  const acks: number[] = [];
  const failures: Error[] = [];
  const link = await grpcConnectTransport.connect({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port,
    url: undefined,
    maxImageBytes,
    log: testLog,
    connectTimeoutMs: 5000,
    imageBytes: 1000,
    window,
    credential,
    onAck: (ack) => acks.push(ack.seq),
    onFailure: (err) => failures.push(err),
  });
  closers.push(() => link.close());
  return { link, acks, failures };
}

describe('grpc-connect transport', () => {
  it('refuses a call with no credential or the wrong one (UNAUTHENTICATED) before reading a message, delivering ' +
    'nothing; a link with the wrong credential fails clearly', async () => {
    const section = testDoor('grpc-connect');
    const { listener, delivered, rejects } = await openListener(grpcConnectTransport, section, closers);
    const image = randomBytes(1000);
    const body = frameMessage(stampedHeader(image, 0), image);
    for (const authorization of [undefined, `Bearer ${sectionCredential(TEST_AUTH_TOKEN, 8).text}`, 'Bearer x']) {
      const session = await rawSession(listener.port, closers);
      const outcome = await rawTransfer(session, authorization === undefined ? {} : { authorization }, body);
      // Trailers-only: the refusal is the response's only headers, none sent before the door decided.
      expect(outcome.headers['grpc-status'], authorization).toBe('16'); // UNAUTHENTICATED
      expect(decodeURIComponent(String(outcome.trailers['grpc-message']))).toMatch(
        /does not belong to the open section/,
      );
      expect(outcome.messages).toEqual([]);
    }
    expect(section.refusals).toHaveLength(3);
    expect(section.refusals[0]).toMatch(
      /^grpc-connect from 127\.0\.0\.1:\d+: connection refused: presented no credential$/,
    );

    const wrong = await openLink(listener.port, sectionCredential(TEST_AUTH_TOKEN, 9));
    wrong.link.send(stampedHeader(image, 1), image);
    await eventually(() => wrong.failures.length > 0);
    expect(wrong.failures).toHaveLength(1);
    expect(wrong.failures[0]).toMatchObject({
      code: ErrorCode.transport,
      message: expect.stringMatching(
        new RegExp(
          /^gRPC \(Connect\) stream to 127\.0\.0\.1:\d+: failed: \[unauthenticated\] this call does not /.source +
            /belong to the open section$/.source,
        ),
      ),
    });
    expect(delivered).toEqual([]);
    expect(wrong.acks).toEqual([]);
    expect(rejects).toEqual([]);
  }, 20_000);

  it('never compresses: a client offering gzip gets identity acks, and the transmitter neither offers nor sends ' +
    'compression', async () => {
    const section = testDoor('grpc-connect');
    const { listener, delivered } = await openListener(grpcConnectTransport, section, closers);
    // Zeros: gzip would shrink them to almost nothing, so a compressed frame could not pass unnoticed.
    const image = Buffer.alloc(100_000);
    const session = await rawSession(listener.port, closers);
    const outcome = await rawTransfer(
      session,
      {
        authorization: `Bearer ${section.credential.text}`,
        'grpc-accept-encoding': 'gzip, br',
        'grpc-encoding': 'identity',
      },
      frameMessage(stampedHeader(image, 0), image),
    );
    expect(outcome.trailers['grpc-status']).toBe('0');
    expect(outcome.headers['grpc-encoding'] ?? 'identity').toBe('identity');
    expect(outcome.messages.map((m) => m.compressed)).toEqual([0]);
    expect(fromBinary(AckSchema, outcome.messages[0]!.bytes)).toMatchObject({ sectionId: 7, seq: 0, status: 0 });
    expect(delivered).toHaveLength(1);

    // The transmitter side, seen from a bare HTTP/2 server: what it asks for and what it sends.
    const seen: { headers?: http2.IncomingHttpHeaders; flags: number[] } = { flags: [] };
    const server = http2.createServer();
    server.on('stream', (stream, headers) => {
      seen.headers = headers;
      stream.on('data', (chunk: Buffer) => seen.flags.push(chunk[0]!));
      stream.on('error', () => undefined);
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { link } = await openLink((server.address() as AddressInfo).port, section.credential);
    link.send(stampedHeader(image, 1), image);
    await eventually(() => seen.flags.length > 0);
    expect(seen.headers?.['grpc-accept-encoding'] ?? '').not.toMatch(/gzip|br/);
    expect(seen.headers?.['grpc-encoding'] ?? 'identity').toBe('identity');
    expect(seen.flags[0]).toBe(0);
    await link.close();
  }, 20_000);

  it("opens the transmitter's stream and connection windows to WINDOW acks in flight", async () => {
    const window = 8192; // 8192 acks of up to 23 bytes each: more than HTTP/2's 64 KiB default
    const received: { settings?: http2.Settings; windowBytes?: number } = {};
    const server = http2.createServer();
    server.on('stream', (stream) => {
      received.settings = stream.session?.remoteSettings;
      received.windowBytes = stream.session?.state.remoteWindowSize;
      stream.on('error', () => undefined);
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { link } = await openLink(
      (server.address() as AddressInfo).port,
      testDoor('grpc-connect').credential,
      window,
    );
    const image = randomBytes(10);
    link.send(stampedHeader(image, 0), image);
    await eventually(() => received.settings !== undefined);
    const expectedBytes = receiveWindowBytes(window, ACK_MESSAGE_MAX_BYTES);
    expect(expectedBytes).toBeGreaterThan(65_535);
    expect(received.settings?.initialWindowSize).toBe(expectedBytes);
    expect(received.windowBytes).toBe(expectedBytes);
    await link.close();
  }, 20_000);

  it('keeps no image it has delivered while its call goes on', async () => {
    // A full collection on demand: what is still reachable then is held by someone.
    v8.setFlagsFromString('--expose-gc');
    const collectGarbage = vm.runInNewContext('gc') as () => void;
    const section = testDoor('grpc-connect');
    // Weak references only: each received image's memory (the message Connect decoded), as delivered.
    const held: WeakRef<ArrayBufferLike>[] = [];
    const { listener } = await openListener(grpcConnectTransport, section, closers, {
      onFrame: (frame) => held.push(new WeakRef((frame.payload as Buffer).buffer)),
    });
    const { link, acks, failures } = await openLink(listener.port, section.credential);
    const imageCount = 32;
    const image = randomBytes(64 * 1024);
    for (let seq = 0; seq < imageCount; seq++) {
      link.send(stampedHeader(image, seq), image);
      await eventually(() => acks.length > seq);
    }
    expect(held).toHaveLength(imageCount);
    // The call is still open (no close yet): a reference it keeps per image would show now.
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    const kept = held.filter((ref) => ref.deref() !== undefined).length;
    // The last message or two may still be in hand (the handler's, Connect's decoder); not the others.
    expect(kept).toBeLessThanOrEqual(2);
    expect(failures).toEqual([]);
  }, 20_000);

  it("carries a 16 MiB image, over node:http2's 10 MB default session memory, at WINDOW 2", async () => {
    const images = [randomBytes(16 * MIB), randomBytes(16 * MIB), randomBytes(16 * MIB)];
    const outcome = await transferThrough(grpcConnectTransport, images, { window: 2, maxImageBytes: 16 * MIB });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.received.map((r) => r.seq)).toEqual([0, 1, 2]);
    for (const r of outcome.received) expect(r.bytes.equals(images[r.seq]!)).toBe(true);
    expect(outcome.acks.map((a) => a.status)).toEqual(['accepted', 'accepted', 'accepted']);
  }, 60_000);
});
