import * as grpc from '@grpc/grpc-js';
import { loadSync, type MethodDefinition, type ServiceDefinition } from '@grpc/proto-loader';
import { ErrorCode, ItbError, errorMessage } from '../core/errors.js';
import { decodeFrameHeader, FRAME_HEADER_BYTES, type Ack, type AckStatus } from '../core/frame.js';
import { projectPath } from '../shared/paths.js';
import { settlesWithin } from '../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from './contract.js';

// gRPC: one bidirectional `Transfer` stream per link (proto/transfer.proto), one Frame message per
// image and one Ack message back. Images are not chunked: refbench measured no gain from it, since
// every chunk is still protobuf-encoded and HTTP/2-framed. Per image, grpc-js copies the payload
// twice on send (protobuf encode, then the 5-byte gRPC message prefix) and once on receive (the
// message is assembled from HTTP/2 DATA frames); protobuf decode hands `payload` out as a view.

/** Wire shape of a Frame as proto-loader (keepCase false) hands it over. */
interface FrameMessage {
  header?: Buffer;
  payload?: Buffer;
}

/** Wire shape of an Ack; `status` is the index of the AckStatus (0 ok, 1 corrupt, 2 rejected). */
interface AckMessage {
  sectionId?: number;
  seq?: number;
  status?: number;
}

const ACK_STATUS_CODES: readonly AckStatus[] = ['ok', 'corrupt', 'rejected'];
const SERVICE_NAME = 'itb.ImageTransfer';
/** Protobuf framing of a Frame around header and payload: 2 field tags and 2 length varints. */
const PROTOBUF_OVERHEAD_BYTES = 16;
/** HTTP/2 flow-control window refbench used: a 64 KiB default stalls a large image on every WINDOW_UPDATE. */
const FLOW_CONTROL_WINDOW_BYTES = 16 * 1024 * 1024;
/** How long close() lets a stream finish (half-close answered) before cancelling it. */
const STREAM_CLOSE_GRACE_MS = 1000;
/** How long the receiver's close() waits for calls to end gracefully before forcing them. */
const SERVER_SHUTDOWN_GRACE_MS = 1000;

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

/** `host:port`, with an IPv6 literal bracketed as gRPC target syntax requires. */
function hostPort(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Connects the transmitter side: one channel, one bidi stream. */
async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const { method } = loadTransferDefinition();
  const target = hostPort(options.host, options.port);
  const log = options.log.child({ transport: 'grpc', target });
  const client = new grpc.Client(target, grpc.credentials.createInsecure(), {
    ...sharedChannelOptions(options.maxImageBytes),
    // A transparent retry would resend an image and distort its time; also skips the retry buffer.
    'grpc.enable_retries': 0,
    // Each link gets its own HTTP/2 connection rather than sharing a pooled one with another channel.
    'grpc.use_local_subchannel_pool': 1,
  });

  try {
    await new Promise<void>((resolve, reject) => {
      client.waitForReady(Date.now() + options.connectTimeoutMs, (err) => (err ? reject(err) : resolve()));
    });
  } catch (err) {
    client.close();
    throw new ItbError(ErrorCode.timeout, `gRPC receiver at ${target} not ready within ${options.connectTimeoutMs} ms: ${errorMessage(err)}`, { cause: err });
  }

  const call = client.makeBidiStreamRequest<FrameMessage, AckMessage>(method.path, method.requestSerialize, method.responseDeserialize);
  let closing: Promise<void> | undefined;
  let failure: Error | undefined;
  let streamFinished = false;
  const finished = new Promise<void>((resolve) => {
    call.once('status', () => {
      streamFinished = true;
      resolve();
    });
  });
  // The one pending send waiting for 'drain', so close() or a failure can settle it.
  let pendingDrain: { onDrain: () => void; reject: (err: Error) => void } | undefined;
  const settlePendingDrain = (err: Error): void => {
    if (!pendingDrain) return;
    call.removeListener('drain', pendingDrain.onDrain);
    pendingDrain.reject(err);
    pendingDrain = undefined;
  };
  const fail = (err: Error): void => {
    if (closing || failure) return;
    failure = err;
    log.warn({ err }, 'gRPC link failed');
    settlePendingDrain(err);
    options.onFailure(err);
  };

  call.on('data', (message: AckMessage) => {
    const status = ACK_STATUS_CODES[message.status ?? 0];
    if (status === undefined) {
      fail(new ItbError(ErrorCode.frame, `gRPC receiver at ${target} sent an ack with unknown status ${message.status}`));
      return;
    }
    const ack: Ack = { sectionId: message.sectionId ?? 0, seq: message.seq ?? 0, status };
    options.onAck(ack);
  });
  // The listener stays for the stream's whole life: grpc-js emits 'error' (CANCELLED) even after close().
  call.on('error', (err) => {
    fail(new ItbError(ErrorCode.transport, `gRPC stream to ${target} failed: ${err.message}`, { cause: err }));
  });
  call.on('end', () => {
    fail(new ItbError(ErrorCode.transport, `gRPC receiver at ${target} ended the stream`));
  });

  return {
    send(header: Buffer, payload: Buffer): Promise<void> {
      if (closing) return Promise.reject(new ItbError(ErrorCode.transport, `gRPC link to ${target} is closed`));
      if (failure) return Promise.reject(failure);
      const message: FrameMessage = { header, payload };
      if (call.write(message)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const onDrain = (): void => {
          pendingDrain = undefined;
          resolve();
        };
        pendingDrain = { onDrain, reject };
        call.once('drain', onDrain);
      });
    },
    close(): Promise<void> {
      closing ??= (async () => {
        settlePendingDrain(new ItbError(ErrorCode.transport, `gRPC link to ${target} closed before the frame was accepted`));
        if (!streamFinished) {
          // Half-close and let the receiver answer with OK; a stuck peer is cancelled instead.
          call.end();
          if (!(await settlesWithin(finished, STREAM_CLOSE_GRACE_MS))) call.cancel();
        }
        client.close();
        log.debug('gRPC link closed');
      })();
      return closing;
    },
  };
}

/** Starts the receiver side: a gRPC server whose Transfer handler delivers and acks each frame. */
async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const { service } = loadTransferDefinition();
  const log = options.log.child({ transport: 'grpc' });
  const server = new grpc.Server(sharedChannelOptions(options.maxImageBytes));
  let closing: Promise<void> | undefined;

  const transfer: grpc.handleBidiStreamingCall<FrameMessage, AckMessage> = (call) => {
    const peer = call.getPeer();
    log.debug({ peer }, 'gRPC stream opened');
    call.on('data', (message: FrameMessage) => {
      const arrivalNs = process.hrtime.bigint();
      const { header: headerBytes, payload } = message;
      if (!Buffer.isBuffer(headerBytes) || !Buffer.isBuffer(payload)) {
        options.onReject(`gRPC frame from ${peer} lacks its header or payload`);
        return;
      }
      let header;
      try {
        header = decodeFrameHeader(headerBytes, options.maxImageBytes);
      } catch (err) {
        options.onReject(`gRPC frame from ${peer}: ${errorMessage(err)}`);
        return;
      }
      if (payload.length !== header.sizeBytes) {
        options.onReject(`gRPC frame from ${peer} carries ${payload.length} bytes, its header announces ${header.sizeBytes}`);
        return;
      }
      const ack = options.deliver({ header, payload, arrivalNs });
      const reply: AckMessage = { sectionId: ack.sectionId, seq: ack.seq, status: ACK_STATUS_CODES.indexOf(ack.status) };
      call.write(reply);
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
      options.onReject(
        `gRPC stream from ${peer} ended before the transmitter closed it: grpc-js refused a message ` +
          `(over the ${maxMessageBytes(options.maxImageBytes)}-byte limit, or undecodable) or the transmitter went away`,
      );
    });
    call.on('error', (err: Error) => {
      if (!closing) options.onReject(`gRPC stream from ${peer} failed: ${err.message}`);
    });
  };
  server.addService(service, { Transfer: transfer });

  const address = hostPort(options.bindHost, options.port);
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, boundPort) => (err ? reject(err) : resolve(boundPort)));
    });
  } catch (err) {
    server.forceShutdown();
    throw new ItbError(ErrorCode.transport, `gRPC receiver cannot listen on ${address}: ${errorMessage(err)}`, { cause: err });
  }
  log.debug({ port }, 'gRPC receiver listening');

  return {
    port,
    close(): Promise<void> {
      closing ??= (async () => {
        const shutDown = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
        if (!(await settlesWithin(shutDown, SERVER_SHUTDOWN_GRACE_MS))) server.forceShutdown();
        log.debug('gRPC receiver closed');
      })();
      return closing;
    },
  };
}

/** gRPC over @grpc/grpc-js: one bidirectional stream per link, one message per image. */
export const grpcTransport: Transport = {
  name: 'grpc',
  label: 'gRPC',
  port: { envVar: 'GRPC_PORT', defaultPort: 50051 },
  baseline: false,
  connect,
  listen,
};
