import { once as onceEvent } from 'node:events';
import net from 'node:net';
import { encodeHello, HELLO_BYTES, helloCredentialText } from '../../core/wire/auth.js';
import type { PartHasher, PartsChecksum } from '../../core/wire/checksum.js';
import { ACK_BYTES, decodeAck, encodeAck, FRAME_HEADER_BYTES, type FrameHeader } from '../../core/wire/frame.js';
import { boundPort, hostPort } from '../../shared/net.js';
import { once } from '../../shared/once.js';
import { drainOrClose } from '../../shared/waits.js';
import type { DoorPass, ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions } from '../contract.js';
import { connectWithin } from './connect.js';
import { capConnections, closeWhenSilent } from './door.js';
import { frameGate, type FrameGate } from './gate.js';
import { LinkGuard } from './link-guard.js';
import { SendQueue } from './send-queue.js';

// The stream transports' one wire (tcp over a port, unix over a socket file): each frame is the
// 40-byte header (which carries the length) then the image bytes on one plain socket. The receiver
// keeps the socket's own chunks as the image's parts, so assembly is linear with no copy at all, and
// sums a large image's parts as they come (ReceiverOptions.partHasher), each while the kernel's copy
// of it is still in cache: when the read that completes an image returns, only that last part is
// left to hash, and the gate stamps the arrival before it asks for that. A link opens with a 40-byte
// hello carrying its section's credential; the receiver reads nothing else until the door admitted it.

/** Where a stream link goes: a port on a host (TCP), or a socket file on this host (Unix-domain). */
export type StreamTarget = { host: string; port: number } | { path: string };

/** One connect attempt, bounded by `timeoutMs`; rejects with the socket's own error. */
function connectSocket(target: StreamTarget, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect('path' in target ? { path: target.path } : { ...target, noDelay: true });
    const timer = setTimeout(() => socket.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const onError = (err: Error): void => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', onError);
      resolve(socket);
    });
  });
}

/** Splits a byte stream into fixed-size records (acks), keeping a partial one for the next chunk. */
function fixedRecordReader(recordBytes: number, onRecord: (record: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    let data: Buffer = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    while (data.length >= recordBytes) {
      onRecord(data.subarray(0, recordBytes));
      data = data.subarray(recordBytes);
    }
    pending = data;
  };
}

/** The transmitter's side of a stream transport: a hello, then header and image per frame; acks read back. */
export async function connectStream(
  options: TransmitterOptions,
  target: StreamTarget,
  label: string,
): Promise<TransmitterLink> {
  const where = 'path' in target ? target.path : hostPort(target.host, target.port);
  const socket = await connectWithin(
    `${label} ${where}`,
    options.connectTimeoutMs,
    (remainingMs) => connectSocket(target, remainingMs),
    (late) => late.destroy(),
  );
  const guard = new LinkGuard(options.onFailure, `${label} link to ${where}`);
  socket.write(encodeHello(options.credential));
  socket.on(
    'data',
    fixedRecordReader(ACK_BYTES, (record) => guard.ack(options.onAck, decodeAck(record))),
  );
  // Reported through 'close'.
  socket.on('error', (err) => options.log.debug({ err }, `${label} transmitter socket error`));
  socket.on('close', () =>
    guard.failWith('connection closed by the receiver (it closes a refused hello at once: its log says why)'),
  );
  const queue = new SendQueue(
    (header, payload) => {
      socket.cork();
      socket.write(header);
      const flushed = socket.write(payload);
      socket.uncork();
      return flushed ? undefined : drainOrClose(socket);
    },
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, async () => {
    socket.end();
    socket.destroySoon();
    if (!socket.destroyed) await onceEvent(socket, 'close');
  });
}

// Per-connection parser: the hello first (HELLO_BYTES, checked by `admit` before anything else is
// read); then, per frame, header bytes (copied, 40 of them), checked at once, and the payload as
// views of the socket's chunks, each summed as it comes (but the last, summed after the gate's stamp)
// when the connection has a hasher and the image's size is summed by parts.
function frameParser(
  socket: net.Socket,
  gate: FrameGate,
  admit: (hello: Buffer) => boolean,
  hasher: PartHasher | undefined,
): (chunk: Buffer) => void {
  let admitted = false;
  let headerParts: Buffer[] = [];
  let headerHave = 0;
  let header: FrameHeader | undefined;
  let payloadParts: Buffer[] = [];
  let payloadHave = 0;
  let summing = false;
  // The part that completed the image: hashed only when the gate asks, after its stamp.
  let lastPart: Buffer | undefined;
  const sumParts = (): PartsChecksum => {
    if (lastPart !== undefined) hasher!.update(lastPart);
    return hasher!.digest();
  };
  return (chunk) => {
    let data: Buffer = chunk;
    while (data.length > 0) {
      if (header === undefined) {
        const wanted = admitted ? FRAME_HEADER_BYTES : HELLO_BYTES;
        const take = Math.min(wanted - headerHave, data.length);
        headerParts.push(data.subarray(0, take));
        headerHave += take;
        data = data.subarray(take);
        if (headerHave < wanted) return;
        const record = headerParts.length === 1 ? headerParts[0]! : Buffer.concat(headerParts, wanted);
        headerParts = [];
        headerHave = 0;
        if (!admitted) {
          admitted = admit(record);
          if (!admitted) {
            socket.destroy();
            return;
          }
          continue;
        }
        header = gate.header(record);
        // A byte stream cannot resynchronise after a bad header: drop the connection.
        if (header === undefined) {
          socket.destroy();
          return;
        }
        summing = hasher?.start(header.sizeBytes) ?? false;
      }
      const take = Math.min(header.sizeBytes - payloadHave, data.length);
      const part = take > 0 ? data.subarray(0, take) : undefined;
      if (part !== undefined) payloadParts.push(part);
      payloadHave += take;
      data = data.subarray(take);
      if (payloadHave < header.sizeBytes) {
        if (summing && part !== undefined) hasher!.update(part);
        return;
      }
      lastPart = part;
      const ack = gate.take(header, payloadParts, summing ? sumParts : undefined);
      if (ack !== undefined) socket.write(encodeAck(ack));
      header = undefined;
      payloadParts = [];
      payloadHave = 0;
      lastPart = undefined;
    }
  };
}

/**
 * The receiver's side of a stream transport named `transport`, listening on `target` (a port on the bind address, or a
 * socket file prepared by the caller); `closed` runs once the server is closed.
 */
export async function listenStream(
  options: ReceiverOptions,
  target: StreamTarget,
  transport: string,
  closed: () => Promise<void> = async () => {},
): Promise<ReceiverListener> {
  const sockets = new Set<net.Socket>();
  const gate = frameGate(options, transport);
  const server = net.createServer({ noDelay: true }, (socket) => {
    const from =
      'path' in target
        ? `${transport} from a process on this host`
        : `${transport} from ${hostPort(socket.remoteAddress ?? '?', socket.remotePort ?? 0)}`;
    sockets.add(socket);
    let pass: DoorPass | undefined;
    socket.on('close', () => {
      sockets.delete(socket);
      pass?.release();
    });
    socket.on('error', (err) => options.log.debug({ err }, `${transport} connection error`));
    closeWhenSilent(socket, options.idleTimeoutMs, (reason) => options.door.refuse(from, reason));
    const admit = (hello: Buffer): boolean => {
      pass = options.door.admit(helloCredentialText(hello), from, () => socket.destroy());
      return pass !== undefined;
    };
    socket.on('data', frameParser(socket, gate, admit, options.partHasher?.()));
  });
  // Until a connection is admitted it holds at most a hello's 40 bytes; once admitted, one
  // partial image. The cap bounds how many connections wait to prove themselves.
  capConnections(server, options.door, transport);
  if ('path' in target) server.listen(target.path);
  else server.listen(target.port, target.host);
  await Promise.race([onceEvent(server, 'listening'), onceEvent(server, 'error').then(([err]) => Promise.reject(err))]);
  return {
    port: 'path' in target ? 0 : boundPort(server.address()),
    close: once(async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      await closed();
    }),
  };
}
