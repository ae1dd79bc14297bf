import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import { encodeAck, type Ack } from '../../services/core/wire/frame.js';
import { freePort } from '../../services/shared/net.js';
import type { TransmitterLink, TransmitterOptions } from '../../services/transports/contract.js';
import { websocketPushTransport } from '../../services/transports/websocket-push/transport.js';
import { activeResources, leakedResources } from '../helpers/handles.js';
import { eventually, stampedHeader, testDoor, testLog } from '../helpers/harness.js';
import { slowHeaders, type HostileConnection } from '../helpers/hostile-clients.js';
import { MAX_CONNECTIONS_PER_LISTENER } from '../../services/transports/kit/door.js';

// Only what is PARTICULAR to websocket-push: the roles are swapped, so the transmitter runs the
// server. The contract every transport shares is tested for it too by transports.test.ts. Here,
// with a raw socket as the peer where bytes matter: the transmitter's server refuses a request
// without the section's credential (401, no upgrade, no image), its images go out unmasked, and
// the receiver's dialing side asks its door and stops dialing when its section closes.

const MIB = 1024 * 1024;
const TIMEOUT_MS = 10_000;
/** Connections that never finish their request, sent at the push server: well over what it keeps. */
const FLOOD_CONNECTIONS = 40;

/** What the transmitter's link reported. */
interface Seen {
  acks: Ack[];
  failures: Error[];
}

function transmitterOptions(port: number, seen: Seen, overrides: Partial<TransmitterOptions> = {}): TransmitterOptions {
  return {
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port,
    url: undefined,
    maxImageBytes: MIB,
    log: testLog,
    connectTimeoutMs: 5000,
    imageBytes: MIB,
    window: 16,
    credential: testDoor(websocketPushTransport.name).credential,
    onAck: (ack) => seen.acks.push(ack),
    onFailure: (err) => seen.failures.push(err),
    ...overrides,
  };
}

/**
 * A raw TCP client that sent a WebSocket upgrade request: the answer's status, and every byte after the answer's head.
 */
interface RawClient {
  socket: net.Socket;
  status: number;
  /** Bytes received after the answer's head, growing as they arrive. */
  after: () => Buffer;
  closed: () => boolean;
}

/** Sends an upgrade request for `path` to `port` (retrying while nothing listens yet) and reads the answer's head. */
async function rawUpgrade(port: number, authorization: string | undefined, path = '/images'): Promise<RawClient> {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      return await rawUpgradeOnce(port, authorization, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ECONNREFUSED' || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

function rawUpgradeOnce(port: number, authorization: string | undefined, path: string): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let received = Buffer.alloc(0);
    let headBytes = -1;
    let closed = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no answer to the upgrade request within 3 s'));
    }, 3000);
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', () => (closed = true));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (headBytes >= 0) return;
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      headBytes = end + 4;
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received.subarray(0, end).toString('latin1'))?.[1] ?? 0);
      resolve({ socket, status, after: () => received.subarray(headBytes), closed: () => closed });
    });
    socket.once('connect', () => {
      const lines = [
        `GET ${path} HTTP/1.1`,
        `Host: 127.0.0.1:${port}`,
        'Upgrade: websocket',
        'Connection: Upgrade',
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
        'Sec-WebSocket-Version: 13',
        ...(authorization === undefined ? [] : [`Authorization: ${authorization}`]),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
  });
}

/** One WebSocket frame as RFC 6455 lays it out. */
interface WireFrame {
  fin: boolean;
  opcode: number;
  masked: boolean;
  payload: Buffer;
}

/** The complete frames at the start of `bytes`, read as they are on the wire (a masked payload is left masked). */
function wireFrames(bytes: Buffer): WireFrame[] {
  const frames: WireFrame[] = [];
  let at = 0;
  while (bytes.length - at >= 2) {
    const first = bytes[at]!;
    const second = bytes[at + 1]!;
    let lengthBytes = second & 0x7f;
    let cursor = at + 2;
    if (lengthBytes === 126) {
      if (bytes.length < cursor + 2) break;
      lengthBytes = bytes.readUInt16BE(cursor);
      cursor += 2;
    } else if (lengthBytes === 127) {
      if (bytes.length < cursor + 8) break;
      lengthBytes = Number(bytes.readBigUInt64BE(cursor));
      cursor += 8;
    }
    const masked = (second & 0x80) !== 0;
    if (masked) cursor += 4;
    if (bytes.length < cursor + lengthBytes) break;
    frames.push({
      fin: (first & 0x80) !== 0,
      opcode: first & 0x0f,
      masked,
      payload: bytes.subarray(cursor, cursor + lengthBytes),
    });
    at = cursor + lengthBytes;
  }
  return frames;
}

/** A client-to-server binary frame, masked as RFC 6455 requires of a client. */
function maskedBinaryFrame(payload: Buffer): Buffer {
  if (payload.length > 125) throw new Error('only short frames here');
  const key = randomBytes(4);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ key[i % 4]!));
  return Buffer.concat([Buffer.from([0x82, 0x80 | payload.length]), key, masked]);
}

describe('websocket-push transport', () => {
  it(
    'refuses an upgrade with no credential or a wrong one (401) or on another path (404): no upgrade, no image; ' +
      'names the last refusal when no receiver came, and leaves nothing open',
    async () => {
      const before = activeResources();
      const port = await freePort();
      const seen: Seen = { acks: [], failures: [] };
      const linking = websocketPushTransport.connect(transmitterOptions(port, seen, { connectTimeoutMs: 1500 })).then(
        (link) => link,
        (err: unknown) => err,
      );
      const wrongSection = testDoor(websocketPushTransport.name, 8).credential.text;
      const clients: RawClient[] = [];
      try {
        for (const authorization of [
          undefined,
          'Bearer not-a-credential',
          `Bearer ${wrongSection}`,
          'Basic dXNlcjpwYXNz',
        ]) {
          const client = await rawUpgrade(port, authorization);
          clients.push(client);
          expect(client.status).toBe(401);
          await eventually(() => client.closed(), 3000);
          // Nothing after the refusal's head: no upgrade, no frame.
          expect(client.after().length).toBe(0);
        }
        // The right credential on another path is not the link either.
        const elsewhere = await rawUpgrade(
          port,
          `Bearer ${testDoor(websocketPushTransport.name).credential.text}`,
          '/other',
        );
        clients.push(elsewhere);
        expect(elsewhere.status).toBe(404);
        await eventually(() => elsewhere.closed(), 3000);
        expect(elsewhere.after().length).toBe(0);
        const outcome = await linking;
        expect(outcome).toMatchObject({
          code: ErrorCode.timeout,
          message: expect.stringContaining(`127.0.0.1:${port}`),
        });
        expect((outcome as Error).message).toMatch(/last refused .*path \/other/);
        expect(seen.failures).toEqual([]);
      } finally {
        for (const client of clients) client.socket.destroy();
        const outcome = await linking;
        if (!(outcome instanceof Error)) await (outcome as TransmitterLink).close();
      }
      expect(await leakedResources(before)).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it(
    `takes the receiver's upgrade while ${FLOOD_CONNECTIONS} connections hold partial requests: at ` +
      `most ${MAX_CONNECTIONS_PER_LISTENER} of them are kept`,
    async () => {
      const port = await freePort();
      const seen: Seen = { acks: [], failures: [] };
      const options = transmitterOptions(port, seen);
      const linking = websocketPushTransport.connect(options);
      let link: TransmitterLink | undefined;
      const flood: (HostileConnection & { isClosed(): boolean })[] = [];
      try {
        // The first once the server listens, then the rest at once.
        for (;;) {
          const first = await slowHeaders(port, 'partial-line');
          if (first.admitted()) {
            flood.push(first);
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        flood.push(
          ...(await Promise.all(
            Array.from({ length: FLOOD_CONNECTIONS - 1 }, (_, i) =>
              slowHeaders(port, i % 2 === 0 ? 'silent' : 'byte-at-a-time'),
            ),
          )),
        );
        await eventually(() => flood.filter((c) => !c.isClosed()).length <= MAX_CONNECTIONS_PER_LISTENER);
        const client = await rawUpgrade(port, `Bearer ${options.credential.text}`);
        try {
          expect(client.status).toBe(101);
          link = await linking;
          expect(seen.failures).toEqual([]);
        } finally {
          client.socket.destroy();
        }
      } finally {
        for (const connection of flood) connection.close();
        await link?.close();
        await linking.catch(() => undefined);
      }
    },
    TIMEOUT_MS,
  );

  it(
    'pushes header and image as unmasked binary frames, byte for byte, and takes a masked ack back',
    async () => {
      const port = await freePort();
      const seen: Seen = { acks: [], failures: [] };
      const options = transmitterOptions(port, seen);
      const linking = websocketPushTransport.connect(options);
      const client = await rawUpgrade(port, `Bearer ${options.credential.text}`);
      let link: TransmitterLink | undefined;
      try {
        expect(client.status).toBe(101);
        link = await linking;
        // Over 64 KiB: the frame carries a 64-bit length, the image as it is.
        const image = randomBytes(200_000);
        const header = stampedHeader(image, 4);
        link.send(header, image);
        await eventually(() => wireFrames(client.after()).length >= 2);
        const [headerFrame, imageFrame] = wireFrames(client.after());
        for (const frame of [headerFrame!, imageFrame!]) {
          expect(frame).toMatchObject({ fin: true, opcode: 2, masked: false });
        }
        expect(headerFrame!.payload.equals(header)).toBe(true);
        expect(imageFrame!.payload.equals(image)).toBe(true);
        const ack: Ack = { sectionId: 7, seq: 4, status: 'accepted' };
        client.socket.write(maskedBinaryFrame(encodeAck(ack)));
        await eventually(() => seen.acks.length === 1);
        expect(seen.acks).toEqual([ack]);
        expect(seen.failures).toEqual([]);
      } finally {
        client.socket.destroy();
        await link?.close();
      }
    },
    TIMEOUT_MS,
  );

  it(
    'stops a receiver that is still dialing when its section closes: no connection comes, nothing is left open',
    async () => {
      const section = testDoor(websocketPushTransport.name);
      const before = activeResources();
      const listener = await websocketPushTransport.listen({
        host: '127.0.0.1',
        bindHost: '127.0.0.1',
        port: 0,
        url: undefined,
        maxImageBytes: MIB,
        log: testLog,
        door: section.door,
        idleTimeoutMs: section.idleTimeoutMs,
        deliver: (frame) => ({ sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' }),
        onReject() {},
      });
      try {
        expect(listener.port).toBeGreaterThan(0);
        // Nothing listens on the port: the receiver keeps dialing, refused every few tens of ms.
        await section.prepare(listener);
        await new Promise((resolve) => setTimeout(resolve, 200));
        await listener.closeSection?.();
        expect(await leakedResources(before)).toEqual([]);
        // A transmitter that starts now waits in vain: nobody dials it any more.
        const seen: Seen = { acks: [], failures: [] };
        const outcome = await websocketPushTransport
          .connect(transmitterOptions(listener.port, seen, { credential: section.credential, connectTimeoutMs: 600 }))
          .then(
            () => new Error('connect() resolved'),
            (err: unknown) => err,
          );
        expect(outcome).toMatchObject({
          code: ErrorCode.timeout,
          message: expect.stringContaining('nothing dialed in'),
        });
      } finally {
        await listener.close();
        await listener.close();
      }
      expect(await leakedResources(before)).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it(
    "asks the receiver's door: a connection it refuses is closed before any image, and the link reports it",
    async () => {
      const section = testDoor(websocketPushTransport.name);
      const delivered: number[] = [];
      const listener = await websocketPushTransport.listen({
        host: '127.0.0.1',
        bindHost: '127.0.0.1',
        port: 0,
        url: undefined,
        maxImageBytes: MIB,
        log: testLog,
        door: section.door,
        idleTimeoutMs: section.idleTimeoutMs,
        deliver: (frame) => {
          delivered.push(frame.header.seq);
          return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' };
        },
        onReject() {},
      });
      const seen: Seen = { acks: [], failures: [] };
      let link: TransmitterLink | undefined;
      try {
        // The listener dials with the section's credential, but the door no longer admits it.
        await section.prepare(listener);
        section.doorkeeper.closeSection();
        link = await websocketPushTransport.connect(
          transmitterOptions(listener.port, seen, { credential: section.credential }),
        );
        await eventually(() => seen.failures.length === 1);
        expect(seen.failures[0]).toMatchObject({ code: ErrorCode.transport });
        const image = randomBytes(100);
        link.send(stampedHeader(image, 0), image);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(delivered).toEqual([]);
        expect(seen.acks).toEqual([]);
        expect(section.refusals).toEqual([
          expect.stringMatching(/websocket-push to 127\.0\.0\.1:\d+: connection refused: no section is open/),
        ]);
      } finally {
        await link?.close();
        await listener.close();
      }
    },
    TIMEOUT_MS,
  );
});
