import { once } from 'node:events';
import net from 'node:net';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { ACK_BYTES, decodeAck, decodeFrameHeader, encodeAck, FRAME_HEADER_BYTES, type FrameHeader } from '../core/frame.js';
import { drainOrClose } from '../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from './contract.js';

// The floor: each frame is the 40-byte header (which carries the length) then the image bytes on
// one plain socket. The receiver keeps the socket's own chunks as the image's parts, so assembly
// is linear with no copy at all.

/** Connections the receiver accepts at once; more are closed on arrival. */
const MAX_CONNECTIONS = 8;

/** Opens a TCP connection, bounded by `timeoutMs`. */
export async function connectSocket(host: string, port: number, timeoutMs: number): Promise<net.Socket> {
  const socket = net.connect({ host, port, noDelay: true });
  const timer = setTimeout(() => socket.destroy(new ItbError(ErrorCode.timeout, `no connection to ${host}:${port} within ${timeoutMs} ms`)), timeoutMs);
  try {
    await once(socket, 'connect');
    return socket;
  } catch (err) {
    socket.destroy();
    if (err instanceof ItbError) throw err;
    throw new ItbError(ErrorCode.transport, `cannot connect to ${host}:${port}: ${errorMessage(err)}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}

/** Splits a byte stream into fixed-size records (acks), keeping a partial one for the next chunk. */
export function fixedRecordReader(recordBytes: number, onRecord: (record: Buffer) => void): (chunk: Buffer) => void {
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
  const socket = await connectSocket(options.host, options.port, options.connectTimeoutMs);
  let closed = false;
  socket.on('data', fixedRecordReader(ACK_BYTES, (record) => options.onAck(decodeAck(record))));
  socket.on('error', () => {}); // reported through 'close' below
  socket.on('close', () => {
    if (!closed) options.onFailure(new ItbError(ErrorCode.transport, `TCP connection to ${options.host}:${options.port} closed by the receiver`));
  });
  return {
    async send(header, payload) {
      socket.cork();
      socket.write(header);
      const flushed = socket.write(payload);
      socket.uncork();
      if (!flushed && !closed) await drainOrClose(socket);
    },
    async close() {
      if (closed) return;
      closed = true;
      socket.end();
      socket.destroySoon();
      if (!socket.destroyed) await once(socket, 'close');
    },
  };
}

// Per-connection frame parser: header bytes first (copied, 40 of them), then the payload as
// views of the socket's chunks.
function frameParser(socket: net.Socket, options: ReceiverOptions): (chunk: Buffer) => void {
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
        try {
          header = decodeFrameHeader(Buffer.concat(headerParts, FRAME_HEADER_BYTES), options.maxImageBytes);
        } catch (err) {
          // A byte stream cannot resynchronise after a bad header: drop the connection.
          options.onReject(`tcp: ${errorMessage(err)}`);
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
      const arrivalNs = process.hrtime.bigint();
      const ack = options.deliver({ header, payload: payloadParts, arrivalNs });
      socket.write(encodeAck(ack));
      header = undefined;
      payloadParts = [];
      payloadHave = 0;
    }
  };
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', (err) => options.log.debug({ err }, 'tcp connection error'));
    socket.on('data', frameParser(socket, options));
  });
  // Each connection may hold one partial image of up to MAX_IMAGE_SIZE: cap them, so a flood of
  // connections cannot make the receiver hold more than MAX_CONNECTIONS images (a transmitter uses one).
  server.maxConnections = MAX_CONNECTIONS;
  server.listen(options.port, options.bindHost);
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([err]) => Promise.reject(err))]);
  const address = server.address();
  let closing: Promise<void> | undefined;
  return {
    port: typeof address === 'object' && address !== null ? address.port : options.port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}

/** Plain TCP, the baseline every other transport is measured against. */
export const tcpTransport: Transport = {
  name: 'tcp',
  label: 'TCP',
  port: { envVar: 'TCP_PORT', defaultPort: 9000 },
  baseline: true,
  connect,
  listen,
};
