import type * as http2 from 'node:http2';
import type * as grpc from '@grpc/grpc-js';
import type { MethodDefinition, PackageDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { ErrorCode, ItbError } from '../../core/errors.js';
import { hostPort } from '../../shared/net.js';
import { projectPath } from '../../shared/paths.js';
import { settlesWithin } from '../../shared/waits.js';
import { eachSession } from './grpc.js';
import { DEFAULT_WINDOW_BYTES, MAX_WINDOW_BYTES, openReceiveWindows } from './http2-windows.js';
import { lazyLibrary } from './library.js';
import { CEILING_HEADER_BYTES } from '../ceiling-contract.js';

// @grpc/grpc-js, as the grpc transport: one bidirectional Transfer stream per link (proto/transfer.proto), one Frame
// message per image (the 40-byte header in `header`, the image in `payload`) and one Ack message back, written by the
// receiver's handler as soon as the Frame is decoded. Same channel options and message limits as the transport; no
// metadata, no interceptor, no gate, and the server binds its port itself (the transport's connection cap is harness).
// Its server opens each connection's receive windows, as the transport's does once a call is admitted (to the largest
// window here: this side does not know WINDOW; the transport's covers it). grpc-js copies each image twice on send and
// once on receive whatever we do; the handler gets `payload` as a view, and only a test (onImage) looks at it. The
// helpers below are shared with grpc-unary.ts, as the transports share theirs. `npm run bench -- grpc-options` runs
// this pair with one change at a time (GrpcCeilingVariant, handed over in GRPC_VARIANT_ENV); every other run sets none
// and gets the transport's settings, used the transport's way.

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
/**
 * Where `npm run bench -- grpc-options` hands a variant (JSON, GrpcCeilingVariant) to both processes of a run; unset in
 * every other run, which is then the reference: the transport's settings, used the transport's way.
 */
export const GRPC_VARIANT_ENV = 'ITB_GRPC_CEILING_VARIANT';
/** Bound on reaching the receiver: waitForReady needs a deadline of its own. */
const CONNECT_TIMEOUT_MS = 10_000;
/** How long a close lets calls end gracefully before forcing them. */
export const CLOSE_GRACE_MS = 1000;

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
  if (!service || !method)
    throw new ItbError(ErrorCode.internal, `proto/transfer.proto has no ${serviceName}.${methodName}`);
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
 * One change to the grpc pair that the grpc-options bench measures against the reference (no variant): channel options
 * laid over either side's, HTTP/2 settings and a connection window the server sends on each connection (grpc-js 1.14
 * takes no channel option for either), and whether the sender waits for 'drain' as the transport does.
 */
export interface GrpcCeilingVariant {
  /** Laid over the client's channel options (the transport's). */
  client?: grpc.ChannelOptions;
  /** Laid over the server's. */
  server?: grpc.ChannelOptions;
  /** The server's stream and connection receive windows in place of the transport's (65,535: grpc-js as shipped). */
  serverWindowBytes?: number;
  /** More HTTP/2 settings the server sends on each connection as it opens (maxFrameSize, say). */
  serverSettings?: http2.Settings;
  /** Wait for 'drain' once call.write returns false, as the transport's SendQueue does; else write on regardless. */
  waitForDrain?: boolean;
}

const VARIANT_KEYS = new Set(['client', 'server', 'serverWindowBytes', 'serverSettings', 'waitForDrain']);

/** The variant `text` (GRPC_VARIANT_ENV's JSON) names: none when unset or empty; throws on anything else malformed. */
export function parseGrpcVariant(text: string | undefined): GrpcCeilingVariant {
  if (text === undefined || text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ItbError(ErrorCode.config, `${GRPC_VARIANT_ENV}: not JSON (${(err as Error).message}): ${text}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ItbError(ErrorCode.config, `${GRPC_VARIANT_ENV}: expected a JSON object, got ${text}`);
  const record = value as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !VARIANT_KEYS.has(key));
  if (unknown.length > 0)
    throw new ItbError(
      ErrorCode.config,
      `${GRPC_VARIANT_ENV}: unknown ${unknown.join(', ')}; known: ${[...VARIANT_KEYS].join(', ')}`,
    );
  for (const key of ['client', 'server', 'serverSettings'] as const) {
    const options = record[key];
    if (options === undefined) continue;
    const valid =
      typeof options === 'object' &&
      options !== null &&
      !Array.isArray(options) &&
      Object.values(options).every((v) => typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean');
    if (!valid)
      throw new ItbError(
        ErrorCode.config,
        `${GRPC_VARIANT_ENV}: "${key}" must map names to numbers, strings or booleans`,
      );
  }
  const window = record.serverWindowBytes;
  if (
    window !== undefined &&
    (typeof window !== 'number' ||
      !Number.isInteger(window) ||
      window < DEFAULT_WINDOW_BYTES ||
      window > MAX_WINDOW_BYTES)
  )
    throw new ItbError(
      ErrorCode.config,
      `${GRPC_VARIANT_ENV}: "serverWindowBytes" must be a whole number of bytes from ${DEFAULT_WINDOW_BYTES} to ` +
        `${MAX_WINDOW_BYTES}`,
    );
  if (record.waitForDrain !== undefined && typeof record.waitForDrain !== 'boolean')
    throw new ItbError(ErrorCode.config, `${GRPC_VARIANT_ENV}: "waitForDrain" must be true or false`);
  return record as GrpcCeilingVariant;
}

/**
 * A client channel to host:port, ready (connected) or rejected within CONNECT_TIMEOUT_MS; the transport's client
 * options, with `extra` (a bench variant's) laid over them.
 */
export async function openClient(
  host: string,
  port: number,
  maxImageBytes: number,
  extra: grpc.ChannelOptions = {},
): Promise<grpc.Client> {
  const client = new (grpcJs().Client)(hostPort(host, port), grpcJs().credentials.createInsecure(), {
    ...channelOptions(maxImageBytes),
    // A transparent retry would resend an image; off, as in the transport.
    'grpc.enable_retries': 0,
    'grpc.use_local_subchannel_pool': 1,
    ...extra,
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

/**
 * How the server opens each connection's receive windows: the transport's way unless a bench variant says otherwise.
 */
export interface ServerWindows {
  /** Stream and connection receive window; DEFAULT_WINDOW_BYTES leaves them as grpc-js ships (HTTP/2's 64 KiB). */
  windowBytes: number;
  /** More HTTP/2 settings sent on each connection (a bench variant's). */
  settings?: http2.Settings;
}

/**
 * Binds `server` on bindHost:port (0: any free one) and opens each connection's receive windows as
 * the transport does for an admitted call (kit/grpc.ts eachSession: grpc-js has no option for it);
 * returns the port and a bounded close.
 */
export async function serve(
  server: grpc.Server,
  bindHost: string,
  port: number,
  windows: ServerWindows = { windowBytes: MAX_WINDOW_BYTES },
): Promise<{ port: number; close(): Promise<void> }> {
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(hostPort(bindHost, port), grpcJs().ServerCredentials.createInsecure(), (err, actual) =>
      err ? reject(err) : resolve(actual),
    ),
  ).catch((err: unknown) => {
    server.forceShutdown();
    throw err;
  });
  try {
    eachSession(server, (session) => {
      if (windows.windowBytes !== DEFAULT_WINDOW_BYTES) openReceiveWindows(session, windows.windowBytes);
      if (windows.settings !== undefined) session.settings(windows.settings);
    });
  } catch (err) {
    server.forceShutdown();
    throw err;
  }
  return {
    port: bound,
    async close() {
      const shutDown = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      if (!(await settlesWithin(shutDown, CLOSE_GRACE_MS))) server.forceShutdown();
    },
  };
}
