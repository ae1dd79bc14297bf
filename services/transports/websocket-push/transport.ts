import { once as onceEvent } from 'node:events';
import http from 'node:http';
import type net from 'node:net';
import type WebSocket from 'ws';
import { bearerToken, credentialMatches } from '../../core/wire/auth.js';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { CONTROL_CONNECTION_LIMITS, type ConnectionLimits } from '../../core/control/control-protocol.js';
import { ACK_BYTES, decodeAck, FRAME_HEADER_BYTES } from '../../core/wire/frame.js';
import { guardConnections } from '../../shared/connection-guard.js';
import { freePort, hostPort } from '../../shared/net.js';
import { once } from '../../shared/once.js';
import type {
  DoorPass,
  ReceiverListener,
  ReceiverOptions,
  SectionOpening,
  TransmitterLink,
  TransmitterOptions,
  Transport,
} from '../contract.js';
import { connectWithin } from '../kit/connect.js';
import { closeWhenSilent, MAX_CONNECTIONS_PER_LISTENER } from '../kit/door.js';
import { frameGate } from '../kit/gate.js';
import { LinkGuard } from '../kit/link-guard.js';
import { SendQueue } from '../kit/send-queue.js';
import { closeSocket, imageWriter, PATH, receiveImages, wsLibrary } from '../kit/websocket.js';

// WebSocket the other way round: the RECEIVER opens the connection and the transmitter's server
// pushes the images down it. RFC 6455 masks only what a client sends, so the images go out
// unmasked: ws writes each frame's few header bytes and the caller's image in one writev, with no
// copy at all (the `websocket` transport's client copies every image into a masked frame). Only
// the 12-byte acks are masked, by the receiver. Otherwise as `websocket`: each image is two binary
// messages, the 40-byte header then the image, permessage-deflate off, acks as binary messages.
// On the receiver ws gathers an image that spans several socket chunks into one buffer (one copy).
//
// Who gets in, both ways: the receiver dials with its section's credential as a bearer token and
// the transmitter's server upgrades only that request (anything else is answered 401, never
// upgraded), then stops listening; the receiver asks its door before reading anything, exactly
// as a listener does for a connection it accepted.

/**
 * Bytes ws may hold unsent before the link holds frames back. What it holds are references to the
 * caller's images (nothing is copied on this side), so this bound costs no memory: it is set to
 * take a whole window of images of about 0.5 MB, so ws and the kernel write them in large batches
 * and the link seldom waits on a callback per image (measured: about 15 % less transmitter CPU per
 * image than with websocket's 1 MiB, whose bound is about masked copies).
 */
const BUFFERED_HIGH_WATER_BYTES = 8 * 1024 * 1024;
/** Pause between the receiver's dial attempts while the transmitter's server is not up yet. */
const DIAL_RETRY_MS = 25;
/**
 * The push server's connections: as many waiting for a whole upgrade request as any data listener
 * keeps still proving itself (one more closes the oldest), plus the link's own; the control
 * port's 5 s for a request head.
 */
const PUSH_SERVER_LIMITS: Readonly<ConnectionLimits> = {
  ...CONTROL_CONNECTION_LIMITS,
  waitingConnections: MAX_CONNECTIONS_PER_LISTENER,
  maxConnections: MAX_CONNECTIONS_PER_LISTENER + 1,
};

/** A raw upgrade request refused before any WebSocket exists: answered and closed, nothing read. */
function refuseUpgrade(socket: net.Socket, status: 401 | 404): void {
  const reason = status === 401 ? 'Unauthorized' : 'Not Found';
  const challenge = status === 401 ? 'WWW-Authenticate: Bearer realm="image-transfer-bench"\r\n' : '';
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${status} ${reason}\r\n${challenge}Connection: close\r\nContent-Length: 0\r\n\r\n`);
}

/** One bind of the push server on `host:port`; rejects with the server's own error (EADDRINUSE). */
async function listenOn(host: string, port: number): Promise<http.Server> {
  const server = http.createServer();
  server.listen(port, host);
  try {
    await Promise.race([
      onceEvent(server, 'listening'),
      onceEvent(server, 'error').then(([err]) => Promise.reject(err as Error)),
    ]);
  } catch (err) {
    server.close();
    throw err;
  }
  return server;
}

async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const where = hostPort(options.bindHost, options.port);
  const deadlineMs = Date.now() + options.connectTimeoutMs;
  // A port still held by the previous link's server is freed within ms: retried like a refusal.
  const server = await connectWithin(
    `the WebSocket push server on ${where}`,
    options.connectTimeoutMs,
    () => listenOn(options.bindHost, options.port),
    (late) => late.close(),
  );
  const serverClosed = onceEvent(server, 'close').then(() => undefined);
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', (err) => options.log.debug({ err }, 'websocket-push server socket error'));
  });
  // Only one receiver is ever taken, and only while connect() waits; the rest are turned away,
  // and connections that never finish their upgrade request cannot keep the receiver out.
  const waitingGuard = guardConnections(server, PUSH_SERVER_LIMITS, (peer, why) =>
    options.log.warn(
      { from: hostPort(peer.address, peer.port), why },
      'websocket-push connection closed before a whole request',
    ),
  );
  server.on('request', (_request: http.IncomingMessage, response: http.ServerResponse) => {
    response.writeHead(426, { connection: 'close', upgrade: 'websocket' }).end();
  });
  server.on('clientError', (_err, socket: net.Socket) => socket.destroy());
  const release = async (): Promise<void> => {
    server.close();
    for (const socket of sockets) socket.destroy();
    await serverClosed;
  };
  // Acks are the only messages the receiver sends: anything larger is a protocol error.
  const wss = new (wsLibrary().WebSocketServer)({
    noServer: true,
    perMessageDeflate: false,
    clientTracking: false,
    maxPayload: ACK_BYTES,
  });
  let lastRefusal: string | undefined;
  let taken = false;
  let ws: WebSocket;
  try {
    ws = await new Promise<WebSocket>((resolve, reject) => {
      const timer = setTimeout(() => {
        const problem = lastRefusal === undefined ? 'nothing dialed in' : `last refused ${lastRefusal}`;
        reject(
          new ItbError(
            ErrorCode.timeout,
            `no receiver connected to the WebSocket push server on ${where} within ${options.connectTimeoutMs} ` +
              `ms: ${problem}`,
          ),
        );
      }, deadlineMs - Date.now());
      server.on('upgrade', (request: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
        const from = hostPort(request.socket.remoteAddress ?? '?', request.socket.remotePort ?? 0);
        const presented = bearerToken(request.headers.authorization);
        const pathname = (request.url ?? '').split('?')[0];
        const refusal = taken
          ? 'the link already has its receiver'
          : pathname !== PATH
            ? `path ${pathname} is not ${PATH}`
            : presented === undefined
              ? 'presented no credential'
              : !credentialMatches(presented, options.credential)
                ? "credential is not this section's"
                : undefined;
        if (refusal !== undefined) {
          lastRefusal = `${from}: ${refusal}`;
          options.log.warn({ from, refusal }, 'websocket-push connection refused');
          refuseUpgrade(socket, pathname !== PATH ? 404 : 401);
          return;
        }
        waitingGuard.upgraded(socket);
        wss.handleUpgrade(request, socket, head, (accepted) => {
          if (taken) {
            accepted.terminate();
            return;
          }
          taken = true;
          clearTimeout(timer);
          resolve(accepted);
        });
      });
    });
  } catch (err) {
    await release();
    throw err;
  }
  // Stop listening: the link's one connection is in place (the server closes once it ends too).
  server.close();
  const guard = new LinkGuard(options.onFailure, `WebSocket push link on ${where}`);
  ws.on('message', (data: Buffer) => {
    let ack: ReturnType<typeof decodeAck>;
    try {
      ack = decodeAck(data);
    } catch (err) {
      guard.failWith(`bad ack from the receiver: ${errorMessage(err)}`, err);
      ws.terminate();
      return;
    }
    guard.ack(options.onAck, ack);
  });
  ws.on('error', (err) => options.log.debug({ err }, 'websocket-push server error')); // reported through 'close'
  ws.on('close', (code, reason) =>
    guard.failWith(`closed by the receiver (code ${code}${reason.length ? `: ${reason.toString()}` : ''})`),
  );
  const queue = new SendQueue(imageWriter(ws, BUFFERED_HIGH_WATER_BYTES), (err) =>
    guard.failWith(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, async () => {
    await closeSocket(ws);
    await release();
  });
}

/** The receiver's side of one section: dials the transmitter until it answers, then carries its images. */
function dialTransmitter(options: ReceiverOptions, port: number, section: SectionOpening): () => Promise<void> {
  const address = hostPort(section.transmitterHost, port);
  const url = `ws://${address}${PATH}`;
  const from = `websocket-push to ${address}`;
  // The transmitter's server starts once the section is open; it never takes longer than a silent link would.
  const deadlineMs = Date.now() + options.idleTimeoutMs;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let current: WebSocket | undefined;

  const attempt = (): void => {
    retry = undefined;
    if (stopped) return;
    const remainingMs = deadlineMs - Date.now();
    if (remainingMs <= 0) {
      options.log.warn(
        { url, timeoutMs: options.idleTimeoutMs },
        'websocket-push: the transmitter took no connection in time; stopped dialing',
      );
      return;
    }
    const ws = new (wsLibrary())(url, {
      perMessageDeflate: false,
      handshakeTimeout: remainingMs,
      maxPayload: Math.max(options.maxImageBytes, FRAME_HEADER_BYTES),
      headers: { authorization: `Bearer ${section.credential.text}` },
    });
    current = ws;
    let socket: net.Socket | undefined;
    let pass: DoorPass | undefined;
    let opened = false;
    let problem = 'closed before the upgrade';
    ws.on('upgrade', (response: http.IncomingMessage) => {
      socket = response.socket as net.Socket;
    });
    // With this listener ws leaves a non-101 answer to us; terminate() then ends the attempt.
    ws.on('unexpected-response', (_request, response: http.IncomingMessage) => {
      problem = `upgrade answered with HTTP ${response.statusCode ?? 0}`;
      response.resume();
      ws.terminate();
    });
    ws.on('error', (err) => {
      if (!opened) problem = err.message;
    });
    ws.on('close', () => {
      if (current === ws) current = undefined;
      if (opened) {
        pass?.release();
        return;
      }
      options.log.debug({ url, problem }, 'websocket-push dial failed; retrying');
      if (!stopped) retry = setTimeout(attempt, DIAL_RETRY_MS);
    });
    ws.once('open', () => {
      opened = true;
      pass = options.door.admit(section.credential.text, from, () => ws.terminate());
      if (pass === undefined) {
        ws.terminate();
        return;
      }
      // ws cleared the socket's timeout when it took the socket over; the silence bound goes on now.
      if (socket !== undefined)
        closeWhenSilent(socket, options.idleTimeoutMs, (reason) => options.door.refuse(from, reason));
      receiveImages(ws, frameGate(options, from));
    });
  };
  attempt();

  return async () => {
    stopped = true;
    clearTimeout(retry);
    retry = undefined;
    if (current !== undefined) await closeSocket(current);
  };
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  // Binds nothing: the port is the transmitter's, and the harness needs one to give it.
  const port = options.port === 0 ? await freePort() : options.port;
  let stopDialing: (() => Promise<void>) | undefined;
  let closed = false;
  const closeSection = async (): Promise<void> => {
    const stop = stopDialing;
    stopDialing = undefined;
    await stop?.();
  };
  return {
    port,
    async openSection(section) {
      if (closed) throw new ItbError(ErrorCode.transport, 'websocket-push listener is closed');
      await closeSection();
      stopDialing = dialTransmitter(options, port, section);
    },
    closeSection,
    close: once(async () => {
      closed = true;
      await closeSection();
    }),
  };
}

/** WebSocket with the roles swapped: the receiver dials, the transmitter's ws server pushes unmasked images. */
export const websocketPushTransport: Transport = {
  name: 'websocket-push',
  label: 'WebSocket push',
  summary: {
    libraries: 'ws',
    image: "two binary messages, the **transmitter's** server → the receiver's client (unmasked)",
    ack: 'binary message',
  },
  traits: {
    baseline: false,
    receiverDials: true,
    maxClients: { clients: 1, why: 'its receiver dials one connection back to the one port the transmitter serves' },
    maxReceivers: { receivers: 1, why: 'its receivers would all dial the one port the transmitter serves' },
  },
  library: {
    // No fastify on either side, and bufferutil plays no part: nothing masked is over ws's 32-byte threshold.
    packages: ['ws'],
  },
  deployment: {
    defaultRun: false,
    setting: { kind: 'port', envVar: 'WEBSOCKET_PUSH_PORT', defaultPort: 8082, description: 'WebSocket server' },
  },
  connect,
  listen,
};
