import type net from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import type { DoorPass } from '../contract.js';
import type { FrameGate } from '../kit/gate.js';
import { grpcJs, type EndCall } from '../kit/grpc.js';

// How grpc-unary's receiver keeps the calls of one connection: the door's record of the
// connection, the order its image calls are handled in (the order they opened, whatever order
// HTTP/2 completes them in), and the mark of a command's call, which takes no turn.

/** The metadata key and value that mark a call as a command's (COMMAND_RATE's lane). */
export const LANE_METADATA_KEY = 'itb-lane';
/** The value of LANE_METADATA_KEY on a command's call. */
export const COMMAND_LANE = 'command';

/** True when a call's metadata marks it as a command's. */
export function isCommandCall(metadata: grpc.Metadata): boolean {
  return metadata.get(LANE_METADATA_KEY)[0] === COMMAND_LANE;
}

/** One connection the listener accepted, and what the door decided for it. */
export interface Connection {
  socket: net.Socket;
  /** The section's pass, taken by the connection's first admitted call, released when the connection closes. */
  pass: DoorPass | undefined;
  /** The credential the door admitted: every later call on the connection presents the same. */
  admitted: string | undefined;
  /** How to end each admitted image call still open on the connection. */
  calls: Set<EndCall>;
  /** How to end each admitted command call (marked, out of the images' order) still open on it. */
  commandCalls: Set<EndCall>;
  /** The section ended: the connection takes no more calls and is closing. */
  dropped: boolean;
  gate: FrameGate;
  /** Its admitted calls in the order they opened (the order the transmitter sent their images). */
  order: Turn[];
  /** True while `order` is being worked through: a delivery that ends a call must not restart it. */
  pumping: boolean;
}

/** One admitted call's place in its connection's order. */
interface Turn {
  /** Lets the handler run on the call's message (a unary handler runs on the half-close); set once both are in. */
  release: (() => void) | undefined;
  /** The call ended (answered, refused, cancelled): it no longer holds up the calls after it. */
  ended: boolean;
}

/**
 * Runs the handler on whole messages in the order their calls opened: concurrent calls finish in
 * whatever order HTTP/2 interleaves their DATA frames, but images must arrive in the order they
 * were sent. A finished call waits only until the calls before it were handled or ended.
 */
function pump(connection: Connection): void {
  if (connection.pumping) return;
  connection.pumping = true;
  try {
    const { order } = connection;
    for (let head = order[0]; head !== undefined; head = order[0]) {
      // Dropped (possibly by a delivery just now): its calls are ended, none is handled any more.
      if (connection.dropped) {
        order.length = 0;
        break;
      }
      if (!head.ended) {
        if (head.release === undefined) break;
        const release = head.release;
        head.release = undefined;
        head.ended = true;
        order.shift();
        release();
        continue;
      }
      order.shift();
    }
  } finally {
    connection.pumping = false;
  }
}

/** A socket's address as grpc-js's call.getPeer() words it, so calls find their connection. */
export function peerOf(socket: net.Socket): string {
  return `${socket.remoteAddress}:${socket.remotePort}`;
}

/** The record of a connection the listener just accepted: no call admitted yet. */
export function newConnection(socket: net.Socket, gate: FrameGate): Connection {
  return {
    socket,
    pass: undefined,
    admitted: undefined,
    calls: new Set(),
    commandCalls: new Set(),
    dropped: false,
    gate,
    order: [],
    pumping: false,
  };
}

/** The door's drop of a connection: every call of it ended, then the connection closed. */
export function dropConnection(connection: Connection): void {
  connection.dropped = true;
  for (const end of [...connection.calls, ...connection.commandCalls])
    end(grpcJs().status.UNAVAILABLE, 'the section ended');
  // The statuses are queued on the HTTP/2 session: they get a turn to leave before the connection closes.
  setImmediate(() => connection.socket.destroy());
}

/**
 * The interceptor that holds each image call's handler until the calls opened before it were handled or ended (pump),
 * and stamps each message when grpc-js hands it over whole (a microtask after the HTTP/2 DATA frame with its last
 * byte), in `inHandAt`, where the handler finds it again through the message object (grpc-js passes it on unchanged
 * as `call.request`). It comes after the door, so only admitted calls take a turn.
 */
export function inOrder(
  connections: ReadonlyMap<string, Connection>,
  inHandAt: WeakMap<object, bigint>,
): grpc.ServerInterceptor {
  return (_methodDescriptor, call) => {
    let connection: Connection | undefined;
    let turn: Turn | undefined;
    const end = (): void => {
      if (turn === undefined || connection === undefined || turn.ended) return;
      turn.ended = true;
      turn.release = undefined;
      pump(connection);
    };
    return new (grpcJs().ServerInterceptingCall)(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata, nextMetadata) {
            connection = connections.get(call.getPeer());
            // A command takes no turn: it is handed over as soon as its message is in hand.
            if (connection !== undefined && !isCommandCall(metadata)) {
              turn = { release: undefined, ended: false };
              connection.order.push(turn);
            }
            nextMetadata(metadata);
          },
          onReceiveMessage(message, nextMessage) {
            if (typeof message === 'object' && message !== null) inHandAt.set(message, process.hrtime.bigint());
            nextMessage(message);
          },
          onReceiveHalfClose(nextHalfClose) {
            if (turn === undefined || connection === undefined || turn.ended) {
              nextHalfClose();
              return;
            }
            turn.release = nextHalfClose;
            pump(connection);
          },
          onCancel: end,
        });
      },
      sendStatus(status, nextStatus) {
        end();
        nextStatus(status);
      },
    });
  };
}
