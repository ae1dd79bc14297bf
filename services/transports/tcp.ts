import { once as onceEvent } from 'node:events';
import net from 'node:net';
import { ACK_BYTES, decodeAck, encodeAck, FRAME_HEADER_BYTES, type FrameHeader } from '../core/frame.js';
import { boundPort, hostPort } from '../shared/net.js';
import { once } from '../shared/once.js';
import { drainOrClose } from '../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from './contract.js';
import { connectWithin } from './kit/connect.js';
import { frameGate, type FrameGate } from './kit/gate.js';
import { LinkGuard } from './kit/link-guard.js';
import { SendQueue } from './kit/send-queue.js';

// The floor: each frame is the 40-byte header (which carries the length) then the image bytes on
// one plain socket. The receiver keeps the socket's own chunks as the image's parts, so assembly
// is linear with no copy at all.

/** Connections the receiver accepts at once; more are closed on arrival. */
const MAX_CONNECTIONS = 8;

/** One connect attempt, bounded by `timeoutMs`; rejects with the socket's own error. */
function connectSocket(host: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, noDelay: true });
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

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const where = hostPort(options.host, options.port);
  const socket = await connectWithin(`TCP ${where}`, options.connectTimeoutMs, (remainingMs) => connectSocket(options.host, options.port, remainingMs), (late) => late.destroy());
  const guard = new LinkGuard(options.onFailure, `TCP link to ${where}`);
  socket.on('data', fixedRecordReader(ACK_BYTES, (record) => guard.ack(options.onAck, decodeAck(record))));
  socket.on('error', (err) => options.log.debug({ err }, 'tcp transmitter socket error')); // reported through 'close'
  socket.on('close', () => guard.failWith('connection closed by the receiver'));
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

// Per-connection frame parser: header bytes first (copied, 40 of them), checked at once; then the
// payload as views of the socket's chunks.
function frameParser(socket: net.Socket, gate: FrameGate): (chunk: Buffer) => void {
  let headerParts: Buffer[] = [];
  let headerHave = 0;
  let header: FrameHeader | undefined;
  let payloadParts: Buffer[] = [];
  let payloadHave = 0;
  return (chunk) => {
    let data: Buffer = chunk;
    while (data.length > 0) {
      if (header === undefined) {
        const take = Math.min(FRAME_HEADER_BYTES - headerHave, data.length);
        headerParts.push(data.subarray(0, take));
        headerHave += take;
        data = data.subarray(take);
        if (headerHave < FRAME_HEADER_BYTES) return;
        header = gate.header(headerParts.length === 1 ? headerParts[0]! : Buffer.concat(headerParts, FRAME_HEADER_BYTES));
        // A byte stream cannot resynchronise after a bad header: drop the connection.
        if (header === undefined) {
          socket.destroy();
          return;
        }
        headerParts = [];
        headerHave = 0;
      }
      const take = Math.min(header.sizeBytes - payloadHave, data.length);
      if (take > 0) payloadParts.push(data.subarray(0, take));
      payloadHave += take;
      data = data.subarray(take);
      if (payloadHave < header.sizeBytes) return;
      const ack = gate.take(header, payloadParts);
      if (ack !== undefined) socket.write(encodeAck(ack));
      header = undefined;
      payloadParts = [];
      payloadHave = 0;
    }
  };
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const sockets = new Set<net.Socket>();
  const gate = frameGate(options, 'tcp');
  const server = net.createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', (err) => options.log.debug({ err }, 'tcp connection error'));
    socket.on('data', frameParser(socket, gate));
  });
  // Each connection may hold one partial image of up to MAX_IMAGE_SIZE: cap them, so a flood of
  // connections cannot make the receiver hold more than MAX_CONNECTIONS images (a transmitter uses one).
  server.maxConnections = MAX_CONNECTIONS;
  server.listen(options.port, options.bindHost);
  await Promise.race([onceEvent(server, 'listening'), onceEvent(server, 'error').then(([err]) => Promise.reject(err))]);
  return {
    port: boundPort(server.address()),
    close: once(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          for (const socket of sockets) socket.destroy();
        }),
    ),
  };
}

/** Plain TCP, the baseline every other transport is measured against. */
export const tcpTransport: Transport = {
  name: 'tcp',
  label: 'TCP',
  baseline: true,
  setting: { kind: 'port', envVar: 'TCP_PORT', defaultPort: 9000 },
  libraries: [],
  refbenchMode: 'tcp',
  connect,
  listen,
};
