import fastifyWebsocket from '@fastify/websocket';
import Fastify from 'fastify';
import WebSocket from 'ws';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { decodeAck, decodeFrameHeader, encodeAck, FRAME_HEADER_BYTES, type FrameHeader } from '../core/frame.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from './contract.js';

// Each image is two binary messages: the 40-byte header, then the image bytes as a message of its
// own, so neither side concatenates them. permessage-deflate is off (images do not compress and
// deflate would dominate the time). The client must mask what it sends (RFC 6455); ws does that
// with the native `bufferutil` addon when it is installed, which it is (a dependency).

const PATH = '/images';
// A close code from RFC 6455: the peer sent something this endpoint does not accept.
const POLICY_VIOLATION = 1008;

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const url = `ws://${options.host}:${options.port}${PATH}`;
  const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: options.connectTimeoutMs, maxPayload: 1024 * 1024 });
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
  } catch (err) {
    ws.terminate();
    const timedOut = /timed out/i.test(errorMessage(err));
    throw new ItbError(timedOut ? ErrorCode.timeout : ErrorCode.transport, `cannot open WebSocket ${url}: ${errorMessage(err)}`, { cause: err });
  }
  let closed = false;
  ws.on('message', (data: Buffer) => options.onAck(decodeAck(data)));
  ws.on('error', (err) => options.log.debug({ err }, 'websocket client error'));
  ws.on('close', (code, reason) => {
    if (!closed) options.onFailure(new ItbError(ErrorCode.transport, `WebSocket ${url} closed by the receiver (code ${code}${reason.length ? `: ${reason.toString()}` : ''})`));
  });
  return {
    async send(header, payload) {
      ws.send(header, { binary: true });
      ws.send(payload, { binary: true });
    },
    async close() {
      if (closed) return;
      closed = true;
      if (ws.readyState === WebSocket.CLOSED) return;
      const done = new Promise<void>((resolve) => ws.once('close', () => resolve()));
      ws.close();
      // A peer that never answers the close handshake must not hold us up.
      const timer = setTimeout(() => ws.terminate(), 1000);
      await done;
      clearTimeout(timer);
    },
  };
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const app = Fastify({ logger: false });
  await app.register(fastifyWebsocket, {
    options: { perMessageDeflate: false, maxPayload: Math.max(options.maxImageBytes, FRAME_HEADER_BYTES) },
  });
  app.get(PATH, { websocket: true }, (socket) => {
    let header: FrameHeader | undefined;
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      const arrivalNs = process.hrtime.bigint();
      try {
        if (!isBinary) throw new ItbError(ErrorCode.frame, 'text message where a binary frame was expected');
        if (header === undefined) {
          header = decodeFrameHeader(data, options.maxImageBytes);
          return;
        }
        if (data.length !== header.sizeBytes) {
          throw new ItbError(ErrorCode.frame, `image of ${data.length} bytes, header announced ${header.sizeBytes}`);
        }
      } catch (err) {
        options.onReject(`websocket: ${errorMessage(err)}`);
        socket.close(POLICY_VIOLATION, 'bad frame');
        return;
      }
      const ack = options.deliver({ header, payload: data, arrivalNs });
      header = undefined;
      socket.send(encodeAck(ack));
    });
    socket.on('error', (err) => {
      // ws reports oversize messages (over maxPayload) and protocol errors here, then closes.
      options.onReject(`websocket: ${errorMessage(err)}`);
    });
  });
  await app.listen({ port: options.port, host: options.bindHost });
  const address = app.server.address();
  let closing: Promise<void> | undefined;
  return {
    port: typeof address === 'object' && address !== null ? address.port : options.port,
    close() {
      // fastify's close ends the WebSocket server, which terminates open client connections.
      closing ??= app.close().then(() => undefined);
      return closing;
    },
  };
}

/** WebSocket through fastify + @fastify/websocket on the receiver and a ws client. */
export const websocketTransport: Transport = {
  name: 'websocket',
  label: 'WebSocket',
  port: { envVar: 'WEBSOCKET_PORT', defaultPort: 8081 },
  baseline: false,
  connect,
  listen,
};
