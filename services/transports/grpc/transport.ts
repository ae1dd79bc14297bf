import type * as grpc from '@grpc/grpc-js';
import { hostPort } from '../../shared/net.js';
import { once } from '../../shared/once.js';
import { settlesWithin } from '../../shared/waits.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { frameGate } from '../kit/gate.js';
import {
  ackFromMessage,
  ackMessage,
  bearerMetadata,
  connectClient,
  doorInterceptor,
  grpcJs,
  loadProtoMethod,
  maxMessageBytes,
  serveCapped,
  sharedChannelOptions,
  type AckMessage,
  type AdmitCall,
  type CappedServer,
  type FrameMessage,
  type ProtoMethod,
} from '../kit/grpc.js';
import { receiveWindowBytes } from '../kit/http2-windows.js';
import { LinkGuard } from '../kit/link-guard.js';
import { SendQueue } from '../kit/send-queue.js';

// gRPC: one bidirectional `Transfer` stream per link (proto/transfer.proto), one Frame message per
// image and one Ack message back; under COMMAND_RATE a second one on the same channel carries the
// commands. Images are not chunked: a thin grpc-js client measured no gain from it, since every
// chunk is still protobuf-encoded and HTTP/2-framed. Per image, grpc-js copies the payload twice on
// send (protobuf encode, then the 5-byte gRPC message prefix) and once on receive (the message is
// assembled from HTTP/2 DATA frames); protobuf decode hands `payload` out as a view.
// The call's metadata carries the section's credential as a bearer token; a server interceptor
// checks it before the call reads any message, so a refused call holds at most what HTTP/2 flow
// control lets in before anyone reads (one 64 KiB window per connection). An admitted call's
// connection gets windows for what WINDOW puts in flight (grpc-js would keep 64 KiB: each 64 KiB of
// an image would wait a round trip; kit/grpc.ts sessionsByPeer says how). What it shares with
// grpc-unary.ts (proto loading, channel options, connect loop, door interceptor, capped listener)
// is kit/grpc.ts's; grpc-unary differs only in how images travel and how its door counts calls.

/** How long close() lets a stream finish (half-close answered) before cancelling it. */
const STREAM_CLOSE_GRACE_MS = 1000;
/** Calls one connection may have open at once: a transmitter opens one, or two with the command lane. */
const MAX_STREAMS_PER_CONNECTION = 4;

/** The bidi Transfer rpc. */
function loadTransferDefinition(): ProtoMethod<FrameMessage, AckMessage> {
  return loadProtoMethod<FrameMessage, AckMessage>('itb.ImageTransfer', 'Transfer');
}

/** One bidi Transfer stream of a link: what it sends goes through `queue`. */
interface TransferStream {
  queue: SendQueue;
  /** Half-closes the stream and lets the receiver answer with OK; a stuck peer is cancelled instead. */
  close(): Promise<void>;
}

/**
 * Opens one bidi Transfer stream on `client`, presenting the section's credential: its acks go to `onAck` and any error
 * or end of it fails the link through `guard`, worded with `lane` ("command stream"; undefined: the images').
 */
function openStream(
  client: grpc.Client,
  method: ProtoMethod<FrameMessage, AckMessage>['method'],
  options: TransmitterOptions,
  guard: LinkGuard,
  lane?: string,
): TransferStream {
  const on = lane === undefined ? '' : ` on the ${lane}`;
  const call = client.makeBidiStreamRequest<FrameMessage, AckMessage>(
    method.path,
    method.requestSerialize,
    method.responseDeserialize,
    bearerMetadata(options.credential),
  );
  let streamFinished = false;
  const finished = new Promise<void>((resolve) => {
    call.once('status', () => {
      streamFinished = true;
      resolve();
    });
  });
  // Once the stream has its status or an error, no 'drain' is coming: a send waiting for one goes on.
  let gone = false;
  const markGone = (): void => {
    gone = true;
  };
  call.once('status', markGone);
  call.once('error', markGone);
  /**
   * Settles at the next 'drain', status or error, its listeners then removed: not a race against one promise for the
   * stream, which would keep a reaction per wait until the link ends (a slow leak over a long run of small images).
   */
  const drained = (): Promise<void> =>
    new Promise<void>((resolve) => {
      if (gone) {
        resolve();
        return;
      }
      const done = (): void => {
        call.off('drain', done);
        call.off('status', done);
        call.off('error', done);
        resolve();
      };
      call.once('drain', done);
      call.once('status', done);
      call.once('error', done);
    });

  call.on('data', (message: AckMessage) => {
    const ack = ackFromMessage(message);
    if (ack === undefined) {
      guard.failWith(`the receiver sent an ack with unknown status ${message.status}${on}`);
      return;
    }
    guard.ack(options.onAck, ack);
  });
  // The listener stays for the stream's whole life: grpc-js emits 'error' (CANCELLED) even after close().
  call.on('error', (err) => guard.failWith(`failed${on}: ${err.message}`, err));
  call.on('end', () => guard.failWith(`the receiver ended the ${lane ?? 'stream'}`));

  const queue = new SendQueue(
    (header, payload) => {
      if (call.write({ header, payload } satisfies FrameMessage)) return undefined;
      // grpc-js took the message but is over its buffer mark: the next waits for 'drain' (or the stream's end).
      return drained();
    },
    (err) => guard.failWith(`send failed${on}: ${err.message}`, err),
  );
  return {
    queue,
    async close() {
      if (streamFinished) return;
      call.end();
      if (!(await settlesWithin(finished, STREAM_CLOSE_GRACE_MS))) call.cancel();
    },
  };
}

/**
 * Connects the transmitter side: one channel, one bidi stream for the images and, with `commandLane`, a second one on
 * the same channel (so the same HTTP/2 connection) for the commands, whose DATA frames HTTP/2 interleaves with the
 * image being written rather than queue them behind it.
 */
async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const { method } = loadTransferDefinition();
  const target = hostPort(options.host, options.port);
  const log = options.log.child({ transport: 'grpc', target });
  const client = await connectClient(target, options);

  const guard = new LinkGuard(options.onFailure, `gRPC stream to ${target}`);
  const images = openStream(client, method, options, guard);
  // The command stream opens at the first command (LinkGuard.link says why).
  let commands: TransferStream | undefined;
  const openCommands = (): SendQueue => {
    commands = openStream(client, method, options, guard, 'command stream');
    return commands.queue;
  };

  return guard.link(
    images.queue,
    async () => {
      await Promise.all([images.close(), commands?.close()]);
      client.close();
      log.debug('gRPC link closed');
    },
    options.commandLane === true ? openCommands : undefined,
  );
}

/** Starts the receiver side: a gRPC server whose Transfer handler passes each frame through the gate and acks it. */
async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const { service } = loadTransferDefinition();
  const log = options.log.child({ transport: 'grpc' });
  // The windows an admitted call's connection gets: what the open section's WINDOW puts in flight.
  let admittedWindowBytes = receiveWindowBytes(1, maxMessageBytes(options.maxImageBytes));
  let served: CappedServer | undefined;
  const admitCall: AdmitCall = (presented, from, peer, end) => {
    const pass = options.door.admit(presented, from, () => end(grpcJs().status.UNAVAILABLE, 'the section ended'));
    if (pass === undefined)
      return { code: grpcJs().status.UNAUTHENTICATED, details: 'this call does not belong to the open section' };
    served?.openWindows(peer, admittedWindowBytes);
    return pass;
  };
  const server = new (grpcJs().Server)({
    ...sharedChannelOptions(options.maxImageBytes),
    'grpc.max_concurrent_streams': MAX_STREAMS_PER_CONNECTION,
    // A connection with no call open (one that never made one, or whose call was refused) is closed.
    'grpc.max_connection_idle_ms': options.idleTimeoutMs,
    interceptors: [doorInterceptor(options, 'grpc', admitCall)],
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
      if (ack !== undefined) call.write(ackMessage(ack));
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
          (`(over the ` +
            maxMessageBytes(options.maxImageBytes) +
            `-byte limit, or undecodable) or the transmitter went away`),
      );
    });
    call.on('error', (err: Error) => {
      if (!closing) gate.reject(`stream failed: ${err.message}`);
    });
  };
  server.addService(service, { Transfer: transfer });

  const listening = await serveCapped(server, options, 'grpc', 'gRPC');
  served = listening;
  log.debug({ port: listening.port }, 'gRPC receiver listening');

  return {
    port: listening.port,
    openSection(section) {
      admittedWindowBytes = receiveWindowBytes(section.window, maxMessageBytes(options.maxImageBytes));
      return Promise.resolve();
    },
    close: once(async () => {
      closing = true;
      await listening.close();
      log.debug('gRPC receiver closed');
    }),
  };
}

/** gRPC over @grpc/grpc-js: one bidirectional stream per link, one message per image. */
export const grpcTransport: Transport = {
  name: 'grpc',
  label: 'gRPC',
  summary: {
    libraries: '@grpc/grpc-js',
    image: 'one message on a bidirectional stream',
    ack: 'message on the stream',
  },
  traits: {
    baseline: false,
    commandLane: {
      interleaves: true,
      how:
        'a second bidi stream on the same channel and HTTP/2 connection: HTTP/2 interleaves its DATA frames with ' +
        "the image being written, so a command waits for the connection's turns, not for the whole image",
    },
    // The image stream, and the command stream a link opens when COMMAND_RATE is set. The receiver is not told
    // whether it is (the section's plan does not carry it), so the door always admits the second call; it costs the
    // section's own transmitter at most one more image under way, which the door's bound counts.
    connectionsPerLink: () => 2,
  },
  library: {
    packages: ['@grpc/grpc-js', '@grpc/proto-loader'],
  },
  deployment: {
    defaultRun: true,
    setting: {
      kind: 'port',
      envVar: 'GRPC_PORT',
      defaultPort: 50051,
      description: 'gRPC listener (bidirectional stream)',
    },
  },
  connect,
  listen,
};
