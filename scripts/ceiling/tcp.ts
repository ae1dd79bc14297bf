import net from 'node:net';
import {
  ackSeq,
  CEILING_ACK_BYTES,
  CEILING_HEADER_BYTES,
  ceilingAck,
  headerLength,
  headerSeq,
  type CeilingPair,
} from './contract.js';

// node:net, as the tcp transport: the header then the image written on one socket (Nagle off),
// corked around the two writes as the transport corks them, so both leave in one system call
// (tests/integration/ceiling-writes.test.ts compares the calls); the receiver counting bytes
// through the stream and writing the 12-byte ack as soon as an image is complete; the sender
// reading acks 12 bytes at a time. Nothing is copied unless a test asks for the images (onImage).

/** The tcp transport's ceiling: header and image on one socket, 12-byte acks back on it. */
export const tcpCeiling: CeilingPair = {
  transport: 'tcp',
  how:
    'node:net: socket.cork(), socket.write(header), socket.write(image), socket.uncork(); acks written back on ' +
    'the same socket',
  async receive(options) {
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
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.bindHost, () => resolve());
    });
    const address = server.address();
    return {
      port: typeof address === 'object' && address !== null ? address.port : options.port,
      async close() {
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  },
  async connect(options) {
    const socket = net.connect({ host: options.host, port: options.port });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.setNoDelay(true);
    socket.on('error', (err) => options.onFailure(`tcp: ${err.message}`));
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
  },
};
