import type { FastifyReply, FastifyRequest } from 'fastify';
import type WebSocket from 'ws';
import { bearerToken } from '../../core/wire/auth.js';
import { ErrorCode, ItbError } from '../../core/errors.js';
import { decodeAck, FRAME_HEADER_BYTES } from '../../core/wire/frame.js';
import { boundPort, hostPort, singleListenHost } from '../../shared/net.js';
import { once } from '../../shared/once.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { connectWithin } from '../kit/connect.js';
import { capConnections, closeWhenSilent } from '../kit/door.js';
import { frameGate } from '../kit/gate.js';
import { LinkGuard } from '../kit/link-guard.js';
import { SendQueue } from '../kit/send-queue.js';
import { lazyLibrary } from '../kit/library.js';
import { closeSocket, imageWriter, PATH, receiveImages, wsLibrary } from '../kit/websocket.js';

/** fastify and its WebSocket plugin, for the receiver side only. */
const fastifyLibrary = lazyLibrary<typeof import('fastify')>('fastify');
const websocketPlugin = lazyLibrary<typeof import('@fastify/websocket')>('@fastify/websocket');

// Each image is two binary messages: the 40-byte header, then the image bytes as a message of its
// own, so neither side concatenates them. permessage-deflate is off (images do not compress and
// deflate would dominate the time). The client must mask what it sends (RFC 6455), which copies
// every payload; ws does it with the native `bufferutil` addon, a dependency here. The upgrade
// request carries the section's credential as a bearer token: a refused one is answered 401 and
// never upgraded, so nothing of its payload is read.

/**
 * Bytes ws may hold unsent (its masked copies plus the socket's buffer) before the link holds
 * frames back: enough to keep the kernel's buffer fed, bounded so a wide window of large images
 * is not copied into memory all at once.
 */
export const BUFFERED_HIGH_WATER_BYTES = 1024 * 1024;

/** Statuses the receiver answers an upgrade with when it will not take this link: retrying cannot help. */
const REFUSED_STATUSES = new Set([401, 403]);

/** One connect attempt: the WebSocket handshake, bounded by `timeoutMs`. */
function openSocket(url: string, credentialText: string, timeoutMs: number): Promise<WebSocket> {
  const ws = new (wsLibrary())(url, {
    perMessageDeflate: false,
    handshakeTimeout: timeoutMs,
    maxPayload: 1024 * 1024,
    headers: { authorization: `Bearer ${credentialText}` },
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.removeAllListeners('error');
      resolve(ws);
    });
    ws.once('error', (err) => {
      ws.terminate();
      reject(err);
    });
    // With this listener ws leaves a non-101 answer to us (and emits no error for it).
    ws.once('unexpected-response', (_request, response) => {
      const status = response.statusCode ?? 0;
      response.resume();
      const problem = `upgrade answered with HTTP ${status}`;
      reject(
        REFUSED_STATUSES.has(status)
          ? new ItbError(
              ErrorCode.refused,
              `${problem}: the receiver did not take this section's credential (its log says why)`,
            )
          : new Error(problem),
      );
      ws.removeAllListeners('error');
      ws.on('error', () => {});
      ws.terminate();
    });
  });
}

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const url = `ws://${hostPort(options.host, options.port)}${PATH}`;
  const ws = await connectWithin(
    `WebSocket ${url}`,
    options.connectTimeoutMs,
    (remainingMs) => openSocket(url, options.credential.text, remainingMs),
    (late) => late.terminate(),
  );
  const guard = new LinkGuard(options.onFailure, `WebSocket ${url}`);
  ws.on('message', (data: Buffer) => guard.ack(options.onAck, decodeAck(data)));
  ws.on('error', (err) => options.log.debug({ err }, 'websocket client error')); // reported through 'close'
  ws.on('close', (code, reason) =>
    guard.failWith(`closed by the receiver (code ${code}${reason.length ? `: ${reason.toString()}` : ''})`),
  );
  const queue = new SendQueue(imageWriter(ws, BUFFERED_HIGH_WATER_BYTES), (err) =>
    guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, () => closeSocket(ws));
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  // connectionTimeout closes a socket that is silent before its upgrade; after it, ws clears it
  // and the handler sets the same bound again.
  const app = fastifyLibrary().fastify({ logger: false, connectionTimeout: options.idleTimeoutMs });
  await app.register(websocketPlugin(), {
    options: { perMessageDeflate: false, maxPayload: Math.max(options.maxImageBytes, FRAME_HEADER_BYTES) },
  });
  const where = (request: FastifyRequest): string =>
    `websocket from ${hostPort(request.ip, request.socket.remotePort ?? 0)}`;
  // The door decides before the upgrade: a refused request is answered 401 and its socket closed.
  const preValidation = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const socket = request.raw.socket;
    const pass = options.door.admit(bearerToken(request.headers.authorization), where(request), () => socket.destroy());
    if (pass !== undefined) {
      socket.once('close', () => pass.release());
      return;
    }
    reply.raw.once('finish', () => socket.destroy());
    await reply
      .code(401)
      .header('connection', 'close')
      .send({ error: 'this connection does not belong to the open section' });
  };
  app.get(PATH, { websocket: true, preValidation }, (socket, request) => {
    const gate = frameGate(options, where(request));
    closeWhenSilent(request.socket, options.idleTimeoutMs, (reason) => options.door.refuse(where(request), reason));
    receiveImages(socket, gate);
  });
  capConnections(app.server, options.door, 'websocket');
  await app.listen({ port: options.port, host: await singleListenHost(options.bindHost) });
  return {
    port: boundPort(app.server.address()),
    // fastify's close ends the WebSocket server, which terminates open client connections.
    close: once(() => app.close().then(() => undefined)),
  };
}

/** WebSocket through fastify + @fastify/websocket on the receiver and a ws client. */
export const websocketTransport: Transport = {
  name: 'websocket',
  label: 'WebSocket',
  summary: {
    libraries: 'fastify + @fastify/websocket, ws',
    image: 'two binary messages, client → server (masked)',
    ack: 'binary message',
  },
  traits: {
    baseline: false,
  },
  library: {
    packages: ['fastify', '@fastify/websocket', 'ws', 'bufferutil'],
  },
  deployment: {
    defaultRun: true,
    setting: { kind: 'port', envVar: 'WEBSOCKET_PORT', defaultPort: 8081 },
  },
  connect,
  listen,
};
