import { once } from 'node:events';
import http2 from 'node:http2';
import { create, toBinary } from '@bufbuild/protobuf';
import type { ReceivedFrame, ReceiverListener, Transport } from '../../services/transports/contract.js';
import { FrameSchema } from '../../services/transports/gen/transfer_pb.js';
import { testLog, type TestDoor } from './harness.js';

// The gRPC protocol by hand, over a plain node:http2 client: what the gRPC transports' tests send
// when the point is what a library would never send (no credential, gzip offered) or what the
// receiver's HTTP/2 settings and windows are, which a library's client hides.

const MIB = 1024 * 1024;
/** The bidi stream of proto/transfer.proto (grpc, grpc-connect). */
export const TRANSFER_PATH = '/itb.ImageTransfer/Transfer';
/** The unary call of proto/transfer.proto (grpc-unary). */
export const PUT_PATH = '/itb.ImageUnary/Put';

/** What a test closes after itself, last opened first (the caller's afterEach runs them). */
export type Closers = (() => Promise<void> | void)[];

/** `transport`'s listener on a free port behind `section`'s door, prepared for the section's `window`. */
export async function openListener(
  transport: Transport,
  section: TestDoor,
  closers: Closers,
  options: { window?: number; maxImageBytes?: number; onFrame?: (frame: ReceivedFrame) => void } = {},
): Promise<{ listener: ReceiverListener; delivered: ReceivedFrame[]; rejects: string[] }> {
  const delivered: ReceivedFrame[] = [];
  const rejects: string[] = [];
  const listener = await transport.listen({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port: 0,
    url: undefined,
    maxImageBytes: options.maxImageBytes ?? MIB,
    log: testLog,
    door: section.door,
    idleTimeoutMs: section.idleTimeoutMs,
    deliver(frame) {
      if (options.onFrame === undefined) delivered.push(frame);
      else options.onFrame(frame);
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' };
    },
    onReject: (reason) => rejects.push(reason),
  });
  closers.push(() => listener.close());
  await section.prepare(listener, options.window ?? 1);
  return { listener, delivered, rejects };
}

/** A plain node:http2 client session to 127.0.0.1:`port`, closed after the test. */
export async function rawSession(port: number, closers: Closers): Promise<http2.ClientHttp2Session> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  closers.push(() => {
    session.destroy();
  });
  await once(session, 'connect');
  return session;
}

/** One Frame message as gRPC puts it on the wire: the 5-byte prefix (flag 0: not compressed), then the message. */
export function frameMessage(header: Buffer, payload: Buffer): Buffer {
  const message = toBinary(FrameSchema, create(FrameSchema, { header, payload }));
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** What one raw call got back: headers, the response's messages (flag and bytes), trailers. */
export interface RawOutcome {
  headers: http2.IncomingHttpHeaders;
  messages: { compressed: number; bytes: Buffer }[];
  trailers: http2.IncomingHttpHeaders;
}

/** Calls `path` (Transfer unless given) on `session` with `headers` (plus the gRPC ones), sends `body`, half-closes. */
export async function rawTransfer(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body: Buffer,
  path = TRANSFER_PATH,
): Promise<RawOutcome> {
  const stream = session.request({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
    ...headers,
  });
  stream.on('error', () => undefined);
  const chunks: Buffer[] = [];
  let responseHeaders: http2.IncomingHttpHeaders = {};
  let trailers: http2.IncomingHttpHeaders = {};
  stream.on('response', (h) => (responseHeaders = h));
  stream.on('trailers', (t) => (trailers = t));
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  stream.end(body);
  await once(stream, 'close');
  // A trailers-only response carries grpc-status in its headers.
  if (trailers['grpc-status'] === undefined) trailers = responseHeaders;
  const data = Buffer.concat(chunks);
  const messages: RawOutcome['messages'] = [];
  for (let at = 0; at + 5 <= data.length; ) {
    const length = data.readUInt32BE(at + 1);
    messages.push({ compressed: data[at]!, bytes: data.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return { headers: responseHeaders, messages, trailers };
}
