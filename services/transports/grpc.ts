import { once as onceEvent } from 'node:events';
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { loadSync, type MethodDefinition, type ServiceDefinition } from '@grpc/proto-loader';
import { bearerToken } from '../core/auth.js';
import { ErrorCode, ItbError, errorMessage } from '../core/errors.js';
import { ACK_STATUS_CODES, FRAME_HEADER_BYTES } from '../core/frame.js';
import { boundPort, hostPort } from '../shared/net.js';
import { once } from '../shared/once.js';
import { projectPath } from '../shared/paths.js';
import { settlesWithin } from '../shared/waits.js';
import type { DoorPass, ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from './contract.js';
import { connectWithin } from './kit/connect.js';
import { capConnections } from './kit/door.js';
import { frameGate } from './kit/gate.js';
import { LinkGuard } from './kit/link-guard.js';
import { SendQueue } from './kit/send-queue.js';

// gRPC: one bidirectional `Transfer` stream per link (proto/transfer.proto), one Frame message per
// image and one Ack message back. Images are not chunked: refbench measured no gain from it, since
// every chunk is still protobuf-encoded and HTTP/2-framed. Per image, grpc-js copies the payload
// twice on send (protobuf encode, then the 5-byte gRPC message prefix) and once on receive (the
// message is assembled from HTTP/2 DATA frames); protobuf decode hands `payload` out as a view.
// The call's metadata carries the section's credential as a bearer token; a server interceptor
// checks it before the call reads any message, so a refused call holds at most what HTTP/2 flow
// control lets in before anyone reads (one 64 KiB window per connection).

/** Wire shape of a Frame as proto-loader (keepCase false) hands it over. */
interface FrameMessage {
  header?: Buffer;
  payload?: Buffer;
}

/** Wire shape of an Ack; `status` is the AckStatus's wire code (ACK_STATUS_CODES). */
interface AckMessage {
  sectionId?: number;
  seq?: number;
  status?: number;
}

const SERVICE_NAME = 'itb.ImageTransfer';
/** Protobuf framing of a Frame around header and payload: 2 field tags and 2 length varints. */
const PROTOBUF_OVERHEAD_BYTES = 16;
/** HTTP/2 flow-control window refbench used: a 64 KiB default stalls a large image on every WINDOW_UPDATE. */
const FLOW_CONTROL_WINDOW_BYTES = 16 * 1024 * 1024;
/** How long close() lets a stream finish (half-close answered) before cancelling it. */
const STREAM_CLOSE_GRACE_MS = 1000;
/** How long the receiver's close() waits for calls to end gracefully before forcing them. */
const SERVER_SHUTDOWN_GRACE_MS = 1000;
/** Calls one connection may have open at once: a transmitter opens one. */
const MAX_STREAMS_PER_CONNECTION = 4;

interface TransferDefinition {
  service: ServiceDefinition;
  method: MethodDefinition<FrameMessage, AckMessage>;
}

let transferDefinition: TransferDefinition | undefined;

/** Loads proto/transfer.proto once, on first use rather than at import. */
function loadTransferDefinition(): TransferDefinition {
  if (transferDefinition) return transferDefinition;
  // Default loader options keep `bytes` fields as Buffers (never strings) and uint32 as numbers.
  const packageDefinition = loadSync(projectPath('proto', 'transfer.proto'), { keepCase: false });
  const service = packageDefinition[SERVICE_NAME] as ServiceDefinition | undefined;
  const method = service?.['Transfer'] as MethodDefinition<FrameMessage, AckMessage> | undefined;
  if (!service || !method) throw new ItbError(ErrorCode.transport, `proto/transfer.proto has no ${SERVICE_NAME}.Transfer`);
  transferDefinition = { service, method };
  return transferDefinition;
}

/** Largest Frame message either side lets through: one image of MAX_IMAGE_SIZE, its header and framing. */
function maxMessageBytes(maxImageBytes: number): number {
  return maxImageBytes + FRAME_HEADER_BYTES + PROTOBUF_OVERHEAD_BYTES;
}

/** Channel options both sides share: message limits fitted to MAX_IMAGE_SIZE, not unlimited. */
function sharedChannelOptions(maxImageBytes: number): grpc.ChannelOptions {
  return {
    'grpc.max_receive_message_length': maxMessageBytes(maxImageBytes),
    'grpc.max_send_message_length': maxMessageBytes(maxImageBytes),
    // grpc-js 1.14 reads this on the client only (grpc/grpc-node PR #3058 adds the server side);
    // it is set on both so the receiver gains it once the library honours it.
    'grpc-node.flow_control_window': FLOW_CONTROL_WINDOW_BYTES,
  };
}

/** Connects the transmitter side: one channel, one bidi stream. */
async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const { method } = loadTransferDefinition();
  const target = hostPort(options.host, options.port);
  const log = options.log.child({ transport: 'grpc', target });
  // waitForReady keeps trying a refused or lost connection itself, so one attempt spans the budget.
  const client = await connectWithin(
    `gRPC receiver at ${target}`,
    options.connectTimeoutMs,
    async (remainingMs) => {
      const candidate = new grpc.Client(target, grpc.credentials.createInsecure(), {
        ...sharedChannelOptions(options.maxImageBytes),
        // A transparent retry would resend an image and distort its time; also skips the retry buffer.
        'grpc.enable_retries': 0,
        // Each link gets its own HTTP/2 connection rather than sharing a pooled one with another channel.
        'grpc.use_local_subchannel_pool': 1,
      });
      try {
        await new Promise<void>((resolve, reject) => candidate.waitForReady(Date.now() + remainingMs, (err) => (err ? reject(err) : resolve())));
        return candidate;
      } catch (err) {
        candidate.close();
        throw err;
      }
    },
    (late) => late.close(),
  );

  const guard = new LinkGuard(options.onFailure, `gRPC stream to ${target}`);
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${options.credential.text}`);
  const call = client.makeBidiStreamRequest<FrameMessage, AckMessage>(method.path, method.requestSerialize, method.responseDeserialize, metadata);
  let streamFinished = false;
  const finished = new Promise<void>((resolve) => {
    call.once('status', () => {
      streamFinished = true;
      resolve();
    });
  });
  const gone = new Promise<void>((resolve) => {
    call.once('status', () => resolve());
    call.once('error', () => resolve());
  });

  call.on('data', (message: AckMessage) => {
    const status = ACK_STATUS_CODES[message.status ?? 0];
    if (status === undefined) {
      guard.failWith(`the receiver sent an ack with unknown status ${message.status}`);
      return;
    }
    guard.ack(options.onAck, { sectionId: message.sectionId ?? 0, seq: message.seq ?? 0, status });
  });
  // The listener stays for the stream's whole life: grpc-js emits 'error' (CANCELLED) even after close().
  call.on('error', (err) => guard.failWith(`failed: ${err.message}`, err));
  call.on('end', () => guard.failWith('the receiver ended the stream'));

  const queue = new SendQueue(
    (header, payload) => {
      if (call.write({ header, payload } satisfies FrameMessage)) return undefined;
      // grpc-js took the message but is over its buffer mark: the next waits for 'drain' (or the stream's end).
      return Promise.race([new Promise<void>((resolve) => call.once('drain', () => resolve())), gone]);
    },
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );

  return guard.link(queue, async () => {
    if (!streamFinished) {
      // Half-close and let the receiver answer with OK; a stuck peer is cancelled instead.
      call.end();
      if (!(await settlesWithin(finished, STREAM_CLOSE_GRACE_MS))) call.cancel();
    }
    client.close();
    log.debug('gRPC link closed');
  });
}

/**
 * The receiver's door for gRPC: a call is admitted on its metadata before it reads any message,
 * and a call that goes `idleTimeoutMs` without a whole message (stalled in the middle of one) is
 * ended, which frees what grpc-js assembled of it.
 */
function doorInterceptor(options: ReceiverOptions): grpc.ServerInterceptor {
  return (methodDescriptor, call) => {
    let pass: DoorPass | undefined;
    let silence: NodeJS.Timeout | undefined;
    let ended = false;
    const from = `grpc from ${call.getPeer()}`;
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
        end(grpc.status.DEADLINE_EXCEEDED, `no whole message for ${options.idleTimeoutMs} ms`);
      }, options.idleTimeoutMs);
    };
    return new grpc.ServerInterceptingCall(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata, nextMetadata) {
            const [authorization] = metadata.get('authorization');
            pass = options.door.admit(typeof authorization === 'string' ? bearerToken(authorization) : undefined, from, () =>
              end(grpc.status.UNAVAILABLE, 'the section ended'),
            );
            if (pass === undefined) {
              end(grpc.status.UNAUTHENTICATED, 'this call does not belong to the open section');
              return;
            }
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
            ended = true;
            stopWatching();
            pass?.release();
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

/** Starts the receiver side: a gRPC server whose Transfer handler passes each frame through the gate and acks it. */
async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const { service } = loadTransferDefinition();
  const log = options.log.child({ transport: 'grpc' });
  const server = new grpc.Server({
    ...sharedChannelOptions(options.maxImageBytes),
    'grpc.max_concurrent_streams': MAX_STREAMS_PER_CONNECTION,
    // A connection with no call open (one that never made one, or whose call was refused) is closed.
    'grpc.max_connection_idle_ms': options.idleTimeoutMs,
    interceptors: [doorInterceptor(options)],
  });
  let closing = false;

  const transfer: grpc.handleBidiStreamingCall<FrameMessage, AckMessage> = (call) => {
    const peer = call.getPeer();
    const gate = frameGate(options, `grpc from ${peer}`);
    log.debug({ peer }, 'gRPC stream opened');
    call.on('data', (message: FrameMessage) => {
      const { header: headerBytes, payload } = message;
      if (!Buffer.isBuffer(headerBytes) || !Buffer.isBuffer(payload)) {
        gate.reject('frame lacks its header or payload');
        return;
      }
      const ack = gate.frame(headerBytes, payload);
      if (ack !== undefined) call.write({ sectionId: ack.sectionId, seq: ack.seq, status: ACK_STATUS_CODES.indexOf(ack.status) } satisfies AckMessage);
    });
    let halfClosed = false;
    // The transmitter half-closed: finish with OK so its close() completes at once.
    call.on('end', () => {
      halfClosed = true;
      call.end();
    });
    // 'cancelled' marks the end of every call. Before a half-close it means grpc-js dropped input
    // it refused (over the message limit, undecodable: it answers the transmitter with that status
    // and tells the handler nothing more) or the transmitter vanished; either way frames are lost.
    call.on('cancelled', () => {
      if (halfClosed || closing) return;
      gate.reject(
        `stream ended before the transmitter closed it: grpc-js refused a message ` +
          `(over the ${maxMessageBytes(options.maxImageBytes)}-byte limit, or undecodable) or the transmitter went away`,
      );
    });
    call.on('error', (err: Error) => {
      if (!closing) gate.reject(`stream failed: ${err.message}`);
    });
  };
  server.addService(service, { Transfer: transfer });

  // grpc-js has no connection cap: it serves connections this listener accepts itself, so the
  // cap is net.Server's.
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const sockets = new Set<net.Socket>();
  const tcp = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    injector.injectConnection(socket);
  });
  capConnections(tcp, options.door, 'grpc');
  const address = hostPort(options.bindHost, options.port);
  try {
    tcp.listen(options.port, options.bindHost);
    await Promise.race([onceEvent(tcp, 'listening'), onceEvent(tcp, 'error').then(([err]) => Promise.reject(err))]);
  } catch (err) {
    injector.destroy();
    server.forceShutdown();
    throw new ItbError(ErrorCode.transport, `gRPC receiver cannot listen on ${address}: ${errorMessage(err)}`, { cause: err });
  }
  const port = boundPort(tcp.address());
  log.debug({ port }, 'gRPC receiver listening');

  return {
    port,
    close: once(async () => {
      closing = true;
      tcp.close();
      const shutDown = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      if (!(await settlesWithin(shutDown, SERVER_SHUTDOWN_GRACE_MS))) server.forceShutdown();
      injector.destroy();
      for (const socket of sockets) socket.destroy();
      log.debug('gRPC receiver closed');
    }),
  };
}

/** gRPC over @grpc/grpc-js: one bidirectional stream per link, one message per image. */
export const grpcTransport: Transport = {
  name: 'grpc',
  label: 'gRPC',
  baseline: false,
  setting: { kind: 'port', envVar: 'GRPC_PORT', defaultPort: 50051 },
  libraries: ['@grpc/grpc-js', '@grpc/proto-loader'],
  refbenchMode: 'grpc',
  connect,
  listen,
};
