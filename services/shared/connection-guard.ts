import type http from 'node:http';
import type net from 'node:net';
import type { ConnectionLimits } from '../core/control/control-protocol.js';

// A plain cap on connections cannot hold an HTTP port open to anyone: a flood of connections that
// send nothing, or their request head a byte at a time, fills the cap and the next real request
// (GET /health) is refused with them. So the connections still waiting for a whole request head
// are bounded apart, and one more closes the oldest of them: a real request, which sends its head
// at once, is served before the flood's next arrivals push it out. A connection with a request
// under way is never pushed out; idle again after its response, it waits like a new one.

/** Why the guard closed a connection, for the log. */
export type GuardClosure = 'headers timeout' | 'pushed out by a newer waiting connection' | 'idle after its requests';

/** Where a closed connection came from, read when it arrived (a socket the peer already closed has no address). */
export interface GuardPeer {
  address: string;
  port: number;
}

/** What a guarded server's owner can tell the guard. */
export interface ConnectionGuard {
  /** Connections now waiting for a whole request head. */
  waiting(): number;
  /**
   * `socket` was upgraded to another protocol (a WebSocket the server took): never waiting again, its protocol's own
   * timeouts apply.
   */
  upgraded(socket: net.Socket): void;
}

/**
 * Applies `limits` to `server` (before it listens): the waiting-connection bound and its
 * headers timeout, the overall cap, node's keep-alive and request timeouts. `onClosed` hears of
 * every connection the guard closed. An upgrade request stays waiting until its owner calls
 * upgraded(): one it refuses is closed like any other.
 */
export function guardConnections(
  server: http.Server,
  limits: Readonly<ConnectionLimits>,
  onClosed: (peer: GuardPeer, why: GuardClosure) => void,
): ConnectionGuard {
  server.maxConnections = limits.maxConnections;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  // node checks this only every connectionsCheckingInterval (30 s); the timers below are the bound.
  server.headersTimeout = limits.headersTimeoutMs;
  // Oldest first: a Map keeps insertion order.
  const waiting = new Map<net.Socket, NodeJS.Timeout>();
  const requestsUnderWay = new WeakMap<net.Socket, number>();
  const peers = new WeakMap<net.Socket, GuardPeer>();
  const stopWaiting = (socket: net.Socket): void => {
    clearTimeout(waiting.get(socket));
    waiting.delete(socket);
  };
  const close = (socket: net.Socket, why: GuardClosure): void => {
    stopWaiting(socket);
    onClosed(peers.get(socket) ?? { address: '?', port: 0 }, why);
    socket.destroy();
  };
  const wait = (socket: net.Socket): void => {
    // A connection that has had its requests and sends no more is an idle keep-alive one, not a stalled head.
    const why: GuardClosure = requestsUnderWay.has(socket) ? 'idle after its requests' : 'headers timeout';
    waiting.set(socket, setTimeout(() => close(socket, why), limits.headersTimeoutMs).unref());
    for (const oldest of waiting.keys()) {
      if (waiting.size <= limits.waitingConnections) break;
      close(oldest, 'pushed out by a newer waiting connection');
    }
  };
  server.on('connection', (socket: net.Socket) => {
    peers.set(socket, { address: socket.remoteAddress ?? '?', port: socket.remotePort ?? 0 });
    wait(socket);
    socket.once('close', () => stopWaiting(socket));
  });
  // 'request' comes once a request head is whole; its response's 'close' once it is over.
  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const socket = request.socket;
    stopWaiting(socket);
    requestsUnderWay.set(socket, (requestsUnderWay.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const left = (requestsUnderWay.get(socket) ?? 1) - 1;
      requestsUnderWay.set(socket, left);
      if (left === 0 && !socket.destroyed) wait(socket);
    });
  });
  return { waiting: () => waiting.size, upgraded: stopWaiting };
}
