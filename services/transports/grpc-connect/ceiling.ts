import { once } from 'node:events';
import http2 from 'node:http2';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { AckSchema, Frame, FrameSchema } from '../gen/transfer_pb.js';
import {
  ACK_MESSAGE_MAX_BYTES,
  ClientSession,
  connectLibraries,
  sessionMemoryMegabytes,
  transferClient,
  transferHandler,
} from '../kit/connect-rpc.js';
import { MAX_WINDOW_BYTES, receiveWindowBytes } from '../kit/http2-windows.js';
import { boundPort, hostPort } from '../../shared/net.js';
import { settlesWithin } from '../../shared/waits.js';
import { CEILING_HEADER_BYTES, headerSeq, type CeilingPair } from '../ceiling-contract.js';

// Connect for Node, as the grpc-connect transport: the gRPC protocol over node:http2, one
// bidirectional Transfer stream per link (proto/transfer.proto, the code of `npm run gen:proto`),
// one Frame message per image and one Ack back, yielded by the handler as soon as the Frame is
// decoded. Same library settings as the transport (no compression either way, message limits
// fitted to the largest image, receive windows that cover what is in flight, session memory for an
// image), and the transmitter's session is the transport's own (kit/connect-rpc.ts); no metadata,
// no door, no gate. The receiver knows no WINDOW here, so its windows are HTTP/2's largest from the
// start, where the transport opens them to the section's WINDOW on admission: once the window
// covers what is in flight, a larger one changes nothing.

/** Protobuf framing of a Frame around header and payload (2 tags, 2 length varints), as the transport counts it. */
const PROTOBUF_OVERHEAD_BYTES = 16;
/** How long a close lets the stream end gracefully before cancelling it. */
const CLOSE_GRACE_MS = 1000;

/** Largest Frame message for `maxImageBytes`. */
const messageBytes = (maxImageBytes: number): number => maxImageBytes + CEILING_HEADER_BYTES + PROTOBUF_OVERHEAD_BYTES;

/** A request stream fed by send(): the driver bounds what it holds (WINDOW images). */
class FrameStream implements AsyncIterable<MessageInitShape<typeof FrameSchema>> {
  private readonly held: MessageInitShape<typeof FrameSchema>[] = [];
  private waiting: ((result: IteratorResult<MessageInitShape<typeof FrameSchema>>) => void) | undefined;
  private ended = false;

  push(frame: MessageInitShape<typeof FrameSchema>): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) waiting({ value: frame, done: false });
    else this.held.push(frame);
  }

  end(): void {
    this.ended = true;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<MessageInitShape<typeof FrameSchema>> {
    const done = (): Promise<IteratorResult<MessageInitShape<typeof FrameSchema>>> => {
      this.end();
      return Promise.resolve({ value: undefined, done: true });
    };
    return {
      next: () => {
        const frame = this.held.shift();
        if (frame !== undefined) return Promise.resolve({ value: frame, done: false });
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.waiting = resolve;
        });
      },
      return: done,
      throw: done,
    };
  }
}

/** The grpc-connect transport's ceiling: one Frame message per image on a bidi stream, an Ack back. */
export const grpcConnectCeiling: CeilingPair = {
  transport: 'grpc-connect',
  how:
    '@connectrpc/connect-node (gRPC protocol, node:http2): one bidi Transfer stream fed Frame{header, payload} ' +
    'per image; the handler yields an Ack per Frame',
  async receive(options) {
    const lib = await connectLibraries();
    async function* transfer(requests: AsyncIterable<Frame>): AsyncIterable<MessageInitShape<typeof AckSchema>> {
      for await (const frame of requests) {
        const header = Buffer.from(frame.header.buffer, frame.header.byteOffset, frame.header.byteLength);
        const seq = headerSeq(header);
        options.arrived(seq);
        options.onImage?.(seq, Buffer.from(frame.payload.buffer, frame.payload.byteOffset, frame.payload.byteLength));
        yield { seq };
      }
    }
    const handler = transferHandler(lib, transfer, messageBytes(options.maxImageBytes));
    const server = http2.createServer(
      {
        settings: { initialWindowSize: MAX_WINDOW_BYTES, enablePush: false },
        maxSessionMemory: sessionMemoryMegabytes(messageBytes(options.maxImageBytes)),
      },
      handler,
    );
    const sessions = new Set<http2.ServerHttp2Session>();
    server.on('session', (session: http2.ServerHttp2Session) => {
      sessions.add(session);
      session.once('close', () => sessions.delete(session));
      session.setLocalWindowSize(MAX_WINDOW_BYTES);
    });
    server.listen(options.port, options.bindHost);
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([err]) => Promise.reject(err))]);
    return {
      port: boundPort(server.address()),
      async close() {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const session of sessions) session.close();
        if (!(await settlesWithin(closed, CLOSE_GRACE_MS))) for (const session of sessions) session.destroy();
        await closed;
      },
    };
  },
  async connect(options) {
    const lib = await connectLibraries();
    const baseUrl = `http://${hostPort(options.host, options.port)}`;
    const session = await ClientSession.open(baseUrl, {
      receiveWindowBytes: receiveWindowBytes(options.window, ACK_MESSAGE_MAX_BYTES),
      sendMessageBytes: messageBytes(options.maxImageBytes),
    });
    const client = transferClient(lib, baseUrl, session, messageBytes(options.maxImageBytes));
    const frames = new FrameStream();
    const cancel = new AbortController();
    let closing = false;
    const ended = (async () => {
      try {
        for await (const ack of client.transfer(frames, { signal: cancel.signal })) options.onAck(ack.seq);
        if (!closing) options.onFailure('grpc-connect: the receiver ended the stream');
      } catch (err) {
        if (!closing) options.onFailure(`grpc-connect: ${err instanceof Error ? err.message : String(err)}`);
      }
    })();
    return {
      send(_seq, header, image) {
        frames.push({ header, payload: image });
      },
      async close() {
        closing = true;
        frames.end();
        if (!(await settlesWithin(ended, CLOSE_GRACE_MS))) cancel.abort();
        session.close(true);
      },
    };
  },
};
