import type * as grpc from '@grpc/grpc-js';
import type { MethodDefinition, PackageDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { hostPort } from '../../services/shared/net.js';
import { projectPath } from '../../services/shared/paths.js';
import { settlesWithin } from '../../services/shared/waits.js';
import { lazyLibrary } from '../../services/transports/kit/library.js';
import { CEILING_HEADER_BYTES, headerSeq, type CeilingPair } from './contract.js';

// @grpc/grpc-js, as the grpc transport: one bidirectional Transfer stream per link
// (proto/transfer.proto), one Frame message per image (the 40-byte header in `header`, the image
// in `payload`) and one Ack message back, written by the receiver's handler as soon as the Frame
// is decoded. Same channel options and message limits as the transport; no metadata, no
// interceptor, no gate, and the server binds its port itself (the transport's connection cap is
// harness). grpc-js copies each image twice on send and once on receive whatever we do; the
// handler gets `payload` as a view, and only a test (onImage) looks at it.
// The helpers below are shared with grpc-unary.ts, as the transports share theirs.

/** @grpc/grpc-js, loaded on first use (kit/library.ts: a process holds only the libraries it runs). */
export const grpcJs = lazyLibrary<typeof grpc>('@grpc/grpc-js');
const protoLoader = lazyLibrary<typeof import('@grpc/proto-loader')>('@grpc/proto-loader');

/** A Frame as proto-loader decodes it: the ceiling's sender always fills both fields. */
export interface FrameMessage {
  header: Buffer;
  payload: Buffer;
}

/** An Ack as proto-loader decodes it: a zero seq is not on the wire, so it comes back undefined. */
export interface AckMessage {
  seq?: number;
}

/** Protobuf framing of a Frame around header and payload (2 tags, 2 length varints), as the transport counts it. */
const PROTOBUF_OVERHEAD_BYTES = 16;
/** The transport's HTTP/2 flow-control window: the 64 KiB default stalls a large image on every WINDOW_UPDATE. */
const FLOW_CONTROL_WINDOW_BYTES = 16 * 1024 * 1024;
/** Bound on reaching the receiver: waitForReady needs a deadline of its own. */
const CONNECT_TIMEOUT_MS = 10_000;
/** How long a close lets calls end gracefully before forcing them. */
const CLOSE_GRACE_MS = 1000;

let packageDefinition: PackageDefinition | undefined;

/** `service`.`method` of proto/transfer.proto, loaded once, on first use. */
export function protoMethod(
  serviceName: string,
  methodName: string,
): { service: ServiceDefinition; method: MethodDefinition<FrameMessage, AckMessage> } {
  // Default loader options keep `bytes` fields as Buffers and uint32 as numbers.
  packageDefinition ??= protoLoader().loadSync(projectPath('proto', 'transfer.proto'), { keepCase: false });
  const service = packageDefinition[serviceName] as ServiceDefinition | undefined;
  const method = service?.[methodName] as MethodDefinition<FrameMessage, AckMessage> | undefined;
  if (!service || !method) throw new Error(`proto/transfer.proto has no ${serviceName}.${methodName}`);
  return { service, method };
}

/** The transport's options for both sides: message limits fitted to the largest image, its flow-control window. */
export function channelOptions(maxImageBytes: number): grpc.ChannelOptions {
  const maxMessageBytes = maxImageBytes + CEILING_HEADER_BYTES + PROTOBUF_OVERHEAD_BYTES;
  return {
    'grpc.max_receive_message_length': maxMessageBytes,
    'grpc.max_send_message_length': maxMessageBytes,
    // Read by grpc-js 1.14 on the client only, as the transport notes; set on both as it does.
    'grpc-node.flow_control_window': FLOW_CONTROL_WINDOW_BYTES,
  };
}

/**
 * A client channel to host:port, ready (connected) or rejected within CONNECT_TIMEOUT_MS; the transport's client
 * options.
 */
export async function openClient(host: string, port: number, maxImageBytes: number): Promise<grpc.Client> {
  const client = new (grpcJs().Client)(hostPort(host, port), grpcJs().credentials.createInsecure(), {
    ...channelOptions(maxImageBytes),
    // A transparent retry would resend an image; off, as in the transport.
    'grpc.enable_retries': 0,
    'grpc.use_local_subchannel_pool': 1,
  });
  try {
    await new Promise<void>((resolve, reject) =>
      client.waitForReady(Date.now() + CONNECT_TIMEOUT_MS, (err) => (err ? reject(err) : resolve())),
    );
    return client;
  } catch (err) {
    client.close();
    throw err;
  }
}

/** Binds `server` on bindHost:port (0: any free one); returns the port and a bounded close. */
export async function serve(
  server: grpc.Server,
  bindHost: string,
  port: number,
): Promise<{ port: number; close(): Promise<void> }> {
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(hostPort(bindHost, port), grpcJs().ServerCredentials.createInsecure(), (err, actual) =>
      err ? reject(err) : resolve(actual),
    ),
  ).catch((err: unknown) => {
    server.forceShutdown();
    throw err;
  });
  return {
    port: bound,
    async close() {
      const shutDown = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      if (!(await settlesWithin(shutDown, CLOSE_GRACE_MS))) server.forceShutdown();
    },
  };
}

/** The grpc transport's ceiling: one Frame message per image on a bidi stream, an Ack back. */
export const grpcCeiling: CeilingPair = {
  transport: 'grpc',
  how:
    '@grpc/grpc-js: one bidi Transfer stream, call.write(Frame{header, payload}) per image; the handler ' +
    'call.write(Ack) back',
  async receive(options) {
    const { service } = protoMethod('itb.ImageTransfer', 'Transfer');
    const server = new (grpcJs().Server)(channelOptions(options.maxImageBytes));
    const transfer: grpc.handleBidiStreamingCall<FrameMessage, AckMessage> = (call) => {
      call.on('data', (frame: FrameMessage) => {
        const seq = headerSeq(frame.header);
        options.arrived(seq);
        call.write({ seq });
        options.onImage?.(seq, frame.payload);
      });
      // The sender half-closed: end with OK so its close() completes at once.
      call.on('end', () => call.end());
      // Cancellation at close; nothing to report on this side.
      call.on('error', () => undefined);
    };
    server.addService(service, { Transfer: transfer });
    return serve(server, options.bindHost, options.port);
  },
  async connect(options) {
    const { method } = protoMethod('itb.ImageTransfer', 'Transfer');
    const client = await openClient(options.host, options.port, options.maxImageBytes);
    const call = client.makeBidiStreamRequest<FrameMessage, AckMessage>(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
    );
    let closing = false;
    const ended = new Promise<void>((resolve) => call.once('status', () => resolve()));
    call.on('data', (ack: AckMessage) => options.onAck(ack.seq ?? 0));
    // grpc-js emits 'error' (CANCELLED) even after close(): the listener stays, quiet once closing.
    call.on('error', (err) => {
      if (!closing) options.onFailure(`grpc: ${err.message}`);
    });
    call.on('end', () => {
      if (!closing) options.onFailure('grpc: the receiver ended the stream');
    });
    return {
      send(_seq, header, image) {
        // The window bounds what grpc-js buffers past its high-water mark: no wait for 'drain'.
        call.write({ header, payload: image });
      },
      async close() {
        closing = true;
        call.end();
        if (!(await settlesWithin(ended, CLOSE_GRACE_MS))) call.cancel();
        client.close();
      },
    };
  },
};
