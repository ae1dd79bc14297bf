import net from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import type { SectionResult } from '../../services/core/model/section.js';
import type { RunInfo, RunReport } from '../../services/core/report/report.js';
import { EventClients, type EventClientLimits, eventsRoute } from '../../services/receiver/events-route.js';
import { LiveFeed } from '../../services/receiver/live-feed.js';
import { openEventStream } from '../helpers/event-stream.js';
import { fixturePlan } from '../helpers/fixtures.js';
import { testLog } from '../helpers/harness.js';

// GET /events' clients that do not keep up, over real HTTP sockets. A run's own events are a few
// hundred bytes a second, far less than loopback's socket buffers hold (over a megabyte before a
// write returns false), so the feed is driven here with sections whose failure text is 200 kB:
// megabytes in a moment, what a client that stopped reading long ago would have pending.

const BIG_FAILURE = 'x'.repeat(200_000);
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** 'closed' once `closed` resolves, 'timed out' after `timeoutMs`. */
function within(closed: Promise<void>, timeoutMs: number): Promise<string> {
  const timer = new Promise<string>((resolve) => setTimeout(() => resolve('timed out'), timeoutMs).unref());
  return Promise.race([closed.then(() => 'closed'), timer]);
}

let app: FastifyInstance | undefined;
let clients: EventClients | undefined;
afterEach(async () => {
  clients?.closeAll();
  await app?.close();
  app = undefined;
  clients = undefined;
});

/** A feed and its streams on a real port, under `limits`. */
async function serve(limits: EventClientLimits): Promise<{ feed: LiveFeed; clients: EventClients; port: number }> {
  const feed = new LiveFeed(testLog);
  clients = new EventClients(feed, testLog, limits);
  app = Fastify({ logger: false });
  await app.register(eventsRoute, { feed, clients });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return { feed, clients, port: typeof address === 'object' && address !== null ? address.port : 0 };
}

const RUN = { startedAt: 'now', transports: ['tcp'], config: {}, receivers: 1, receiverIndex: 0 } as unknown as RunInfo;

let nextSectionId = 1;
/** One section through the feed: its start, `seconds` seconds of one image each, its end failing with `failure`. */
function section(feed: LiveFeed, failure: string, seconds = 0): void {
  const plan = fixturePlan({ transport: 'tcp', label: 'TCP', sectionId: nextSectionId++ });
  const result: SectionResult = {
    ...new SectionRecorder(plan).result(failure),
    series: Array.from({ length: seconds }, (_, second) => ({
      second,
      images: 1,
      intactBytes: 10,
      oneWay: null,
      rtt: null,
    })),
  };
  feed.sectionOpened(plan, undefined);
  feed.sectionEnded(result);
}

/** Big sections until `done` holds (each turn lets the sockets move), at most 200 of them. */
async function backUp(feed: LiveFeed, done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) {
    section(feed, BIG_FAILURE);
    await nextTurn();
  }
  expect(done()).toBe(true);
}

/** A raw connection that asks for GET /events and never reads. */
function stalledClient(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.pause();
      socket.write('GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', () => resolve(socket));
    });
    socket.on('error', () => {});
    socket.once('error', reject);
  });
}

const GENEROUS = {
  maxClients: 8,
  maxClientsPerAddress: 8,
  backedUpLimitMs: 60_000,
  maxPendingBytes: 64 * 1024 * 1024,
  pingIntervalMs: 60_000,
};

describe('a GET /events client that does not keep up', () => {
  it('is dropped once backed up longer than its bound; another keeps every event', async () => {
    const { feed, clients, port } = await serve({ ...GENEROUS, backedUpLimitMs: 300, pingIntervalMs: 100 });
    const healthy = await openEventStream(port);
    const stalled = await stalledClient(port);
    try {
      await expect.poll(() => clients.size).toBe(2);
      feed.runStarted(RUN);
      await backUp(feed, () => clients.backedUpClients === 1);
      // Dropped by the clock, not by its pending bytes (64 MiB allowed).
      await expect.poll(() => clients.droppedClients, { timeout: 10_000 }).toBe(1);
      expect([clients.size, clients.backedUpClients]).toEqual([1, 0]);
      feed.runEnded({ sections: [], stopReason: null } as unknown as RunReport);
      await healthy.ended;
      const events = healthy.events;
      expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.event === 'section-end').length).toBe((events.length - 2) / 2);
      expect(events.at(-1)?.event).toBe('run-end');
      // Kept up with throughout: pinged.
      expect(healthy.comments).toContain(': ping');
    } finally {
      stalled.destroy();
      healthy.close();
    }
  }, 60_000);

  it('is dropped at once when its pending bytes pass the bound', async () => {
    const { feed, clients, port } = await serve({ ...GENEROUS, maxPendingBytes: 256 * 1024 });
    const stalled = await stalledClient(port);
    try {
      await expect.poll(() => clients.size).toBe(1);
      feed.runStarted(RUN);
      await backUp(feed, () => clients.droppedClients === 1);
      expect(clients.size).toBe(0);
    } finally {
      stalled.destroy();
    }
  }, 60_000);

  it('while backed up, has its seconds skipped and every other event kept, nothing twice', async () => {
    const { feed, clients, port } = await serve(GENEROUS);
    const healthy = await openEventStream(port);
    const slow = await openEventStream(port);
    slow.pause();
    await expect.poll(() => clients.size).toBe(2);
    feed.runStarted(RUN);
    await backUp(feed, () => clients.backedUpClients === 1);
    section(feed, 'small', 5);
    feed.runEnded({ sections: [], stopReason: null } as unknown as RunReport);
    slow.resume();
    await Promise.all([healthy.ended, slow.ended]);
    expect(healthy.events.filter((e) => e.event === 'second')).toHaveLength(5);
    expect(slow.events.filter((e) => e.event === 'second')).toHaveLength(0);
    expect(slow.events).toEqual(healthy.events.filter((e) => e.event !== 'second'));
    expect(clients.droppedClients).toBe(0);
  }, 60_000);

  it('is the one evicted when a newcomer finds every stream open; those that keep up stay', async () => {
    const { feed, clients, port } = await serve({ ...GENEROUS, maxClients: 3 });
    const readers = [await openEventStream(port), await openEventStream(port)];
    const stalled = await stalledClient(port);
    const stalledClosed = new Promise<void>((resolve) => stalled.once('close', () => resolve()));
    try {
      await expect.poll(() => clients.size).toBe(3);
      feed.runStarted(RUN);
      await backUp(feed, () => clients.backedUpClients === 1);
      // The stalled client is the newest and the readers keep up: it goes for being backed up, not for its age.
      const newcomer = await openEventStream(port);
      expect(newcomer.status).toBe(200);
      expect([clients.size, clients.evictedClients, clients.droppedClients]).toEqual([3, 1, 0]);
      // Its socket is closed: read on, it comes to its end (what the kernel held for it, then the close).
      stalled.resume();
      await expect(within(stalledClosed, 20_000)).resolves.toBe('closed');
      feed.runEnded({ sections: [], stopReason: null } as unknown as RunReport);
      await Promise.all([...readers, newcomer].map((stream) => stream.ended));
      for (const stream of [...readers, newcomer]) expect(stream.events.at(-1)?.event).toBe('run-end');
    } finally {
      stalled.destroy();
      for (const stream of readers) stream.close();
    }
  }, 60_000);
});
