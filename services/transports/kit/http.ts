import type net from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Client, Dispatcher } from 'undici';
import { bearerToken, secretsEqual } from '../../core/wire/auth.js';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import type { Ack } from '../../core/wire/frame.js';
import type { CommandLaneTrait } from '../../core/model/command-lane.js';
import { boundPort, hostPort, singleListenHost } from '../../shared/net.js';
import { once } from '../../shared/once.js';
import type { DoorPass, ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions } from '../contract.js';
import { connectWithin } from './connect.js';
import { capConnections } from './door.js';
import { frameGate, type FrameGate } from './gate.js';
import { LinkGuard } from './link-guard.js';
import { SendQueue } from './send-queue.js';
import { lazyLibrary } from './library.js';

// What the HTTP transports (http: the raw image as the body, http-json: a JSON body) share: the
// transmitter's pipelined keep-alive connection and the receiver's fastify listener with the door
// in front of every request. Each transport file keeps only how a frame and its ack are framed.

/**
 * undici (the transmitter side) and fastify (the receiver side), loaded when an HTTP transport is first used
 * (kit/library.ts).
 */
const undici = lazyLibrary<typeof import('undici')>('undici');
const fastifyLibrary = lazyLibrary<typeof import('fastify')>('fastify');

// One keep-alive connection per link, its requests pipelined up to WINDOW deep. HTTP/1.1 answers
// a connection's requests in order, so images arrive and acks return in the order sent, as the
// contract wants. Several connections side by side cannot promise that: measured on this host
// with an undici Pool of 16 connections and WINDOW 16, about 1 image in 5 reached the receiver
// ahead of an earlier one (and 1 KB images at WINDOW 8, 1 in 10), while the pipelined connection
// carried the same MB/s with none out of order. undici pipelines only requests marked
// idempotent: ours are, for that reason alone; undici never retries a request by itself, and the
// link fails (and drops the client) at the first failed request, before undici could resend the
// requests pipelined behind it on a new connection.
//
// The door: a connection is admitted on its first request (Authorization: Bearer <section
// credential>), before any body is read; a refused request is answered 401 and its connection
// closed at once. Every later request on the connection must present the same credential.

/** Path every image is posted to (and the connect probe asks for). */
export const PATH = '/images';
/**
 * Largest response body the transmitter reads: an ack, or a refusal's text. Anything bigger is
 * not from this receiver.
 */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/**
 * How long an idle link keeps its connection from the transmitter's side. Long on purpose: the
 * receiver closes a connection silent for IMAGE_TIMEOUT_MS, as every transport's receiver does,
 * and the link reports that; undici's default (4 s) would close and reopen connections between
 * sections of images and put a door admission inside an image's time.
 */
const CLIENT_KEEP_ALIVE_MS = 10 * 60_000;
/** Status the receiver answers a frame it dropped (and reported) with: no ack, the connection goes on. */
export const DROPPED_STATUS = 422;
/** Statuses that mean the receiver will not take this link: retrying cannot help. */
const REFUSED_STATUSES = new Set([401, 403]);

/**
 * How the HTTP transports carry COMMAND_RATE's commands: through send(), as one more request on the link's one
 * connection, which HTTP/1.1 writes whole and answers in order; undici pipelines at most WINDOW requests, and a command
 * takes no window slot, so beside a full window it is written only once the oldest image is answered.
 */
export const HTTP_COMMAND_LANE: CommandLaneTrait = {
  interleaves: false,
  how:
    "another POST pipelined on the link's one keep-alive connection: HTTP/1.1 sends each request whole and answers " +
    'in order, so a command waits behind every image posted before it (beside a full WINDOW, for one to be answered)',
};

/** How one HTTP transport carries a frame in a request and its ack in a 200 answer. */
export interface HttpFraming {
  /** Content-Type of the frames' requests. */
  contentType: string;
  /** The request headers (besides authorization and content-type) and body that carry one frame. */
  request(header: Buffer, payload: Buffer): { headers: string[]; body: Buffer };
  /** Reads the ack from a 200 answer's body; throws on a malformed one. */
  ack(body: Buffer): Ack;
}

/** The body of a small answer, whole (undici hands it over in chunks). */
export function joined(parts: Buffer[]): Buffer {
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/**
 * undici handlers that collect an answer's status and body parts and hand them to `onAnswer` once it is complete. They
 * serve one answer after another, so one object may serve every request of a connection: HTTP/1.1 answers them in
 * order, one at a time.
 */
export function answerCollector(
  onAnswer: (status: number, body: Buffer[]) => void,
  onError: (err: Error) => void,
): Dispatcher.DispatchHandlers {
  let status = 0;
  let parts: Buffer[] = [];
  return {
    onConnect() {},
    onHeaders(statusCode) {
      status = statusCode;
      return true;
    },
    onData(chunk) {
      parts.push(chunk);
      return true;
    },
    onComplete() {
      const body = parts;
      parts = [];
      onAnswer(status, body);
    },
    onError,
  };
}

/**
 * One connect attempt: a Client to `origin` whose first request (GET PATH) the receiver's door admitted, within
 * `timeoutMs`.
 */
async function openClient(
  origin: string,
  authorization: string,
  pipelining: number,
  timeoutMs: number,
): Promise<Client> {
  const client = new (undici().Client)(origin, {
    pipelining,
    keepAliveTimeout: CLIENT_KEEP_ALIVE_MS,
    keepAliveMaxTimeout: CLIENT_KEEP_ALIVE_MS,
    maxResponseSize: MAX_RESPONSE_BYTES,
    connect: { timeout: timeoutMs },
  });
  try {
    // GET, not HEAD: undici closes a connection after a HEAD, and this one is the link's.
    const answer = await client.request({
      path: PATH,
      method: 'GET',
      headers: { authorization },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const text = await answer.body.text();
    if (answer.statusCode >= 200 && answer.statusCode < 300) return client;
    const problem = `the receiver answered HTTP ${answer.statusCode}${text.length > 0 ? `: ${text}` : ''}`;
    throw REFUSED_STATUSES.has(answer.statusCode)
      ? new ItbError(ErrorCode.refused, `${problem} (it did not take this section's credential: its log says why)`)
      : new Error(problem);
  } catch (err) {
    await client.destroy();
    throw err;
  }
}

/**
 * Connects a transmitter side that POSTs every frame as `framing` shapes it, on one keep-alive
 * connection pipelined WINDOW deep; `label` names the link in messages ("HTTP").
 */
export async function connectHttp(
  options: TransmitterOptions,
  label: string,
  framing: HttpFraming,
): Promise<TransmitterLink> {
  const origin = `http://${hostPort(options.host, options.port)}`;
  const authorization = `Bearer ${options.credential.text}`;
  const client = await connectWithin(
    `${label} receiver at ${origin}`,
    options.connectTimeoutMs,
    (remainingMs) => openClient(origin, authorization, options.window, remainingMs),
    (late) => void late.destroy(),
  );
  const guard = new LinkGuard(options.onFailure, `${label} link to ${origin}`);
  // undici calls handlers from inside its own socket bookkeeping, which must finish before the
  // client is destroyed; a microtask later it has, and no request pipelined behind the failed one
  // has been resent (that needs a new connection first).
  const fail = (reason: string, cause?: unknown): void => {
    if (guard.ended) return;
    guard.failWith(reason, cause);
    queueMicrotask(() => void client.destroy().catch(() => {}));
  };
  // The receiver closed the connection (a refusal, its silence bound, the section's end, or it went away).
  client.on('disconnect', (_origin, _targets, err) =>
    fail(`connection closed by the receiver (${errorMessage(err)}): its log says why`, err),
  );

  const dispatchOptions = (header: Buffer, payload: Buffer): Dispatcher.DispatchOptions => {
    const { headers, body } = framing.request(header, payload);
    return {
      path: PATH,
      method: 'POST',
      idempotent: true,
      headers: ['authorization', authorization, 'content-type', framing.contentType, ...headers],
      body,
    };
  };
  const answerHandler = (): Dispatcher.DispatchHandlers =>
    answerCollector(
      (status, parts) => {
        if (status === 200) {
          let ack: Ack;
          try {
            ack = framing.ack(joined(parts));
          } catch (err) {
            fail(`the receiver answered with a malformed ack: ${errorMessage(err)}`, err);
            return;
          }
          guard.ack(options.onAck, ack);
        } else if (status === DROPPED_STATUS) {
          // The receiver dropped this frame and reported why; like any dropped frame it is never acknowledged.
          options.log.debug({ status, answer: joined(parts).toString() }, 'the receiver dropped a frame');
        } else {
          const text = parts.length > 0 ? `: ${joined(parts).toString()}` : '';
          fail(`the receiver answered HTTP ${status}${text}`);
        }
      },
      (err) => fail(`request failed: ${err.message}`, err),
    );
  // undici queues what it cannot write at once (its requests hold the image, uncopied), so every
  // frame is handed over as it comes: the window bounds what waits.
  const queue = new SendQueue(
    (header, payload) => {
      client.dispatch(dispatchOptions(header, payload), answerHandler());
      return undefined;
    },
    (err) => fail(`send failed: ${err.message}`, err),
  );
  return guard.link(queue, () => client.destroy().catch(() => {}));
}

/** What the receiver knows of one admitted connection. */
interface Admitted {
  pass: DoorPass;
  /** The credential it was admitted with: every later request must present the same. */
  presented: string;
  /** Where it comes from, for messages ("http from 127.0.0.1:5000"). */
  from: string;
  gate: FrameGate;
}

/** A listener's view of its admitted connections, for the transport's own hooks and parsers. */
export interface HttpConnections {
  /** The admitted connection `request` came on (the door's hook ran before any other). */
  of(request: FastifyRequest): Admitted;
  /** Answers `request` with `status` and `text`, then closes its connection: nothing more of it is read. */
  refuse(request: FastifyRequest, reply: FastifyReply, status: number, text: string): void;
}

/** Answers with `status` and closes the connection once the answer is written, before any more of it is read. */
function refuseAndClose(request: FastifyRequest, reply: FastifyReply, status: number, text: string): void {
  const socket = request.raw.socket;
  reply.raw.once('finish', () => socket.destroy());
  void reply.code(status).header('connection', 'close').type('text/plain').send(text);
}

/**
 * Starts a fastify receiver for transport `name` with the door in front of every request; `routes`
 * adds the transport's POST PATH route. `bodyLimitBytes` bounds fastify's own body parsers.
 */
export async function listenHttp(
  options: ReceiverOptions,
  name: string,
  bodyLimitBytes: number,
  routes: (app: FastifyInstance, connections: HttpConnections) => void,
): Promise<ReceiverListener> {
  // connectionTimeout is each socket's inactivity bound, request or not: with keepAliveTimeout 0
  // node never swaps it for a keep-alive one (and sends no Keep-Alive hint), and the 'timeout'
  // handler below reports and closes. requestTimeout bounds one request's arrival, whatever trickles.
  const app = fastifyLibrary().fastify({
    logger: false,
    bodyLimit: bodyLimitBytes,
    connectionTimeout: options.idleTimeoutMs,
    requestTimeout: options.idleTimeoutMs,
  });
  app.server.keepAliveTimeout = 0;
  app.server.headersTimeout = options.idleTimeoutMs;
  const admitted = new WeakMap<net.Socket, Admitted>();
  const sockets = new Set<net.Socket>();
  const where = (socket: net.Socket): string =>
    `${name} from ${hostPort(socket.remoteAddress ?? '?', socket.remotePort ?? 0)}`;
  app.server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  app.server.on('timeout', (socket: net.Socket) => {
    options.door.refuse(
      where(socket),
      `nothing sent or received for ${options.idleTimeoutMs} ms (IMAGE_TIMEOUT_MS): connection closed`,
    );
    socket.destroy();
  });
  // The door, before anything else of a request is looked at, on every path.
  app.addHook('onRequest', (request, reply, done) => {
    const socket = request.raw.socket;
    const presented = bearerToken(request.headers.authorization);
    const known = admitted.get(socket);
    if (known !== undefined) {
      if (presented !== undefined && secretsEqual(presented, known.presented)) {
        done();
        return;
      }
      options.door.refuse(
        known.from,
        'a request presented another credential than the connection was admitted with: connection closed',
      );
      refuseAndClose(request, reply, 401, 'this request does not belong to the connection it came on');
      return;
    }
    const from = where(socket);
    const pass = options.door.admit(presented, from, () => socket.destroy());
    if (pass === undefined) {
      refuseAndClose(request, reply, 401, 'this connection does not belong to the open section');
      return;
    }
    admitted.set(socket, { pass, presented: presented ?? '', from, gate: frameGate(options, from) });
    // A connection the transmitter ended sends nothing more: its place is free at once, before
    // the close completes, so a connection opened right after it is not refused for want of room.
    const release = (): void => pass.release();
    socket.once('end', release);
    socket.once('close', release);
    done();
  });
  // The connect probe: the door above is all it asks for.
  app.get(PATH, (_request, reply) => {
    void reply.code(204).send();
  });
  routes(app, {
    of: (request) => admitted.get(request.raw.socket)!,
    refuse: refuseAndClose,
  });
  capConnections(app.server, options.door, name);
  await app.listen({ port: options.port, host: await singleListenHost(options.bindHost) });
  return {
    port: boundPort(app.server.address()),
    close: once(async () => {
      const closing = app.close();
      // fastify waits for connections in use; the section is over, so none is.
      for (const socket of sockets) socket.destroy();
      await closing;
    }),
  };
}

/**
 * The content-length of `request` when it is exactly one plain decimal number; undefined otherwise (chunked, absent,
 * malformed).
 */
export function contentLength(request: FastifyRequest): number | undefined {
  const text = request.headers['content-length'];
  if (request.headers['transfer-encoding'] !== undefined || typeof text !== 'string' || !/^\d{1,15}$/.test(text))
    return undefined;
  return Number(text);
}
