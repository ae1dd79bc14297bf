import { once as onceEvent } from 'node:events';
import net from 'node:net';
import { ErrorCode, errorMessage, ItbError } from '../../core/errors.js';
import { boundPort, hostPort } from '../../shared/net.js';
import type { Door, ReceiverOptions } from '../contract.js';

// A listener's side of the door: the connections it keeps and when it closes them. Which ones get
// in is the receiver's doorkeeper's decision (services/receiver/door.ts); a listener only asks its Door.

/**
 * Connections a listener keeps at once still proving themselves, besides those the open section
 * admits on it (CLIENTS × a link's connections); more are closed on arrival.
 */
export const MAX_CONNECTIONS_PER_LISTENER = 16;

/**
 * Closes `socket` when nothing has crossed it, either way, for `timeoutMs`: a peer that stalls in
 * the middle of a message, or never proves itself. An honest transmitter is never that quiet: it
 * fails its own link when no ack comes for as long (IMAGE_TIMEOUT_MS).
 */
export function closeWhenSilent(socket: net.Socket, timeoutMs: number, onSilent: (reason: string) => void): void {
  socket.setTimeout(timeoutMs, () => {
    onSilent(`nothing sent or received for ${timeoutMs} ms (IMAGE_TIMEOUT_MS): connection closed`);
    socket.destroy();
  });
}

/** Connections `door`'s listener keeps at once: those its open section admits, plus MAX_CONNECTIONS_PER_LISTENER. */
export function listenerConnectionCap(door: Pick<Door, 'sectionConnections'>): number {
  return MAX_CONNECTIONS_PER_LISTENER + door.sectionConnections();
}

/**
 * Caps `server` at {@link listenerConnectionCap}, read at every arrival (net.Server reads
 * maxConnections then), so it follows the open section; every connection closed on arrival is
 * counted as refused.
 */
export function capConnections(server: net.Server, door: Door, transport: string): void {
  Object.defineProperty(server, 'maxConnections', {
    configurable: true,
    enumerable: true,
    get: () => listenerConnectionCap(door),
    set: () => undefined,
  });
  server.on('drop', (dropped) =>
    door.refuse(
      `${transport} from ${hostPort(dropped?.remoteAddress ?? '?', dropped?.remotePort ?? 0)}`,
      `over the listener's ${listenerConnectionCap(door)} connections: closed on arrival`,
    ),
  );
}

/** A listener of ours bound where the receiver listens: the server, the connections it holds now, its port. */
export interface CappedListener {
  server: net.Server;
  sockets: ReadonlySet<net.Socket>;
  port: number;
}

/**
 * Binds a net.Server of ours at the receiver's address, capped (capConnections), each connection kept in `sockets`
 * until it closes and handed to `onSocket`; rejects with ITB_ERR_TRANSPORT naming `label`'s receiver when it cannot
 * listen. For a library that serves connections it is given (grpc-js, node:http2) but has no cap of its own.
 */
export async function listenCapped(
  options: Pick<ReceiverOptions, 'door' | 'bindHost' | 'port'>,
  transport: string,
  label: string,
  onSocket: (socket: net.Socket) => void,
): Promise<CappedListener> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    onSocket(socket);
  });
  capConnections(server, options.door, transport);
  try {
    server.listen(options.port, options.bindHost);
    await Promise.race([
      onceEvent(server, 'listening'),
      onceEvent(server, 'error').then(([err]) => Promise.reject(err)),
    ]);
  } catch (err) {
    const address = hostPort(options.bindHost, options.port);
    throw new ItbError(ErrorCode.transport, `${label} receiver cannot listen on ${address}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
  return { server, sockets, port: boundPort(server.address()) };
}
