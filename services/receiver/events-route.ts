import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import { type LiveEvent, parseLastEventId, sseMessage } from '../core/live/event-history.js';
import { admitStream, checkStreamCaps, type StreamReading } from '../core/live/stream-admission.js';
import { unmappedAddress } from '../shared/net.js';
import { type ThrottledWarn, throttledWarn } from '../shared/throttled-log.js';
import type { LiveFeed } from './live-feed.js';

// GET /events: the run's events as text/event-stream, open like GET / and /health (they hold no
// secret). A client gets the history it missed, then each event as it comes, and the stream ends
// after `run-end`. A client is never waited for: every write goes to its socket at once, and one
// that does not keep up (a write returns false) is backed up until its socket drains: its
// `second`s are skipped meanwhile, its other events still written up to a small bound, and it is
// dropped when it stays backed up too long or its pending bytes pass the bound. Nobody can hold
// every stream: one address keeps a few at most (one more gets 429), and a newcomer that finds all
// of them open takes the place of the one that has read least (services/core/live/stream-admission.ts).

/** Limits on the clients of GET /events (tests shorten them). */
export interface EventClientLimits {
  /** Open streams at once: the control port's 128 connections must keep room for the transmitter and health checks. */
  maxClients: number;
  /** Open streams at once from one client address (IPv4-mapped IPv6 counted as IPv4): well below `maxClients`. */
  maxClientsPerAddress: number;
  /** A client backed up longer than this is dropped. */
  backedUpLimitMs: number;
  /** A client with more than this written and not yet taken by its socket is dropped. */
  maxPendingBytes: number;
  /** A comment line this often keeps proxies from closing a quiet stream. */
  pingIntervalMs: number;
}

/**
 * 32 streams, 8 from one address (a few tabs, or every viewer behind one proxy or NAT, yet at least four addresses to
 * fill them all); a client dropped after 10 s backed up or 1 MiB pending; a ping every 15 s.
 */
export const EVENT_CLIENT_LIMITS: Readonly<EventClientLimits> = Object.freeze({
  maxClients: 32,
  maxClientsPerAddress: 8,
  backedUpLimitMs: 10_000,
  maxPendingBytes: 1024 * 1024,
  pingIntervalMs: 15_000,
});

/** The headers of every stream: never cached, never buffered by a proxy (nginx honours X-Accel-Buffering). */
export const EVENT_STREAM_HEADERS = Object.freeze({
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
  // The stream is the connection's last response: once it ends the socket closes rather than idle
  // in keep-alive (an EventSource never sends a second request on it).
  connection: 'close',
});

/** How long a refused client is told to wait: its own streams must end first. */
const RETRY_AFTER_SECONDS = 10;

/** One open stream. */
interface EventClient {
  response: ServerResponse;
  /** Its client's address, an IPv4-mapped IPv6 one in IPv4 form. */
  address: string;
  /** Its place in the order streams opened. */
  openedOrder: number;
  /** performance.now() when a write last returned false; undefined while it keeps up. */
  backedUpSinceMs: number | undefined;
}

/** The open streams of GET /events, fed by the live feed. */
export class EventClients {
  private readonly clients = new Set<EventClient>();
  private readonly ticker: NodeJS.Timeout;
  private lastPingMs = performance.now();
  private opened = 0;
  // A flood of newcomers would write a line each: one line per cause a second, with its count.
  private readonly warn: ThrottledWarn;
  /** Clients dropped for not keeping up, since the receiver started. */
  droppedClients = 0;
  /** Streams closed to make room for a newcomer, since the receiver started. */
  evictedClients = 0;
  /** Clients refused a stream (their address had its streams), since the receiver started. */
  refusedClients = 0;

  constructor(
    feed: LiveFeed,
    log: Logger,
    readonly limits: Readonly<EventClientLimits> = EVENT_CLIENT_LIMITS,
  ) {
    checkStreamCaps({ maxStreams: limits.maxClients, maxStreamsPerAddress: limits.maxClientsPerAddress });
    this.warn = throttledWarn(log);
    feed.listen((event) => this.broadcast(event, sseMessage(event)));
    // One unref'd ticker for the pings and the backed-up clock: never keeps the receiver alive.
    this.ticker = setInterval(() => this.tick(), Math.min(1000, limits.pingIntervalMs)).unref();
  }

  /** Streams open now. */
  get size(): number {
    return this.clients.size;
  }

  /** Streams backed up now (their socket has not drained since a write returned false). */
  get backedUpClients(): number {
    let count = 0;
    for (const client of this.clients) if (client.backedUpSinceMs !== undefined) count++;
    return count;
  }

  /** Streams open now from `address` (as {@link clientAddress} gives it). */
  openFrom(address: string): number {
    let count = 0;
    for (const client of this.clients) if (client.address === address) count++;
    return count;
  }

  /**
   * True when a stream from `address` (as {@link clientAddress} gives it) may open now, once the stream that has read
   * least is evicted if every stream is taken; false when its address has its streams already.
   */
  admit(address: string): boolean {
    const open = [...this.clients];
    const nowMs = performance.now();
    const readings: StreamReading[] = open.map((client) => ({
      address: client.address,
      backedUpMs: client.backedUpSinceMs === undefined ? 0 : nowMs - client.backedUpSinceMs,
      pendingBytes: client.response.writableLength,
      openedOrder: client.openedOrder,
    }));
    const admission = admitStream(readings, address, {
      maxStreams: this.limits.maxClients,
      maxStreamsPerAddress: this.limits.maxClientsPerAddress,
    });
    if (admission.action === 'refuse') {
      this.refusedClients++;
      this.warn(
        'GET /events refused',
        { from: address, refusedClients: this.refusedClients },
        'GET /events client refused: its address has its streams open',
      );
      return false;
    }
    if (admission.action === 'evict') {
      const evicted = open[admission.index]!;
      this.evictedClients++;
      this.clients.delete(evicted);
      const { backedUpMs, pendingBytes } = readings[admission.index]!;
      this.warn(
        'GET /events evicted',
        { from: evicted.address, backedUpMs: Math.round(backedUpMs), pendingBytes, for: address },
        'GET /events stream evicted: every stream was open, a newcomer came, and it had read least',
      );
      this.close(evicted);
    }
    return true;
  }

  /**
   * Starts a stream from `address` on `response` with `missed` (the history the client has not had); `ended` when the
   * run is over, so the stream ends after them. Call {@link admit} first.
   */
  open(response: ServerResponse, address: string, missed: readonly LiveEvent[], ended: boolean): void {
    response.writeHead(200, EVENT_STREAM_HEADERS);
    // The client gets its headers (and its EventSource opens) even when there is nothing to send yet.
    response.flushHeaders();
    const client: EventClient = { response, address, openedOrder: this.opened++, backedUpSinceMs: undefined };
    this.clients.add(client);
    response.on('close', () => this.clients.delete(client));
    response.on('drain', () => {
      client.backedUpSinceMs = undefined;
    });
    response.on('error', () => this.clients.delete(client));
    if (missed.length > 0) this.write(client, missed.map(sseMessage).join(''));
    if (ended) this.end(client);
  }

  /** Ends every stream (the receiver closes): the ones that keep up end cleanly, the backed-up ones are cut. */
  closeAll(): void {
    clearInterval(this.ticker);
    for (const client of this.clients) this.close(client);
    this.clients.clear();
    this.warn.close();
  }

  // A stream that keeps up ends cleanly after what it was sent; a backed-up one is cut (its end would wait on it).
  private close(client: EventClient): void {
    if (client.backedUpSinceMs === undefined) this.end(client);
    else client.response.destroy();
  }

  private broadcast(event: LiveEvent, text: string): void {
    for (const client of this.clients) {
      if (client.response.writableEnded) continue;
      if (client.backedUpSinceMs !== undefined) {
        // Behind: a `second` is skipped (the next one says where things stand), the rest is written if it fits.
        if (event.event === 'second') continue;
        if (client.response.writableLength + text.length > this.limits.maxPendingBytes) {
          this.drop(client, 'more than its pending bound behind');
          continue;
        }
      }
      this.write(client, text);
      if (event.event === 'run-end') this.end(client);
    }
  }

  private write(client: EventClient, text: string): void {
    if (!client.response.write(text)) client.backedUpSinceMs ??= performance.now();
  }

  private end(client: EventClient): void {
    client.response.end();
  }

  private drop(client: EventClient, why: string): void {
    this.droppedClients++;
    this.clients.delete(client);
    this.warn(
      'GET /events dropped',
      { from: client.address, why, droppedClients: this.droppedClients },
      'GET /events client dropped: it does not keep up',
    );
    client.response.destroy();
  }

  // Once a second: drops the clients backed up too long, and pings the others every pingIntervalMs.
  private tick(): void {
    const nowMs = performance.now();
    const ping = nowMs - this.lastPingMs >= this.limits.pingIntervalMs;
    if (ping) this.lastPingMs = nowMs;
    for (const client of this.clients) {
      if (client.backedUpSinceMs !== undefined) {
        if (nowMs - client.backedUpSinceMs > this.limits.backedUpLimitMs) this.drop(client, 'backed up too long');
      } else if (ping && !client.response.writableEnded) this.write(client, ': ping\n\n');
    }
  }
}

/** The address a request came from as streams are counted by it: an IPv4-mapped IPv6 address in its IPv4 form. */
export function clientAddress(remoteAddress: string | undefined): string {
  return remoteAddress === undefined ? '?' : unmappedAddress(remoteAddress);
}

/** What the route serves from. */
export interface EventsRouteOptions {
  feed: LiveFeed;
  clients: EventClients;
}

/**
 * GET /events. `Last-Event-ID` (or `?lastEventId=`, for clients that cannot set a header) gives what the client already
 * has; one past the newest id given came from an earlier life of the receiver (ids start again at 1) and counts as
 * none. Once the last run has ended, a client that already has its `run-end` gets 204, which tells a browser's
 * EventSource to stop reconnecting; any other gets what it missed of that run and the end. Before any run, the stream
 * stays open for the next run's events. A client whose address has its streams gets 429 with Retry-After.
 */
export const eventsRoute: FastifyPluginAsync<EventsRouteOptions> = async (app, { feed, clients }) => {
  app.get('/events', (request, reply) => {
    const header = request.headers['last-event-id'];
    const query = (request.query as { lastEventId?: unknown }).lastEventId;
    const given = parseLastEventId(typeof header === 'string' ? header : typeof query === 'string' ? query : undefined);
    const { history } = feed;
    const lastEventId = given !== undefined && given <= history.lastId ? given : undefined;
    if (history.ended && lastEventId === history.lastId) {
      void reply.code(204).header('cache-control', 'no-cache').send();
      return;
    }
    const address = clientAddress(request.socket.remoteAddress);
    if (!clients.admit(address)) {
      void reply
        .code(429)
        .header('retry-after', String(RETRY_AFTER_SECONDS))
        .send({
          error:
            `GET /events keeps at most ${clients.limits.maxClientsPerAddress} streams per address, and ${address} ` +
            'has them open; close one or try again later',
        });
      return;
    }
    // From here the response is written by hand: fastify neither times nor buffers it.
    reply.hijack();
    clients.open(reply.raw, address, history.since(lastEventId), history.ended);
  });
};
