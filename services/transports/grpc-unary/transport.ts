import type * as grpc from '@grpc/grpc-js';
import { secretsEqual } from '../../core/wire/auth.js';
import { ErrorCode, ItbError } from '../../core/errors.js';
import { commandOf, decodeFrameHeader, type Ack } from '../../core/wire/frame.js';
import { hostPort } from '../../shared/net.js';
import { once } from '../../shared/once.js';
import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { frameGate } from '../kit/gate.js';
import { receiveWindowBytes } from '../kit/http2-windows.js';
import { LinkGuard } from '../kit/link-guard.js';
import { SendQueue } from '../kit/send-queue.js';
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
import {
  COMMAND_LANE,
  dropConnection,
  inOrder,
  isCommandCall,
  LANE_METADATA_KEY,
  newConnection,
  peerOf,
  type Connection,
} from './calls.js';

// gRPC unary: one `ImageUnary.Put(Frame) -> Ack` call per image (proto/transfer.proto), up to
// WINDOW calls in flight at once, multiplexed as HTTP/2 streams on ONE channel (one connection).
// Channel options, message limits, the connect loop, the bearer metadata, the door interceptor and
// the capped listener are kit/grpc.ts's. Per image, grpc-js copies the payload twice on send (protobuf
// encode, then the 5-byte gRPC message prefix) and once on receive (the message is assembled from
// HTTP/2 DATA frames); protobuf decode hands `payload` out as a view.
//
// Order: HTTP/2 interleaves the DATA frames of concurrent calls, so their messages complete in any
// order; the receiver runs the handler in the order the calls opened (the order of send()), so
// images arrive, and are answered, in order. A finished call may so wait for earlier ones: its
// arrival is stamped when its message is in hand, before that wait, and the stamp is passed to the
// gate, so the wait is in its round trip (its ack leaves after it), not in its one-way time.
// A call ends with its Ack, or with INVALID_ARGUMENT when the frame gate dropped its image
// (reported there): no ack, and the link goes on, as when a stream transport drops a bad frame.
// Any other error status fails the link.
//
// The door admits a CONNECTION, not a call (a call per image would need WINDOW passes): the first
// call on a connection takes the section's pass with its credential, every later call on it must
// present the same credential (checked before its message is read, as for every gRPC call), and
// the pass is released when the connection closes, so the door is asked once per link and no other
// connection can take the section's place between two images. `drop` ends every call of the
// connection and closes it. A connection holds at most the section's WINDOW calls, each with one
// image under way: more are refused before their message is read. So an admitted connection can
// make the receiver hold up to WINDOW partial images (a stream transport: one).
//
// Commands (COMMAND_RATE): sendCommand makes a Put call like an image's, marked in its metadata
// (itb-lane: command). The receiver hands a marked call over as soon as its message is in hand, out
// of the images' order (a command passes the images opened before it: the point of the lane), and
// counts marked calls apart from the WINDOW image calls, at most MAX_COMMAND_CALLS_PER_CONNECTION
// open at once; a marked call that carries an image's seq is dropped, so images keep their order.
// An admitted connection can so hold that many partial messages more.

const SERVICE_NAME = 'itb.ImageUnary';
/** Transport name, in every report of the receiver side. */
const NAME = 'grpc-unary';
/**
 * Image calls an HTTP/2 connection may have open at once: WINDOW's upper bound (config.ts), so a link
 * never waits on the library for a stream. The section's WINDOW narrows it per connection.
 */
const MAX_CALLS_PER_CONNECTION = 1024;
/**
 * The status a receiver ends a call with when the frame gate dropped its image (and reported why).
 * grpc-js never produces it itself, so the transmitter can tell "image dropped" from a broken link.
 */
const droppedImageStatus = (): grpc.status => grpcJs().status.INVALID_ARGUMENT;
/**
 * Command calls one connection may have open at once, beside its WINDOW image calls: the transmitter holds a command
 * past it until an earlier one is answered (a wait in that command's time); the receiver refuses one more.
 */
const MAX_COMMAND_CALLS_PER_CONNECTION = 16;

/** True when `headerBytes` decode to an image's header (not a command's); a bad header is the gate's to report. */
function carriesImage(headerBytes: Buffer, maxImageBytes: number): boolean {
  try {
    return commandOf(decodeFrameHeader(headerBytes, maxImageBytes).seq) === undefined;
  } catch {
    return false;
  }
}

/** The Put rpc. */
function loadPutDefinition(): ProtoMethod<FrameMessage, AckMessage> {
  return loadProtoMethod<FrameMessage, AckMessage>(SERVICE_NAME, 'Put');
}

/**
 * Connects the transmitter side: one channel; send() starts a unary call at once, so up to WINDOW
 * calls share the connection. grpc-js buffers each message on its HTTP/2 stream: it has no
 * backpressure to wait on, and the window bounds what it holds. With `commandLane`, sendCommand
 * starts a marked call the same way, at most MAX_COMMAND_CALLS_PER_CONNECTION at once.
 */
async function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const { method } = loadPutDefinition();
  const target = hostPort(options.host, options.port);
  const log = options.log.child({ transport: NAME, target });
  const client = await connectClient(target, options);
  const guard = new LinkGuard(options.onFailure, `gRPC unary calls to ${target}`);
  // grpc-js clones the metadata for each call, so one object serves the whole link (and one its commands).
  const metadata = bearerMetadata(options.credential);
  const commandMetadata = bearerMetadata(options.credential);
  commandMetadata.set(LANE_METADATA_KEY, COMMAND_LANE);
  const inFlight = new Set<grpc.ClientUnaryCall>();
  let closing = false;

  const answered = (err: grpc.ServiceError | null, message: AckMessage | undefined): void => {
    if (closing) return; // CANCELLED by close()
    if (err === null) {
      const ack = message === undefined ? undefined : ackFromMessage(message);
      if (ack === undefined) guard.failWith(`the receiver sent an ack with unknown status ${message?.status}`);
      else guard.ack(options.onAck, ack);
    } else if (err.code === droppedImageStatus()) {
      // Dropped by the receiver's gate and reported there, as a stream transport drops a bad
      // frame: no ack, so the image stays unacknowledged; the link goes on.
      log.warn({ details: err.details }, 'the receiver dropped an image (its log says why)');
    } else if (err.code === grpcJs().status.UNAUTHENTICATED) {
      guard.fail(
        new ItbError(
          ErrorCode.refused,
          `${guard.what}: the receiver did not take this section's credential (${err.message}; its log says why)`,
          { cause: err },
        ),
      );
    } else {
      guard.failWith(`call failed: ${err.message}`, err);
    }
  };

  /** Starts one Put call presenting `callMetadata`; `onEnd` runs when it is answered or ends otherwise. */
  const startCall = (header: Buffer, payload: Buffer, callMetadata: grpc.Metadata, onEnd?: () => void): void => {
    // No deadline: the transmitter's IMAGE_TIMEOUT_MS governs a late ack (as for every
    // transport), and the receiver ends a call that stalls mid-message after as long.
    const call = client.makeUnaryRequest<FrameMessage, AckMessage>(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      { header, payload },
      callMetadata,
      (err, message) => {
        // grpc-js calls back on a later tick (never from inside makeUnaryRequest), so `call` is set.
        inFlight.delete(call);
        onEnd?.();
        answered(err, message);
      },
    );
    inFlight.add(call);
  };
  const queue = new SendQueue(
    (header, payload) => {
      startCall(header, payload, metadata);
      return undefined;
    },
    (err) => guard.failWith(`send failed: ${err.message}`, err),
  );
  // Command calls open now, and the wait of a command held for want of one.
  let commandCalls = 0;
  let commandSlot: (() => void) | undefined;
  const commandEnded = (): void => {
    commandCalls--;
    const wake = commandSlot;
    commandSlot = undefined;
    wake?.();
  };
  const commands =
    options.commandLane === true
      ? new SendQueue(
          (header, payload) => {
            startCall(header, payload, commandMetadata, commandEnded);
            commandCalls++;
            if (commandCalls < MAX_COMMAND_CALLS_PER_CONNECTION) return undefined;
            return new Promise<void>((resolve) => {
              commandSlot = resolve;
            });
          },
          (err) => guard.failWith(`command send failed: ${err.message}`, err),
        )
      : undefined;

  // Between images no call is open to notice a lost connection, so the channel's state is watched:
  // leaving READY (the receiver closed or went away) fails the link, and nothing reconnects.
  const channel = client.getChannel();
  const watchChannel = (): void => {
    if (closing) return;
    const state = channel.getConnectivityState(false);
    if (state !== grpcJs().connectivityState.READY) {
      guard.failWith(`the connection to the receiver closed (channel ${grpcJs().connectivityState[state]})`);
      return;
    }
    channel.watchConnectivityState(state, Infinity, watchChannel);
  };
  watchChannel();

  return guard.link(
    queue,
    async () => {
      closing = true;
      for (const call of inFlight) call.cancel();
      inFlight.clear();
      client.close();
      log.debug('gRPC unary link closed');
    },
    commands === undefined ? undefined : () => commands,
  );
}

/** What the receiver's door and handler share with its listen(). */
interface ReceiverState {
  /** The open section's WINDOW: calls one connection may have open; the HTTP/2 cap until a section opens. */
  callsPerConnection: number;
  /** close() began: a call that ends now lost nothing worth reporting. */
  closing: boolean;
  served: CappedServer | undefined;
}

/**
 * Starts the receiver side: a gRPC server whose Put handler passes the frame through the gate and answers with its ack.
 */
async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const { service } = loadPutDefinition();
  const log = options.log.child({ transport: NAME });
  const connections = new Map<string, Connection>();
  /** When each call's message was in hand, before it waited for its turn: the image's arrival. */
  const inHandAt = new WeakMap<object, bigint>();
  const state: ReceiverState = { callsPerConnection: MAX_CALLS_PER_CONNECTION, closing: false, served: undefined };

  // An admitted call that ended with no answer lost its image: grpc-js refused the message before
  // the handler saw it (over the limit, undecodable: it answered the transmitter with that status),
  // or the transmitter cancelled the call or went away.
  const unanswered = (from: string): void => {
    if (state.closing) return;
    options.onReject(
      `${from}: call ended before its image was answered: grpc-js refused the message ` +
        (`(over the ` +
          maxMessageBytes(options.maxImageBytes) +
          `-byte limit, or undecodable) or the transmitter cancelled the call or went away`),
    );
  };
  const server = new (grpcJs().Server)({
    ...sharedChannelOptions(options.maxImageBytes),
    // WINDOW's image calls at its largest and the command calls beside them: none waits for a stream.
    'grpc.max_concurrent_streams': MAX_CALLS_PER_CONNECTION + MAX_COMMAND_CALLS_PER_CONNECTION,
    // A connection with no call open (one that never made one, or whose calls were refused) is closed.
    'grpc.max_connection_idle_ms': options.idleTimeoutMs,
    // The order after the door (interceptors run in array order, the first nearest the wire): only admitted calls
    // take a turn.
    interceptors: [
      doorInterceptor(options, NAME, connectionDoor(options, connections, state), unanswered),
      inOrder(connections, inHandAt),
    ],
  });
  server.addService(service, { Put: putHandler(options, connections, inHandAt) });

  const listening = await serveCapped(server, options, NAME, 'gRPC unary', (socket) => {
    const peer = peerOf(socket);
    const connection = newConnection(socket, frameGate(options, `${NAME} from ${peer}`));
    connections.set(peer, connection);
    socket.once('close', () => {
      connection.pass?.release();
      if (connections.get(peer) === connection) connections.delete(peer);
    });
  });
  state.served = listening;
  log.debug({ port: listening.port }, 'gRPC unary receiver listening');

  return {
    port: listening.port,
    openSection(section) {
      state.callsPerConnection = Math.min(MAX_CALLS_PER_CONNECTION, section.window);
      return Promise.resolve();
    },
    closeSection() {
      state.callsPerConnection = MAX_CALLS_PER_CONNECTION;
      return Promise.resolve();
    },
    close: once(async () => {
      state.closing = true;
      await listening.close();
      log.debug('gRPC unary receiver closed');
    }),
  };
}

/**
 * The door of a connection, not of a call: the connection's first call takes the section's pass with its credential,
 * every later call on it must present the same, and one connection holds at most the section's WINDOW image calls
 * and MAX_COMMAND_CALLS_PER_CONNECTION command calls at once. The door's drop ends every call of the connection and
 * closes it.
 */
function connectionDoor(
  options: ReceiverOptions,
  connections: Map<string, Connection>,
  state: ReceiverState,
): AdmitCall {
  return (presented, from, peer, end, metadata) => {
    const connection = connections.get(peer);
    if (connection === undefined || connection.dropped)
      return { code: grpcJs().status.UNAVAILABLE, details: 'the connection is closing' };
    if (connection.pass === undefined) {
      const pass = options.door.admit(presented, from, () => dropConnection(connection));
      if (pass === undefined)
        return { code: grpcJs().status.UNAUTHENTICATED, details: 'this call does not belong to the open section' };
      connection.pass = pass;
      connection.admitted = presented;
      state.served?.openWindows(
        peer,
        receiveWindowBytes(state.callsPerConnection, maxMessageBytes(options.maxImageBytes)),
      );
    } else if (
      presented === undefined ||
      connection.admitted === undefined ||
      !secretsEqual(presented, connection.admitted)
    ) {
      options.door.refuse(from, 'call refused: its credential is not the one its connection was admitted with');
      return { code: grpcJs().status.UNAUTHENTICATED, details: 'this call does not belong to the open section' };
    }
    const command = isCommandCall(metadata);
    const open = command ? connection.commandCalls : connection.calls;
    const cap = command ? MAX_COMMAND_CALLS_PER_CONNECTION : state.callsPerConnection;
    if (open.size >= cap) {
      const what = command ? 'command calls open' : "calls open (the section's WINDOW)";
      options.door.refuse(from, `call refused: the connection already has ${cap} ${what}`);
      return {
        code: grpcJs().status.RESOURCE_EXHAUSTED,
        details: `more than ${cap} ${command ? 'command ' : ''}calls open at once`,
      };
    }
    open.add(end);
    return { release: () => open.delete(end) };
  };
}

/**
 * The Put handler: the call's frame through its connection's gate, stamped when its message was in hand (`inHandAt`),
 * answered with its ack; a dropped image's call ends with an error status instead, so it never looks acknowledged.
 */
function putHandler(
  options: ReceiverOptions,
  connections: ReadonlyMap<string, Connection>,
  inHandAt: WeakMap<object, bigint>,
): grpc.handleUnaryCall<FrameMessage, AckMessage> {
  return (call, answer) => {
    const peer = call.getPeer();
    const gate = connections.get(peer)?.gate ?? frameGate(options, `${NAME} from ${peer}`);
    const { header: headerBytes, payload } = call.request;
    let ack: Ack | undefined;
    if (!Buffer.isBuffer(headerBytes) || !Buffer.isBuffer(payload)) gate.reject('frame lacks its header or payload');
    else if (isCommandCall(call.metadata) && carriesImage(headerBytes, options.maxImageBytes))
      gate.reject("a call marked a command's carries an image: dropped, as it would pass the images before it");
    else ack = gate.frame(headerBytes, payload, inHandAt.get(call.request));
    if (ack === undefined)
      answer({ code: droppedImageStatus(), details: 'the receiver dropped this image (its log says why)' });
    else answer(null, ackMessage(ack));
  };
}

/** gRPC unary over @grpc/grpc-js: one call per image, up to WINDOW calls in flight on one connection. */
export const grpcUnaryTransport: Transport = {
  name: NAME,
  label: 'gRPC unary',
  summary: {
    libraries: '@grpc/grpc-js',
    image: 'one unary call per image, `WINDOW` calls in flight on one channel',
    ack: "the call's answer",
  },
  traits: {
    baseline: false,
    commandLane: {
      interleaves: true,
      how:
        "a unary call of its own on the link's HTTP/2 connection, marked a command's so the receiver hands it over " +
        'at once rather than after the image calls opened before it; HTTP/2 interleaves its DATA frames with theirs',
    },
  },
  library: {
    packages: ['@grpc/grpc-js', '@grpc/proto-loader'],
  },
  deployment: {
    defaultRun: false,
    setting: {
      kind: 'port',
      envVar: 'GRPC_UNARY_PORT',
      defaultPort: 50052,
      description: 'gRPC listener for unary calls',
    },
  },
  connect,
  listen,
};
