import { randomBytes } from 'node:crypto';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import type { Writable } from 'node:stream';
import type {
  GrpcPartialOptions,
  HostileConnection,
  HttpPartialOptions,
  PartialMessageClients,
  PartialMessageOptions,
  TcpPartialOptions,
  WebsocketPartialOptions,
  ZeromqPartialOptions,
} from '../../services/transports/hostile-contract.js';

export type {
  GrpcPartialOptions,
  HostileConnection,
  HttpPartialOptions,
  PartialMessageOptions,
  TcpPartialOptions,
  WebsocketPartialOptions,
  ZeromqPartialOptions,
};

// Protocol-level hostile clients for the receiver's data ports. Each opens one connection, may
// present a credential, starts a message that announces more bytes than it sends, and holds the
// connection mid-message until the caller closes it. They speak the wire formats by hand (node:net,
// node:http2) because the real client libraries never send a partial message.

const HOST = '127.0.0.1';
const DEFAULT_TIMEOUT_MS = 5000;
const CHUNK_BYTES = 1024 * 1024;
/** How long a peer with no explicit "accepted" reply gets to refuse before its silence counts as admission. */
const VERDICT_GRACE_MS = 200;
/** Bytes of the hello record a TCP credential fills. */
const TCP_HELLO_BYTES = 40;
/** How long an HTTP client listens for a refusal while it holds its message: longer than any test. */
const ANSWER_WAIT_MS = 3_600_000;
/** A longer HTTP response head than this is not a WebSocket server answering. */
const MAX_HTTP_HEAD_BYTES = 16 * 1024;
/** A longer handshake command than this is not a ZMTP peer answering. */
const MAX_ZMTP_COMMAND_BYTES = 64 * 1024;
const ZMTP_GREETING_BYTES = 64;
const ZMTP_PLAIN_USERNAME = 'itb';
const ZMTP_FLAG_MORE = 0x01;
const ZMTP_FLAG_LONG = 0x02;
const ZMTP_FLAG_COMMAND = 0x04;
/** Zeros: the payload's content never matters, since the message never completes. */
const ZERO_CHUNK = Buffer.alloc(CHUNK_BYTES);

/**
 * What a slow-header connection sends: nothing, part of a request line, or a request head a byte at a time that never
 * ends.
 */
export type SlowHeaderMode = 'silent' | 'partial-line' | 'byte-at-a-time';

/** How often a byte-at-a-time connection sends its next byte. */
const SLOW_BYTE_INTERVAL_MS = 100;

/**
 * One connection to 127.0.0.1:`port` that never finishes a request head (`mode`); `isClosed()`
 * tells at any time whether the peer has closed it. A refused connection is closed at once.
 */
export async function slowHeaders(
  port: number,
  mode: SlowHeaderMode,
): Promise<HostileConnection & { isClosed(): boolean }> {
  const link = await openSocket(port, DEFAULT_TIMEOUT_MS);
  const connection = {
    ...socketConnection(
      link,
      () => link.connected,
      () => 0,
    ),
    isClosed: () => link.closure.isClosed,
  };
  if (!link.connected) return connection;
  link.inbox.discard();
  if (mode === 'partial-line') link.socket.write('GET /hea', 'latin1');
  if (mode === 'byte-at-a-time') {
    link.socket.write(`GET /health HTTP/1.1\r\nHost: ${HOST}:${port}\r\nX-Slow: `, 'latin1');
    const timer = setInterval(() => link.socket.write('a'), SLOW_BYTE_INTERVAL_MS);
    void link.closure.closed.then(() => clearInterval(timer));
  }
  return connection;
}

/** Plain TCP: the hello record, the frame header, then `sendBytes` of the payload `announcedBytes` implies. */
export async function tcpPartial(options: TcpPartialOptions): Promise<HostileConnection> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const hello = options.hello ?? (options.credential === undefined ? undefined : helloFromHex(options.credential));
  const link = await openSocket(options.port, timeoutMs);
  let admitted = false;
  let sentBytes = 0;
  const connection = socketConnection(
    link,
    () => admitted,
    () => sentBytes,
  );
  if (!link.connected) return connection;
  // The peer's replies (acks, if any) play no part: the only verdict plain TCP has is a close.
  link.inbox.discard();
  // With no hello the header is the first record the peer judges, so the grace follows it instead.
  link.socket.write(hello ?? options.header);
  await within(link.closure.closed, options.verdictGraceMs ?? VERDICT_GRACE_MS, false);
  if (link.closure.isClosed) return connection;
  admitted = true;
  if (hello) link.socket.write(options.header);
  await writePartial(
    link.socket,
    ZERO_CHUNK,
    options.sendBytes,
    link.closure.closed,
    timeoutMs,
    (bytes) => (sentBytes += bytes),
  );
  return connection;
}

/** WebSocket: a hand-made HTTP/1.1 upgrade, then one masked binary frame announcing `announcedBytes` (RFC 6455 5.2). */
export async function websocketPartial(
  options: WebsocketPartialOptions,
): Promise<HostileConnection & { status(): number | undefined }> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maskKey = randomBytes(4);
  // Built before connecting, so a size it rejects throws with no socket left open.
  const frameHead = websocketFrameHead(options.announcedBytes, maskKey);
  const link = await openSocket(options.port, timeoutMs);
  let admitted = false;
  let sentBytes = 0;
  let status: number | undefined;
  const connection = {
    ...socketConnection(
      link,
      () => admitted,
      () => sentBytes,
    ),
    status: () => status,
  };
  if (!link.connected) return connection;

  const requestLines = [
    `GET ${options.path} HTTP/1.1`,
    `Host: ${HOST}:${options.port}`,
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
    'Sec-WebSocket-Version: 13',
    ...(options.credential === undefined ? [] : [`Authorization: Bearer ${options.credential}`]),
  ];
  link.socket.write(`${requestLines.join('\r\n')}\r\n\r\n`, 'latin1');
  const head = await link.inbox.takeThrough(Buffer.from('\r\n\r\n'), Date.now() + timeoutMs, MAX_HTTP_HEAD_BYTES);
  if (!head) return connection;
  const statusLine = head.toString('latin1').split('\r\n', 1)[0] ?? '';
  const statusCode = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1];
  status = statusCode === undefined ? undefined : Number(statusCode);
  if (status !== 101) {
    // Anything but 101 is a refusal, whether or not the server also closes the socket.
    link.refuse();
    return connection;
  }
  admitted = true;
  // Frames the server might send (pings) go unanswered and unread.
  link.inbox.discard();

  link.socket.write(frameHead);
  // Zeros masked are the key repeated; CHUNK_BYTES is a multiple of 4, so every chunk starts in phase.
  const maskedZeros = Buffer.alloc(CHUNK_BYTES, maskKey);
  await writePartial(
    link.socket,
    maskedZeros,
    options.sendBytes,
    link.closure.closed,
    timeoutMs,
    (bytes) => (sentBytes += bytes),
  );
  return connection;
}

/** gRPC: one HTTP/2 stream whose 5-byte message prefix announces `announcedBytes`, never half-closed. */
export async function grpcPartial(
  options: GrpcPartialOptions,
): Promise<HostileConnection & { grpcStatus(): number | undefined }> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (options.announcedBytes > 0xffff_ffff)
    throw new RangeError(`gRPC's length prefix cannot announce ${options.announcedBytes} bytes`);
  const closure = new Closure();
  let admitted = false;
  let refused = false;
  let sentBytes = 0;
  let grpcStatus: number | undefined;
  let settleRefusal!: () => void;
  const refusal = new Promise<void>((resolve) => (settleRefusal = resolve));

  const session = http2.connect(`http://${HOST}:${options.port}`);
  session.on('error', () => closure.byPeer());
  session.on('close', () => closure.byPeer());
  const connection = {
    closed: closure.closed,
    admitted: () => admitted,
    sentBytes: () => sentBytes,
    grpcStatus: () => grpcStatus,
    close: () => {
      closure.byUs();
      session.destroy();
    },
  };
  const connected = new Promise<boolean>((resolve) => session.once('connect', () => resolve(true)));
  if (!(await within(Promise.race([connected, closure.closed.then(() => false)]), timeoutMs, false))) return connection;

  /** Reads a verdict off response headers or trailers; the first refusal stops the writing. */
  const judge = (headers: http2.IncomingHttpHeaders): void => {
    const code = headers['grpc-status'];
    if (code !== undefined) grpcStatus = Number(code);
    const httpStatus = headers[':status'] === undefined ? undefined : Number(headers[':status']);
    const refusing = (grpcStatus !== undefined && grpcStatus !== 0) || (httpStatus !== undefined && httpStatus !== 200);
    if (refusing && !admitted) {
      refused = true;
      settleRefusal();
    } else if (code === undefined && httpStatus === 200) {
      // Headers without a status open a real response: the call was let in.
      admitted = true;
    }
  };
  const stream = session.request(
    {
      ':method': 'POST',
      ':path': options.path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...(options.credential === undefined ? {} : { authorization: `Bearer ${options.credential}` }),
    },
    { endStream: false },
  );
  stream.on('response', judge);
  stream.on('trailers', judge);
  stream.on('error', () => closure.byPeer());
  // The server ending its side (trailers) ends the call, even while our side stays open.
  stream.on('end', () => closure.byPeer());
  stream.on('close', () => closure.byPeer());
  // Response messages are of no interest, but must be read for 'end' to come.
  stream.resume();

  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(options.announcedBytes, 1);
  stream.write(prefix);
  const stop = Promise.race([closure.closed, refusal]);
  await writePartial(stream, ZERO_CHUNK, options.sendBytes, stop, timeoutMs, (bytes) => (sentBytes += bytes));
  if (refused || closure.isClosed || sentBytes < options.sendBytes) return connection;
  // Bytes reach the socket before a refusal of the headers comes back, so writing them proves nothing yet.
  await within(stop, options.verdictGraceMs ?? VERDICT_GRACE_MS, undefined);
  if (!refused && !closure.isClosed) admitted = true;
  return connection;
}

/**
 * HTTP/1.1: a hand-made POST whose Content-Length announces `announcedBytes`, then `sendBytes` of
 * the body. A refusal is an answer (401, 400, …) before the body is done, or a close.
 */
export async function httpPartial(
  options: HttpPartialOptions,
): Promise<HostileConnection & { status(): number | undefined }> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const link = await openSocket(options.port, timeoutMs);
  let admitted = false;
  let sentBytes = 0;
  let status: number | undefined;
  const connection = {
    ...socketConnection(
      link,
      () => admitted,
      () => sentBytes,
    ),
    status: () => status,
  };
  if (!link.connected) return connection;
  const requestLines = [
    `POST ${options.path} HTTP/1.1`,
    `Host: ${HOST}:${options.port}`,
    `Content-Type: ${options.contentType}`,
    `Content-Length: ${options.announcedBytes}`,
    ...Object.entries(options.headers ?? {}).map(([name, value]) => `${name}: ${value}`),
    ...(options.credential === undefined ? [] : [`Authorization: Bearer ${options.credential}`]),
  ];
  // Any answer before the body is complete is a refusal (the receiver answers an image only once
  // it is whole): it counts as the peer's close. The wait ends with the socket.
  void link.inbox
    .takeThrough(Buffer.from('\r\n\r\n'), Date.now() + ANSWER_WAIT_MS, MAX_HTTP_HEAD_BYTES)
    .then((head) => {
      const code = head === undefined ? undefined : /^HTTP\/1\.[01] (\d{3})/.exec(head.toString('latin1'))?.[1];
      if (code === undefined) return;
      status = Number(code);
      link.refuse();
    });
  link.socket.write(`${requestLines.join('\r\n')}\r\n\r\n`, 'latin1');
  const stop = link.closure.closed;
  await within(stop, options.verdictGraceMs ?? VERDICT_GRACE_MS, undefined);
  if (link.closure.isClosed) return connection;
  admitted = true;
  await writePartial(link.socket, ZERO_CHUNK, options.sendBytes, stop, timeoutMs, (bytes) => (sentBytes += bytes));
  return connection;
}

/**
 * ZeroMQ: ZMTP 3.0 (PLAIN with the credential as password, else NULL) as a DEALER (or `socketType`), then a two-part
 * message whose second part is cut short.
 */
export async function zeromqPartial(options: ZeromqPartialOptions): Promise<HostileConnection> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // Built before connecting, so a credential or size they reject throws with no socket left open.
  const hello =
    options.credential === undefined
      ? undefined
      : zmtpCommand(
          'HELLO',
          Buffer.concat([zmtpShortString(ZMTP_PLAIN_USERNAME), zmtpShortString(options.credential)]),
        );
  const messageHead = Buffer.concat([
    zmtpFrameHead(ZMTP_FLAG_MORE, options.header.length),
    options.header,
    zmtpFrameHead(0, options.announcedBytes, true),
  ]);
  const metadata = zmtpProperty('Socket-Type', options.socketType ?? 'DEALER');
  const link = await openSocket(options.port, timeoutMs);
  let admitted = false;
  let sentBytes = 0;
  const connection = socketConnection(
    link,
    () => admitted,
    () => sentBytes,
  );
  if (!link.connected) return connection;
  const { socket, inbox } = link;

  socket.write(zmtpGreeting(hello ? 'PLAIN' : 'NULL'));
  if (!(await inbox.take(ZMTP_GREETING_BYTES, Date.now() + timeoutMs))) return connection;
  if (hello) {
    socket.write(hello);
    const welcome = await readZmtpCommand(inbox, Date.now() + timeoutMs);
    if (welcome?.name !== 'WELCOME') {
      // ERROR or anything else: libzmq keeps the socket open after its ERROR, so do not wait for a close.
      if (welcome) link.refuse();
      return connection;
    }
    admitted = true;
    socket.write(zmtpCommand('INITIATE', metadata));
  } else {
    socket.write(zmtpCommand('READY', metadata));
  }
  const ready = await readZmtpCommand(inbox, Date.now() + timeoutMs);
  if (ready?.name !== 'READY') {
    if (ready) link.refuse();
    return connection;
  }
  admitted = true;
  // PINGs after this are left unanswered on purpose: a stalled peer is what the receiver must survive.
  inbox.discard();

  socket.write(messageHead);
  await writePartial(
    socket,
    ZERO_CHUNK,
    options.sendBytes,
    link.closure.closed,
    timeoutMs,
    (bytes) => (sentBytes += bytes),
  );
  return connection;
}

/** Settles `closed` once: true when the peer ended or refused the connection, false when our close() came first. */
class Closure {
  readonly closed: Promise<boolean>;
  private settle!: (byPeer: boolean) => void;
  private settled = false;

  constructor() {
    this.closed = new Promise<boolean>((resolve) => (this.settle = resolve));
  }

  get isClosed(): boolean {
    return this.settled;
  }

  byPeer(): void {
    this.end(true);
  }

  byUs(): void {
    this.end(false);
  }

  private end(byPeer: boolean): void {
    if (this.settled) return;
    this.settled = true;
    this.settle(byPeer);
  }
}

/** Buffers what the peer sends so handshakes can read exact byte counts. */
class Inbox {
  private pending: Buffer = Buffer.alloc(0);
  private ended = false;
  private discarding = false;
  private wake: (() => void) | undefined;

  constructor(socket: net.Socket) {
    socket.on('data', (data: Buffer) => {
      if (!this.discarding) this.pending = this.pending.length === 0 ? data : Buffer.concat([this.pending, data]);
      this.notify();
    });
    socket.on('close', () => {
      this.ended = true;
      this.notify();
    });
  }

  /** Resolves the next `byteCount` bytes, or undefined when the peer closes or `deadline` (epoch ms) passes first. */
  async take(byteCount: number, deadline: number): Promise<Buffer | undefined> {
    while (this.pending.length < byteCount) {
      if (!(await this.arrival(deadline))) return undefined;
    }
    const taken = this.pending.subarray(0, byteCount);
    this.pending = this.pending.subarray(byteCount);
    return taken;
  }

  /** Resolves the bytes up to and including `delimiter`, or undefined on close, `deadline` or more than `maxBytes`. */
  async takeThrough(delimiter: Buffer, deadline: number, maxBytes: number): Promise<Buffer | undefined> {
    for (;;) {
      const at = this.pending.indexOf(delimiter);
      if (at >= 0) return this.take(at + delimiter.length, deadline);
      if (this.pending.length > maxBytes || !(await this.arrival(deadline))) return undefined;
    }
  }

  /** From now on drops whatever arrives, so an unread peer cannot grow memory. */
  discard(): void {
    this.discarding = true;
    this.pending = Buffer.alloc(0);
  }

  /** Resolves true when more bytes arrived, false when the socket closed or `deadline` passed. */
  private async arrival(deadline: number): Promise<boolean> {
    const remainingMs = deadline - Date.now();
    if (this.ended || remainingMs <= 0) return false;
    const arrived = await within(
      new Promise<boolean>((resolve) => (this.wake = () => resolve(true))),
      remainingMs,
      false,
    );
    this.wake = undefined;
    return arrived;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** A raw TCP connection with its closure and inbox; `connected` is false when it was refused or timed out. */
interface SocketLink {
  socket: net.Socket;
  closure: Closure;
  inbox: Inbox;
  connected: boolean;
  /** The peer refused in words (an HTTP status, a ZMTP ERROR): counts as closed by the peer. */
  refuse(): void;
}

/** Connects to 127.0.0.1:`port`, resolving once connected, refused or `timeoutMs` passed. */
async function openSocket(port: number, timeoutMs: number): Promise<SocketLink> {
  const socket = net.connect({ host: HOST, port });
  socket.setNoDelay(true);
  const closure = new Closure();
  const inbox = new Inbox(socket);
  // ECONNREFUSED, ECONNRESET and EPIPE all mean the peer ended it; 'end' is its FIN.
  socket.on('error', () => closure.byPeer());
  socket.on('end', () => closure.byPeer());
  socket.on('close', () => closure.byPeer());
  const connected = new Promise<boolean>((resolve) => socket.once('connect', () => resolve(true)));
  return {
    socket,
    closure,
    inbox,
    connected: await within(Promise.race([connected, closure.closed.then(() => false)]), timeoutMs, false),
    refuse: () => {
      closure.byPeer();
      socket.destroy();
    },
  };
}

/** The HostileConnection face of a raw socket link. */
function socketConnection(link: SocketLink, admitted: () => boolean, sentBytes: () => number): HostileConnection {
  return {
    closed: link.closure.closed,
    admitted,
    sentBytes,
    close: () => {
      // Before destroy(), so the 'close' it causes is not taken for the peer's.
      link.closure.byUs();
      link.socket.destroy();
    },
  };
}

/**
 * Writes `byteCount` bytes of `fill` in CHUNK_BYTES pieces, waiting for 'drain' whenever the stream
 * asks; stops early when `stop` settles or a wait passes `timeoutMs`. `onSent` counts bytes the
 * stream reports flushed (its write callback), not merely buffered.
 */
async function writePartial(
  stream: Writable,
  fill: Buffer,
  byteCount: number,
  stop: Promise<unknown>,
  timeoutMs: number,
  onSent: (bytes: number) => void,
): Promise<void> {
  const stopped = stop.then(() => false);
  let lastFlushed: Promise<boolean> = Promise.resolve(true);
  for (let offset = 0; offset < byteCount; offset += CHUNK_BYTES) {
    if (stream.destroyed) return;
    const chunk = fill.subarray(0, Math.min(CHUNK_BYTES, byteCount - offset));
    let accepted = true;
    lastFlushed = new Promise<boolean>((resolve) => {
      accepted = stream.write(chunk, (err) => {
        if (!err) onSent(chunk.length);
        resolve(true);
      });
    });
    if (!accepted && !(await within(Promise.race([drained(stream), stopped]), timeoutMs, false))) return;
  }
  await within(Promise.race([lastFlushed, stopped]), timeoutMs, false);
}

/** Resolves true on the stream's next 'drain'; the listener goes once it fires or the stream closes. */
function drained(stream: Writable): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve(!stream.destroyed);
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

/** Resolves to `work`'s value, or to `fallback` once `timeoutMs` passes; leaves no timer behind. */
async function within<T>(work: Promise<T>, timeoutMs: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), timeoutMs)));
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** The 40-byte hello record a TCP credential stands for: 80 hex characters. */
function helloFromHex(credential: string): Buffer {
  if (!new RegExp(`^[0-9a-fA-F]{${TCP_HELLO_BYTES * 2}}$`).test(credential)) {
    throw new TypeError(
      `a TCP credential is ${TCP_HELLO_BYTES * 2} hex characters, got ${credential.length} characters`,
    );
  }
  return Buffer.from(credential, 'hex');
}

/** A client-to-server frame head (FIN, binary, masked) for a payload of `payloadBytes`, with its mask key. */
function websocketFrameHead(payloadBytes: number, maskKey: Buffer): Buffer {
  const FIN_BINARY = 0x82;
  const MASKED = 0x80;
  let head: Buffer;
  if (payloadBytes <= 125) {
    head = Buffer.from([FIN_BINARY, MASKED | payloadBytes]);
  } else if (payloadBytes <= 0xffff) {
    head = Buffer.alloc(4);
    head.writeUInt8(FIN_BINARY, 0);
    head.writeUInt8(MASKED | 126, 1);
    head.writeUInt16BE(payloadBytes, 2);
  } else {
    head = Buffer.alloc(10);
    head.writeUInt8(FIN_BINARY, 0);
    head.writeUInt8(MASKED | 127, 1);
    head.writeBigUInt64BE(BigInt(payloadBytes), 2);
  }
  return Buffer.concat([head, maskKey]);
}

/** A ZMTP 3.0 greeting (RFC 23) for `mechanism`, as a client. */
function zmtpGreeting(mechanism: 'NULL' | 'PLAIN'): Buffer {
  const greeting = Buffer.alloc(ZMTP_GREETING_BYTES);
  greeting.writeUInt8(0xff, 0);
  greeting.writeUInt8(0x7f, 9);
  greeting.writeUInt8(3, 10);
  greeting.writeUInt8(0, 11);
  greeting.write(mechanism, 12, 'latin1');
  // as-server (byte 32) and the filler stay zero.
  return greeting;
}

/** A frame head: short when `size` fits a byte, unless `long` forces the 8-byte size. */
function zmtpFrameHead(flags: number, size: number, long = false): Buffer {
  if (size <= 0xff && !long) return Buffer.from([flags, size]);
  const head = Buffer.alloc(9);
  head.writeUInt8(flags | ZMTP_FLAG_LONG, 0);
  head.writeBigUInt64BE(BigInt(size), 1);
  return head;
}

/** A command frame: name length, name, then `data`. */
function zmtpCommand(name: string, data: Buffer): Buffer {
  const body = Buffer.concat([zmtpShortString(name), data]);
  return Buffer.concat([zmtpFrameHead(ZMTP_FLAG_COMMAND, body.length), body]);
}

/** A one-byte length, then the text: PLAIN's username and password, and command names. */
function zmtpShortString(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length > 0xff) throw new RangeError(`a ZMTP short string holds 255 bytes at most, got ${bytes.length}`);
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}

/** A metadata property: short name, 4-byte big-endian value length, value. */
function zmtpProperty(name: string, value: string): Buffer {
  const valueBytes = Buffer.from(value, 'utf8');
  const valueLength = Buffer.alloc(4);
  valueLength.writeUInt32BE(valueBytes.length);
  return Buffer.concat([zmtpShortString(name), valueLength, valueBytes]);
}

/**
 * Reads the peer's next command, skipping PINGs (left unanswered) and stray message frames; undefined on close or
 * `deadline`.
 */
async function readZmtpCommand(inbox: Inbox, deadline: number): Promise<{ name: string; data: Buffer } | undefined> {
  for (;;) {
    const flagsByte = await inbox.take(1, deadline);
    if (!flagsByte) return undefined;
    const flags = flagsByte.readUInt8(0);
    const sizeField = await inbox.take(flags & ZMTP_FLAG_LONG ? 8 : 1, deadline);
    if (!sizeField) return undefined;
    const size = flags & ZMTP_FLAG_LONG ? Number(sizeField.readBigUInt64BE(0)) : sizeField.readUInt8(0);
    if (size > MAX_ZMTP_COMMAND_BYTES) return undefined;
    const body = await inbox.take(size, deadline);
    if (!body) return undefined;
    if (!(flags & ZMTP_FLAG_COMMAND) || body.length === 0) continue;
    // libzmq writes its ERROR name as "\x05ERROR" in C, which the compiler reads as 0x5E then "RROR".
    if (body.readUInt8(0) === 0x5e && body.subarray(1, 5).toString('latin1') === 'RROR')
      return { name: 'ERROR', data: body.subarray(5) };
    const nameBytes = body.readUInt8(0);
    const name = body.subarray(1, 1 + nameBytes).toString('latin1');
    if (name === 'PING') continue;
    return { name, data: body.subarray(1 + nameBytes) };
  }
}

/** The clients a transport's hostile.ts picks from, one per wire the transports share. */
export const partialMessageClients: PartialMessageClients = {
  tcp: tcpPartial,
  websocket: websocketPartial,
  grpc: grpcPartial,
  http: httpPartial,
  zeromq: zeromqPartial,
};
