import type http from 'node:http';
import type net from 'node:net';
import type { ConnectionLimits } from '../core/control/control-protocol.js';

// A plain cap on connections cannot hold an HTTP port open to anyone: a flood of connections that
// send nothing, or their request head a byte at a time, fills the cap and the next real request
// (GET /health) is refused with them. So the connections still waiting for a whole request head
// are bounded apart, and one more closes one of them: a real request, which sends its head at
// once, is served before the flood's next arrivals push it out. A connection with a request under
// way is never pushed out; idle again after its response, it waits like a new one.
//
// Nor can a plain cap keep room for the one client that matters. 1,000 concurrent GET /health
// held every connection of the control port busy, and the transmitter's next request was refused
// on arrival ("socket hang up", a run ended). The guard sees a socket before any request, so it
// cannot tell the transmitter's new connection from the flood's; it can tell one that showed
// AUTH_TOKEN. Such a connection is trusted: counted apart (a reserve no anonymous load takes),
// never waiting, never closed to make room; the transmitter keeps its connections alive to stay
// there. And at the cap an arrival is not refused: it closes an anonymous connection, one idle
// after its requests (it was served) first, else the oldest with a request under way (a slow
// reader, a stream), and a new one only as the last resort, since the transmitter's next
// connection may be among the new ones, its head not read yet.

/** Why the guard closed a connection, for the log. */
export type GuardClosure =
  | 'headers timeout'
  | 'pushed out by a newer waiting connection'
  | 'idle after its requests'
  | 'closed to make room for a newer connection'
  | 'refused on arrival: no room';

/** Where a closed connection came from, read when it arrived (a socket the peer already closed has no address). */
export interface GuardPeer {
  address: string;
  port: number;
}

/** What a guarded server's owner can tell the guard. */
export interface ConnectionGuard {
  /** Connections now waiting for a whole request head. */
  waiting(): number;
  /** Connections now trusted (they showed the secret). */
  trusted(): number;
  /**
   * `socket` was upgraded to another protocol (a WebSocket the server took): never waiting again nor closed to make
   * room (node's own cap still counts it), its protocol's own timeouts apply.
   */
  upgraded(socket: net.Socket): void;
}

/** What the guard is told of a server's clients beyond its limits. */
export interface GuardOptions {
  /**
   * True for a request that shows the secret: its connection is trusted from then on, within
   * `limits.trustedConnections`. Absent: every connection is anonymous.
   */
  trusts?: (request: http.IncomingMessage) => boolean;
}

interface Waiting {
  timer: NodeJS.Timeout;
  /** Idle after requests it had (a kept-alive connection), not new. */
  idle: boolean;
}

/**
 * Applies `limits` to `server` (before it listens): the waiting-connection bound and its headers timeout, the cap on
 * anonymous connections and the trusted ones' reserve, node's keep-alive and request timeouts. `onClosed` hears of
 * every connection the guard closed. An upgrade request stays waiting until its owner calls upgraded(): one it
 * refuses is closed like any other.
 */
export function guardConnections(
  server: http.Server,
  limits: Readonly<ConnectionLimits>,
  onClosed: (peer: GuardPeer, why: GuardClosure) => void,
  options: GuardOptions = {},
): ConnectionGuard {
  const { trusts } = options;
  const trustedReserve = trusts === undefined ? 0 : limits.trustedConnections;
  // node's own cap only backs the guard's: one over, so the guard sees an arrival at its cap and chooses what closes.
  server.maxConnections = limits.maxConnections + trustedReserve + 1;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  // node checks this only every connectionsCheckingInterval (30 s); the timers below are the bound.
  server.headersTimeout = limits.headersTimeoutMs;
  // Oldest first: a Map keeps insertion order.
  const waiting = new Map<net.Socket, Waiting>();
  const anonymous = new Set<net.Socket>();
  const trusted = new Set<net.Socket>();
  const requestsUnderWay = new WeakMap<net.Socket, number>();
  const peers = new WeakMap<net.Socket, GuardPeer>();
  const stopWaiting = (socket: net.Socket): void => {
    clearTimeout(waiting.get(socket)?.timer);
    waiting.delete(socket);
  };
  const close = (socket: net.Socket, why: GuardClosure): void => {
    stopWaiting(socket);
    onClosed(peers.get(socket) ?? { address: '?', port: 0 }, why);
    socket.destroy();
  };
  // The connection to close for room: the oldest idle one (it was served), else, at the cap (`busyToo`), the oldest
  // anonymous one with a request under way, else the oldest new one.
  const leastNeeded = (busyToo: boolean): net.Socket | undefined => {
    let oldestNew: net.Socket | undefined;
    for (const [socket, state] of waiting) {
      if (state.idle) return socket;
      oldestNew ??= socket;
    }
    if (busyToo) for (const socket of anonymous) if (!waiting.has(socket)) return socket;
    return oldestNew;
  };
  const wait = (socket: net.Socket): void => {
    // A connection that has had its requests and sends no more is an idle keep-alive one, not a stalled head.
    const idle = requestsUnderWay.has(socket);
    const why: GuardClosure = idle ? 'idle after its requests' : 'headers timeout';
    waiting.set(socket, { timer: setTimeout(() => close(socket, why), limits.headersTimeoutMs).unref(), idle });
    while (waiting.size > limits.waitingConnections) {
      const victim = leastNeeded(false);
      if (victim === undefined) break;
      close(victim, 'pushed out by a newer waiting connection');
    }
  };
  server.on('connection', (socket: net.Socket) => {
    peers.set(socket, { address: socket.remoteAddress ?? '?', port: socket.remotePort ?? 0 });
    if (anonymous.size >= limits.maxConnections) {
      const victim = leastNeeded(true);
      if (victim === undefined) {
        close(socket, 'refused on arrival: no room');
        return;
      }
      close(victim, 'closed to make room for a newer connection');
    }
    anonymous.add(socket);
    wait(socket);
    socket.once('close', () => {
      stopWaiting(socket);
      anonymous.delete(socket);
      trusted.delete(socket);
    });
  });
  // 'request' comes once a request head is whole; its response's 'close' once it is over.
  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const socket = request.socket;
    stopWaiting(socket);
    if (trusts !== undefined && !trusted.has(socket) && trusted.size < trustedReserve && trusts(request)) {
      anonymous.delete(socket);
      trusted.add(socket);
    }
    requestsUnderWay.set(socket, (requestsUnderWay.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const left = (requestsUnderWay.get(socket) ?? 1) - 1;
      requestsUnderWay.set(socket, left);
      // A trusted connection idles without a headers timer: node's keep-alive timeout ends it.
      if (left === 0 && !socket.destroyed && !trusted.has(socket)) wait(socket);
    });
  });
  return {
    waiting: () => waiting.size,
    trusted: () => trusted.size,
    upgraded: (socket) => {
      stopWaiting(socket);
      anonymous.delete(socket);
    },
  };
}
