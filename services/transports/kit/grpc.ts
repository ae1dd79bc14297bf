import type http2 from 'node:http2';
import type net from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import type { MethodDefinition, PackageDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { bearerToken, type SectionCredential } from '../../core/wire/auth.js';
import { ErrorCode, ItbError } from '../../core/errors.js';
import { ACK_STATUS_CODES, FRAME_HEADER_BYTES, type Ack } from '../../core/wire/frame.js';
import { projectPath } from '../../shared/paths.js';
import { settlesWithin } from '../../shared/waits.js';
import type { DoorPass, ReceiverOptions, TransmitterOptions } from '../contract.js';
import { connectWithin } from './connect.js';
import { listenCapped, type CappedListener } from './door.js';
import { openReceiveWindows } from './http2-windows.js';
import { lazyLibrary } from './library.js';

// What the gRPC transports (grpc: one bidi stream per link, grpc-unary: one call per image) share:
// proto loading, the wire shapes of Frame and Ack, channel options, the connect loop, the bearer
// metadata, the door interceptor and the capped listener. Each transport file keeps only how its
// images travel and how its door counts calls.

/** @grpc/grpc-js, loaded when a gRPC transport is first used (kit/library.ts). */
export const grpcJs = lazyLibrary<typeof grpc>('@grpc/grpc-js');
const protoLoader = lazyLibrary<typeof import('@grpc/proto-loader')>('@grpc/proto-loader');

/** Wire shape of a Frame as proto-loader (keepCase false) hands it over. */
export interface FrameMessage {
  header?: Buffer;
  payload?: Buffer;
}

/** Wire shape of an Ack; `status` is the AckStatus's wire code (ACK_STATUS_CODES). */
export interface AckMessage {
  sectionId?: number;
  seq?: number;
  status?: number;
}

/** Protobuf framing of a Frame around header and payload: 2 field tags and 2 length varints. */
const PROTOBUF_OVERHEAD_BYTES = 16;
/** HTTP/2 flow-control window: a 64 KiB default stalls a large image on every WINDOW_UPDATE. */
const FLOW_CONTROL_WINDOW_BYTES = 16 * 1024 * 1024;
/** How long the receiver's close() waits for calls to end gracefully before forcing them. */
const SERVER_SHUTDOWN_GRACE_MS = 1000;

/** One rpc of proto/transfer.proto and the service it belongs to. */
export interface ProtoMethod<Request, Response> {
  service: ServiceDefinition;
  method: MethodDefinition<Request, Response>;
}

let packageDefinition: PackageDefinition | undefined;

/** Finds `serviceName`.`methodName` in proto/transfer.proto, loaded once, on first use rather than at import. */
export function loadProtoMethod<Request, Response>(
  serviceName: string,
  methodName: string,
): ProtoMethod<Request, Response> {
  // Default loader options keep `bytes` fields as Buffers (never strings) and uint32 as numbers.
  packageDefinition ??= protoLoader().loadSync(projectPath('proto', 'transfer.proto'), { keepCase: false });
  const service = packageDefinition[serviceName] as ServiceDefinition | undefined;
  const method = service?.[methodName] as MethodDefinition<Request, Response> | undefined;
  if (!service || !method)
    throw new ItbError(ErrorCode.transport, `proto/transfer.proto has no ${serviceName}.${methodName}`);
  return { service, method };
}

/** Largest Frame message either side lets through: one image of MAX_IMAGE_SIZE, its header and framing. */
export function maxMessageBytes(maxImageBytes: number): number {
  return maxImageBytes + FRAME_HEADER_BYTES + PROTOBUF_OVERHEAD_BYTES;
}

/** Channel options both sides share: message limits fitted to MAX_IMAGE_SIZE, not unlimited. */
export function sharedChannelOptions(maxImageBytes: number): grpc.ChannelOptions {
  return {
    'grpc.max_receive_message_length': maxMessageBytes(maxImageBytes),
    'grpc.max_send_message_length': maxMessageBytes(maxImageBytes),
    // grpc-js 1.14 reads this on the client only (grpc/grpc-node PR #3058 adds the server side);
    // the receiver opens its windows itself (serveCapped).
    'grpc-node.flow_control_window': FLOW_CONTROL_WINDOW_BYTES,
  };
}

/**
 * Opens the transmitter's channel to `target` within connectTimeoutMs: limits fitted to
 * MAX_IMAGE_SIZE, no transparent retries, and an HTTP/2 connection of its own.
 */
export function connectClient(target: string, options: TransmitterOptions): Promise<grpc.Client> {
  // waitForReady keeps trying a refused or lost connection itself, so one attempt spans the budget.
  return connectWithin(
    `gRPC receiver at ${target}`,
    options.connectTimeoutMs,
    async (remainingMs) => {
      const candidate = new (grpcJs().Client)(target, grpcJs().credentials.createInsecure(), {
        ...sharedChannelOptions(options.maxImageBytes),
        // A transparent retry would resend an image and distort its time. (grpc-js still keeps up to
        // 1 MiB of a call's messages in its retry buffer with retries off; `npm run bench -- grpc-options`
        // found no cost in it.)
        'grpc.enable_retries': 0,
        // Each link gets its own HTTP/2 connection rather than sharing a pooled one with another channel.
        'grpc.use_local_subchannel_pool': 1,
      });
      try {
        await new Promise<void>((resolve, reject) =>
          candidate.waitForReady(Date.now() + remainingMs, (err) => (err ? reject(err) : resolve())),
        );
        return candidate;
      } catch (err) {
        candidate.close();
        throw err;
      }
    },
    (late) => late.close(),
  );
}

/** Call metadata presenting the section's credential as a bearer token. */
export function bearerMetadata(credential: SectionCredential): grpc.Metadata {
  const metadata = new (grpcJs().Metadata)();
  metadata.set('authorization', `Bearer ${credential.text}`);
  return metadata;
}

/** The Ack a message carries; undefined when its status is not one of ACK_STATUS_CODES. */
export function ackFromMessage(message: AckMessage): Ack | undefined {
  const status = ACK_STATUS_CODES[message.status ?? 0];
  return status === undefined ? undefined : { sectionId: message.sectionId ?? 0, seq: message.seq ?? 0, status };
}

/** The message carrying `ack`. */
export function ackMessage(ack: Ack): AckMessage {
  return { sectionId: ack.sectionId, seq: ack.seq, status: ACK_STATUS_CODES.indexOf(ack.status) };
}

/** How a call ends from the door's side: with this status, unless it already ended. */
export type EndCall = (code: grpc.status, details: string) => void;

/** A call the door turned away: the status it ends with (the refusal is already reported). */
export interface CallRefusal {
  code: grpc.status;
  details: string;
}

/**
 * Decides, on the credential it presented (undefined: none), whether one call may read its
 * messages: what to release when the call ends, or its refusal. `from` words every report;
 * `peer` is the connection's address as grpc-js gives it; `end` ends the call (for `drop`);
 * `metadata` is the rest of what the call presented (grpc-unary's command lane is marked there).
 */
export type AdmitCall = (
  presented: string | undefined,
  from: string,
  peer: string,
  end: EndCall,
  metadata: grpc.Metadata,
) => DoorPass | CallRefusal;

/**
 * The receiver's door for gRPC: a call is admitted on its metadata before it reads any message,
 * and a call that goes `idleTimeoutMs` without a whole message (stalled in the middle of one) is
 * ended, which frees what grpc-js assembled of it. `onUnanswered` hears of an admitted call that
 * ended without a status of the handler's or the door's: grpc-js refused its message itself (over
 * the limit, undecodable) or the transmitter cancelled it.
 */
export function doorInterceptor(
  options: ReceiverOptions,
  transport: string,
  admitCall: AdmitCall,
  onUnanswered?: (from: string) => void,
): grpc.ServerInterceptor {
  return (_methodDescriptor, call) => {
    let pass: DoorPass | undefined;
    let silence: NodeJS.Timeout | undefined;
    let ended = false;
    const peer = call.getPeer();
    const from = `${transport} from ${peer}`;
    const stopWatching = (): void => {
      clearTimeout(silence);
      silence = undefined;
    };
    const end = (code: grpc.status, details: string): void => {
      if (ended) return;
      ended = true;
      stopWatching();
      call.sendStatus({ code, details });
    };
    // One timer per call, restarted on every message (refresh() re-arms it without a new allocation).
    const watchSilence = (): void => {
      if (ended) return;
      if (silence !== undefined) {
        silence.refresh();
        return;
      }
      silence = setTimeout(() => {
        options.door.refuse(from, `no whole message for ${options.idleTimeoutMs} ms (IMAGE_TIMEOUT_MS): call ended`);
        end(grpcJs().status.DEADLINE_EXCEEDED, `no whole message for ${options.idleTimeoutMs} ms`);
      }, options.idleTimeoutMs);
    };
    return new (grpcJs().ServerInterceptingCall)(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata, nextMetadata) {
            const [authorization] = metadata.get('authorization');
            const verdict = admitCall(
              typeof authorization === 'string' ? bearerToken(authorization) : undefined,
              from,
              peer,
              end,
              metadata,
            );
            if (!('release' in verdict)) {
              end(verdict.code, verdict.details);
              return;
            }
            pass = verdict;
            watchSilence();
            nextMetadata(metadata);
          },
          onReceiveMessage(message, nextMessage) {
            watchSilence();
            nextMessage(message);
          },
          onReceiveHalfClose(nextHalfClose) {
            stopWatching();
            nextHalfClose();
          },
          onCancel() {
            const unanswered = !ended;
            ended = true;
            stopWatching();
            pass?.release();
            if (unanswered && pass !== undefined) onUnanswered?.(from);
          },
        });
      },
      sendStatus(status, nextStatus) {
        ended = true;
        stopWatching();
        pass?.release();
        nextStatus(status);
      },
    });
  };
}

/** A gRPC server listening on a socket of its own; see {@link serveCapped}. */
export interface CappedServer {
  port: number;
  /**
   * Opens the receive windows (stream and connection) of the connection `peer` (as `call.getPeer()`
   * words it) to `bytes`: for a call the door has admitted, so a connection that presents nothing
   * keeps HTTP/2's 64 KiB.
   */
  openWindows(peer: string, bytes: number): void;
  /** Stops listening, lets calls end within a grace, then forces them and destroys every connection. */
  close(): Promise<void>;
}

/**
 * Serves `server` on connections a net.Server of ours accepts: grpc-js has no connection cap, so
 * the cap is net.Server's (capConnections). `onConnection` sees each accepted socket first.
 */
export async function serveCapped(
  server: grpc.Server,
  options: ReceiverOptions,
  transport: string,
  label: string,
  onConnection?: (socket: net.Socket) => void,
): Promise<CappedServer> {
  const injector = server.createConnectionInjector(grpcJs().ServerCredentials.createInsecure());
  let sessions: ReadonlyMap<string, http2.Http2Session>;
  try {
    sessions = sessionsByPeer(server);
  } catch (err) {
    injector.destroy();
    server.forceShutdown();
    throw err;
  }
  let listener: CappedListener;
  try {
    listener = await listenCapped(options, transport, label, (socket) => {
      onConnection?.(socket);
      injector.injectConnection(socket);
    });
  } catch (err) {
    injector.destroy();
    server.forceShutdown();
    throw err;
  }
  return {
    port: listener.port,
    openWindows(peer, bytes) {
      const session = sessions.get(peer);
      if (session !== undefined) openReceiveWindows(session, bytes);
    },
    async close() {
      listener.server.close();
      const shutDown = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      if (!(await settlesWithin(shutDown, SERVER_SHUTDOWN_GRACE_MS))) server.forceShutdown();
      injector.destroy();
      for (const socket of listener.sockets) socket.destroy();
    },
  };
}

/**
 * Calls `onSession` with each node:http2 session `server` opens from now on, on every listener it has
 * (bound or injected). grpc-js 1.14 sets no receive window on its server (no option reaches it;
 * grpc/grpc-node PR #3058 would add one) and keeps its node:http2 servers in a private field: this
 * reaches them there and fails loudly, naming the field, when a grpc-js release no longer has it,
 * rather than run with 64 KiB windows unnoticed.
 */
export function eachSession(server: grpc.Server, onSession: (session: http2.ServerHttp2Session) => void): void {
  const http2Servers = (server as unknown as { http2Servers?: unknown }).http2Servers;
  if (!(http2Servers instanceof Map) || http2Servers.size === 0)
    throw new ItbError(
      ErrorCode.transport,
      'this @grpc/grpc-js keeps no Server#http2Servers (a private field of 1.14): the receiver cannot open its ' +
        'HTTP/2 receive windows, and would stall each large image a round trip per 64 KiB; pin grpc-js 1.14 or ' +
        'give kit/grpc.ts another way to its sessions',
    );
  for (const http2Server of http2Servers.keys() as Iterable<http2.Http2Server>) http2Server.on('session', onSession);
}

/** The node:http2 sessions `server` serves, by peer as grpc-js words it (ServerInterceptingCall#getPeer). */
export function sessionsByPeer(server: grpc.Server): ReadonlyMap<string, http2.Http2Session> {
  const sessions = new Map<string, http2.Http2Session>();
  eachSession(server, (session) => {
    const { remoteAddress, remotePort } = session.socket;
    if (remoteAddress === undefined) return;
    const peer = remotePort === undefined ? remoteAddress : `${remoteAddress}:${remotePort}`;
    sessions.set(peer, session);
    session.once('close', () => {
      if (sessions.get(peer) === session) sessions.delete(peer);
    });
  });
  return sessions;
}
