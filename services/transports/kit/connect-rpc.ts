import http2 from 'node:http2';
import type { ServiceImpl } from '@connectrpc/connect';
import type { ConnectNodeAdapterOptions, GrpcTransportOptions } from '@connectrpc/connect-node';
import type { ImageTransfer } from '../gen/transfer_pb.js';
import { GRPC_PREFIX_BYTES } from './http2-windows.js';

// What the grpc-connect transport and its ceiling pair share about Connect for Node
// (@connectrpc/connect-node) speaking the gRPC protocol over node:http2: loading the libraries
// and the generated code on first use, the HTTP/2 flow-control windows and session memory that a
// large image needs, and a client session of our own. Connect's own session manager opens its
// session inside and gives no way to set the connection window (session.setLocalWindowSize), so
// the transmitter brings its session in through Connect's `sessionManager` option: one session
// per link, nothing pooled, nothing reconnected behind the run's back.
// (kit/connect.ts is the connect-retry loop every transport uses; this file is Connect the library.)

/** The libraries and the code generated from proto/transfer.proto (gen/transfer_pb.ts, `npm run gen:proto`). */
export interface ConnectLibraries {
  connect: typeof import('@connectrpc/connect');
  connectNode: typeof import('@connectrpc/connect-node');
  protobuf: typeof import('@bufbuild/protobuf');
  gen: typeof import('../gen/transfer_pb.js');
}

let loading: Promise<ConnectLibraries> | undefined;

/** Loads Connect, protobuf-es and the generated code once, when grpc-connect is first used (kit/library.ts: why). */
export function connectLibraries(): Promise<ConnectLibraries> {
  loading ??= Promise.all([
    import('@connectrpc/connect'),
    import('@connectrpc/connect-node'),
    import('@bufbuild/protobuf'),
    import('../gen/transfer_pb.js'),
  ]).then(([connect, connectNode, protobuf, gen]) => ({ connect, connectNode, protobuf, gen }));
  return loading;
}

/** Largest Ack message on the wire: its gRPC prefix, three uint32 fields with their tags (at most 6 bytes each). */
export const ACK_MESSAGE_MAX_BYTES = GRPC_PREFIX_BYTES + 3 * 6;

/**
 * The ImageTransfer client over `session`, as the transport and its ceiling pair both call it: the gRPC protocol, no
 * compressed ack asked for and no frame compressed (sendCompression unset: none), message limits of an ack and of
 * `sendMessageBytes`.
 */
export function transferClient(
  lib: ConnectLibraries,
  baseUrl: string,
  session: ClientSession,
  sendMessageBytes: number,
) {
  return lib.connect.createClient(
    lib.gen.ImageTransfer,
    lib.connectNode.createGrpcTransport({
      baseUrl,
      sessionManager: session,
      acceptCompression: [],
      readMaxBytes: ACK_MESSAGE_MAX_BYTES,
      writeMaxBytes: sendMessageBytes,
    }),
  );
}

/** The Transfer rpc as a server implements it. */
export type TransferImpl = ServiceImpl<typeof ImageTransfer>['transfer'];

/**
 * Connect's node handler serving ImageTransfer's Transfer with `transfer`, as the transport and its ceiling pair both
 * serve it: the gRPC protocol only (not Connect's own, not gRPC-Web), no compressed frame accepted and no ack
 * compressed (a client offering gzip gets identity), message limits of a frame of `readMaxBytes` and of an ack;
 * `contextValues` gives each call what the transport's door learnt of it.
 */
export function transferHandler(
  lib: ConnectLibraries,
  transfer: TransferImpl,
  readMaxBytes: number,
  contextValues?: ConnectNodeAdapterOptions['contextValues'],
) {
  return lib.connectNode.connectNodeAdapter({
    routes: (router) => router.service(lib.gen.ImageTransfer, { transfer }),
    grpc: true,
    connect: false,
    grpcWeb: false,
    acceptCompression: [],
    readMaxBytes,
    writeMaxBytes: ACK_MESSAGE_MAX_BYTES,
    ...(contextValues === undefined ? {} : { contextValues }),
  });
}

/** Node's default maxSessionMemory, in MB (node:http2 counts it in megabytes). */
const DEFAULT_SESSION_MEMORY_MB = 10;

/**
 * node:http2's maxSessionMemory (in MB, as Node takes it) for a session that must hold
 * `bytes` at once (a whole message queued to send, or a window of data received), on top of
 * Node's default for everything else: past it Node refuses new streams with ENHANCE_YOUR_CALM.
 */
export function sessionMemoryMegabytes(bytes: number): number {
  return DEFAULT_SESSION_MEMORY_MB + Math.ceil(bytes / (1024 * 1024));
}

/** What Connect asks of a client's session manager (the package does not export the type by name). */
type SessionManager = NonNullable<GrpcTransportOptions['sessionManager']>;

/** How a transmitter's HTTP/2 session is opened: the windows it advertises and the memory it may hold. */
export interface ClientSessionSizing {
  /** Receive window, stream and connection: what the peer may send before we read (acks, for a transmitter). */
  receiveWindowBytes: number;
  /** Largest message the session sends: the whole of it may sit in the session's outbound queue. */
  sendMessageBytes: number;
}

/** One HTTP/2 client session given to Connect as its session manager; closing it is ours. */
export class ClientSession implements SessionManager {
  readonly authority: string;

  private constructor(
    readonly session: http2.ClientHttp2Session,
    authority: string,
  ) {
    this.authority = authority;
  }

  /**
   * Opens a session to `authority` (http://host:port) and resolves once it is connected, with its
   * windows set: SETTINGS_INITIAL_WINDOW_SIZE for every stream, and the connection's own window.
   */
  static open(authority: string, sizing: ClientSessionSizing): Promise<ClientSession> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(authority, {
        settings: { initialWindowSize: sizing.receiveWindowBytes, enablePush: false },
        maxSessionMemory: sessionMemoryMegabytes(sizing.sendMessageBytes),
      });
      const onError = (err: Error): void => {
        session.destroy();
        reject(err);
      };
      session.once('error', onError);
      session.once('connect', () => {
        session.off('error', onError);
        // Errors after this reach the calls on it; this listener only keeps one from being unhandled.
        session.on('error', () => undefined);
        session.setLocalWindowSize(sizing.receiveWindowBytes);
        resolve(new ClientSession(session, authority));
      });
    });
  }

  /** Opens one stream on the session (Connect calls it for every call). */
  request(
    method: string,
    path: string,
    headers: http2.OutgoingHttpHeaders,
    options: Omit<http2.ClientSessionRequestOptions, 'signal'>,
  ): Promise<http2.ClientHttp2Stream> {
    return Promise.resolve(this.session.request({ ...headers, ':method': method, ':path': path }, options));
  }

  /** Connect reports every read; our session has no idle timer or keep-alive to feed. */
  notifyResponseByteRead(): void {}

  /** Closes the session: at once when `force`, else after its streams end. */
  close(force = false): void {
    if (force) this.session.destroy();
    else this.session.close();
  }
}
