import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import { type LiveEvent, parseLastEventId, sseMessage } from '../core/live/event-history.js';
import type { LiveFeed } from './live-feed.js';

// GET /events: the run's events as text/event-stream, open like GET / and /health (they hold no
// secret). A client gets the history it missed, then each event as it comes, and the stream ends
// after `run-end`. A client is never waited for: every write goes to its socket at once, and one
// that does not keep up (a write returns false) is backed up until its socket drains: its
// `second`s are skipped meanwhile, its other events still written up to a small bound, and it is
// dropped when it stays backed up too long or its pending bytes pass the bound.

/** Limits on the clients of GET /events (tests shorten them). */
export interface EventClientLimits {
  /** Open streams at once: the control port's 128 connections must keep room for the transmitter and health checks. */
  maxClients: number;
  /** A client backed up longer than this is dropped. */
  backedUpLimitMs: number;
  /** A client with more than this written and not yet taken by its socket is dropped. */
  maxPendingBytes: number;
  /** A comment line this often keeps proxies from closing a quiet stream. */
  pingIntervalMs: number;
}

/** 32 streams; a client dropped after 10 s backed up or 1 MiB pending; a ping every 15 s. */
export const EVENT_CLIENT_LIMITS: Readonly<EventClientLimits> = Object.freeze({
  maxClients: 32,
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

/** One open stream. */
interface EventClient {
  response: ServerResponse;
  /** performance.now() when a write last returned false; undefined while it keeps up. */
  backedUpSinceMs: number | undefined;
}

/** The open streams of GET /events, fed by the live feed. */
export class EventClients {
  private readonly clients = new Set<EventClient>();
  private readonly ticker: NodeJS.Timeout;
  private lastPingMs = performance.now();
  /** Clients dropped for not keeping up, since the receiver started. */
  droppedClients = 0;

  constructor(
    feed: LiveFeed,
    private readonly log: Logger,
    readonly limits: Readonly<EventClientLimits> = EVENT_CLIENT_LIMITS,
  ) {
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

  /** True when another stream may open. */
  get hasRoom(): boolean {
    return this.clients.size < this.limits.maxClients;
  }

  /**
   * Starts a stream on `response` with `missed` (the history the client has not had); `ended` when the run is over,
   * so the stream ends after them.
   */
  open(response: ServerResponse, missed: readonly LiveEvent[], ended: boolean): void {
    response.writeHead(200, EVENT_STREAM_HEADERS);
    // The client gets its headers (and its EventSource opens) even when there is nothing to send yet.
    response.flushHeaders();
    const client: EventClient = { response, backedUpSinceMs: undefined };
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
    for (const client of this.clients) {
      if (client.backedUpSinceMs === undefined) this.end(client);
      else client.response.destroy();
    }
    this.clients.clear();
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
    const socket = client.response.socket;
    this.log.warn(
      { from: socket?.remoteAddress, why, droppedClients: this.droppedClients },
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

/** What the route serves from. */
export interface EventsRouteOptions {
  feed: LiveFeed;
  clients: EventClients;
}

/**
 * GET /events. `Last-Event-ID` (or `?lastEventId=`, for clients that cannot set a header) gives what the client already
 * has. Once the last run has ended, a client that already has its `run-end` gets 204, which tells a browser's
 * EventSource to stop reconnecting; any other gets what it missed of that run and the end. Before any run, the stream
 * stays open for the next run's events.
 */
export const eventsRoute: FastifyPluginAsync<EventsRouteOptions> = async (app, { feed, clients }) => {
  app.get('/events', (request, reply) => {
    const header = request.headers['last-event-id'];
    const query = (request.query as { lastEventId?: unknown }).lastEventId;
    const lastEventId = parseLastEventId(
      typeof header === 'string' ? header : typeof query === 'string' ? query : undefined,
    );
    const { history } = feed;
    if (history.ended && lastEventId !== undefined && lastEventId >= history.lastId) {
      void reply.code(204).header('cache-control', 'no-cache').send();
      return;
    }
    if (!clients.hasRoom) {
      void reply
        .code(503)
        .header('retry-after', '10')
        .send({ error: `GET /events has its ${clients.limits.maxClients} streams open; try again later` });
      return;
    }
    // From here the response is written by hand: fastify neither times nor buffers it.
    reply.hijack();
    clients.open(reply.raw, history.since(lastEventId), history.ended);
  });
};
