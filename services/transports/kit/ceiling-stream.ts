import { rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  ackSeq,
  CEILING_ACK_BYTES,
  CEILING_HEADER_BYTES,
  ceilingAck,
  headerLength,
  headerSeq,
  type CeilingConnectOptions,
  type CeilingPair,
  type CeilingReceiveOptions,
  type CeilingReceiver,
  type CeilingSender,
} from '../ceiling-contract.js';

// node:net, as the tcp transport: the header then the image written on one socket (Nagle off),
// corked around the two writes as the transport corks them, so both leave in one system call
// (tests/integration/ceiling-writes.test.ts compares the calls); the receiver counting bytes
// through the stream and writing the 12-byte ack as soon as an image is complete; the sender
// reading acks 12 bytes at a time. Nothing is copied unless a test asks for the images (onImage).

/** Where a stream pair listens and dials: a port (tcp) or a socket file named after the run's channel (unix). */
type StreamEnd = { host: string; port: number } | { path: string };

/** The socket file of a unix ceiling run: in the temporary directory, named after the run's channel. */
export function ceilingSocketPath(channel: string): string {
  return path.join(os.tmpdir(), `${channel}.sock`);
}

/**
 * A stream transport's ceiling (tcp, unix): header and image on one socket, 12-byte acks back on it; `listenAt` and
 * `dialAt` say where.
 */
export function streamCeiling(
  transport: string,
  how: string,
  listenAt: (options: CeilingReceiveOptions) => StreamEnd,
  dialAt: (options: CeilingConnectOptions) => StreamEnd,
): CeilingPair {
  return {
    transport,
    how,
    receive: (options) => receiveStream(options, listenAt(options)),
    connect: (options) => connectStream(options, dialAt(options), transport),
  };
}

async function receiveStream(options: CeilingReceiveOptions, end: StreamEnd): Promise<CeilingReceiver> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.setNoDelay(true);
    let header: Buffer | undefined;
    let headerParts: Buffer[] = [];
    let headerHave = 0;
    let remaining = 0;
    let parts: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => {
      let at = 0;
      while (at < chunk.length) {
        if (header === undefined) {
          const take = Math.min(CEILING_HEADER_BYTES - headerHave, chunk.length - at);
          headerParts.push(chunk.subarray(at, at + take));
          headerHave += take;
          at += take;
          if (headerHave < CEILING_HEADER_BYTES) continue;
          header = headerParts.length === 1 ? headerParts[0]! : Buffer.concat(headerParts);
          headerParts = [];
          headerHave = 0;
          remaining = headerLength(header);
        }
        const take = Math.min(remaining, chunk.length - at);
        if (options.onImage) parts.push(chunk.subarray(at, at + take));
        remaining -= take;
        at += take;
        if (remaining === 0) {
          const seq = headerSeq(header);
          options.arrived(seq);
          socket.write(ceilingAck(seq));
          options.onImage?.(seq, Buffer.concat(parts));
          parts = [];
          header = undefined;
        }
      }
    });
  });
  // A file left by an earlier run nobody listens on any more (the runner names each run's).
  if ('path' in end) await rm(end.path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if ('path' in end) server.listen(end.path, () => resolve());
    else server.listen(end.port, end.host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : options.port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function connectStream(
  options: CeilingConnectOptions,
  end: StreamEnd,
  transport: string,
): Promise<CeilingSender> {
  const socket = net.connect(end);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.setNoDelay(true);
  socket.on('error', (err) => options.onFailure(`${transport}: ${err.message}`));
  let pending: Buffer = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let at = 0;
    for (; pending.length - at >= CEILING_ACK_BYTES; at += CEILING_ACK_BYTES)
      options.onAck(ackSeq(pending.subarray(at, at + CEILING_ACK_BYTES)));
    pending = pending.subarray(at);
  });
  return {
    send(_seq, header, image) {
      socket.cork();
      socket.write(header);
      socket.write(image);
      socket.uncork();
    },
    async close() {
      await new Promise<void>((resolve) => socket.end(resolve));
      socket.destroy();
    },
  };
}
