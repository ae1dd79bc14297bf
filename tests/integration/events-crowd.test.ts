import http from 'node:http';
import net from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import type { RunInfo, RunReport } from '../../services/core/report/report.js';
import { EVENT_CLIENT_LIMITS, EventClients, eventsRoute } from '../../services/receiver/events-route.js';
import { LiveFeed } from '../../services/receiver/live-feed.js';
import { openEventStream } from '../helpers/event-stream.js';
import { fixturePlan } from '../helpers/fixtures.js';
import { testLog } from '../helpers/harness.js';

// GET /events crowded by clients that hold streams and read nothing, over real sockets under the
// receiver's own limits (32 streams, 8 per address). Distinct clients come from loopback aliases
// (127.0.0.2, 127.0.0.3...: Linux routes all of 127/8 to lo), as distinct hosts would.

let app: FastifyInstance | undefined;
let clients: EventClients | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  clients?.closeAll();
  await app?.close();
  app = undefined;
  clients = undefined;
});

/** A feed and its streams on a real port of 127.0.0.1 under the receiver's limits. */
async function serve(): Promise<{ feed: LiveFeed; clients: EventClients; port: number }> {
  const feed = new LiveFeed(testLog);
  clients = new EventClients(feed, testLog, EVENT_CLIENT_LIMITS);
  app = Fastify({ logger: false });
  await app.register(eventsRoute, { feed, clients });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return { feed, clients, port: typeof address === 'object' && address !== null ? address.port : 0 };
}

/** A connection from `localAddress` that asks for GET /events and never reads a byte of the answer. */
function idleClient(port: number, localAddress: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress }, () => {
      socket.pause();
      socket.write('GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', () => resolve(socket));
    });
    sockets.push(socket);
    socket.on('error', () => {});
    socket.once('error', reject);
  });
}

/** `count` idle streams from each of `addresses`, opened one at a time (so their order is known), in that order. */
async function holdIdle(port: number, open: EventClients, addresses: string[], count: number): Promise<net.Socket[]> {
  const held: net.Socket[] = [];
  for (const address of addresses)
    for (let i = 0; i < count; i++) {
      held.push(await idleClient(port, address));
      await expect.poll(() => open.size, { timeout: 10_000 }).toBe(held.length);
    }
  return held;
}

/** The status and Retry-After of GET /events from `localAddress`; the stream, if one opened, is closed at once. */
function askFrom(port: number, localAddress: string): Promise<{ status: number; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: '/events', localAddress, agent: false }, (response) => {
      resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'] });
      request.destroy();
    });
    request.setTimeout(10_000, () => request.destroy(new Error('no answer within 10 s')));
    request.on('error', reject);
  });
}

/** Resolves 'closed' once `socket` closes, read from now on; 'open' after `timeoutMs`. */
function closesWithin(socket: net.Socket, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('open'), timeoutMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve('closed');
    });
    socket.resume();
  });
}

const RUN = { startedAt: 'now', transports: ['tcp'], config: {}, receivers: 1, receiverIndex: 0 } as unknown as RunInfo;

/** A run of one section with one second through `feed`, and its end. */
function wholeRun(feed: LiveFeed): void {
  feed.runStarted(RUN);
  const plan = fixturePlan({ transport: 'tcp', label: 'TCP', sectionId: 1 });
  feed.sectionOpened(plan, undefined);
  feed.sectionEnded({
    ...new SectionRecorder(plan).result(null),
    series: [{ second: 0, images: 1, intactBytes: 10, oneWay: null, rtt: null }],
  });
  feed.runEnded({ sections: [], stopReason: null } as unknown as RunReport);
}

const FOUR_HOSTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];

describe('GET /events held by idle clients', () => {
  it('with all 32 streams held by idle clients of four addresses, gives a newcomer a stream, and the run', async () => {
    const { feed, clients, port } = await serve();
    expect([EVENT_CLIENT_LIMITS.maxClients, EVENT_CLIENT_LIMITS.maxClientsPerAddress]).toEqual([32, 8]);
    const held = await holdIdle(port, clients, FOUR_HOSTS, 8);
    const first = await openEventStream(port);
    expect(first.status).toBe(200);
    expect([clients.size, clients.evictedClients, clients.refusedClients]).toEqual([32, 1, 0]);
    // All kept up and all four addresses held 8: the oldest went, the first of 127.0.0.2.
    expect(FOUR_HOSTS.map((address) => clients.openFrom(address))).toEqual([7, 8, 8, 8]);
    expect(await closesWithin(held[0]!, 10_000)).toBe('closed');
    // The next newcomer takes from an address that still holds 8: the oldest of those, 127.0.0.3's first.
    const second = await openEventStream(port);
    expect(second.status).toBe(200);
    expect([...FOUR_HOSTS, '127.0.0.1'].map((address) => clients.openFrom(address))).toEqual([7, 7, 8, 8, 2]);
    expect(await closesWithin(held[8]!, 10_000)).toBe('closed');
    wholeRun(feed);
    await Promise.all([first.ended, second.ended]);
    for (const stream of [first, second])
      expect(stream.events.map((e) => e.event)).toEqual(['run', 'section-start', 'second', 'section-end', 'run-end']);
    first.close();
    second.close();
  }, 60_000);

  it('refuses a ninth stream from one address with 429 and Retry-After, while another address gets in', async () => {
    const { clients, port } = await serve();
    await holdIdle(port, clients, ['127.0.0.9'], 8);
    expect(await askFrom(port, '127.0.0.9')).toEqual({ status: 429, retryAfter: '10' });
    expect(clients.refusedClients).toBe(1);
    expect(await askFrom(port, '127.0.0.10')).toEqual({ status: 200, retryAfter: undefined });
    expect(clients.evictedClients).toBe(0);
  }, 60_000);
});

describe('GET /events after a restart of the receiver', () => {
  it('counts a Last-Event-ID past the newest id given as none: the client gets the whole run', async () => {
    const { feed, port } = await serve();
    wholeRun(feed);
    const fresh = await openEventStream(port);
    await fresh.ended;
    // An id from the receiver's earlier life, where ids had gone further.
    const reconnect = await openEventStream(port, { queryLastEventId: 10_000 });
    await reconnect.ended;
    expect(reconnect.status).toBe(200);
    expect(reconnect.events).toEqual(fresh.events);
    expect(fresh.events).toHaveLength(5);
  }, 60_000);
});
