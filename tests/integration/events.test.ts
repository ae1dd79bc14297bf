import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_AUTH_TOKEN } from '../helpers/harness.js';
import { openEventStream, type ReceivedEvent } from '../helpers/event-stream.js';
import { runTransmitter, startReceiver } from '../helpers/in-process.js';

// GET /events over real HTTP while a real run goes on (both apps in this process, tcp and
// websocket over loopback): a late client and a reconnecting one get exactly what they missed, a
// client that never reads does not disturb the run or the others, and an open stream never holds
// the receiver's close.

let outputDir: string;
beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-events-'));
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

const RUN_ENV = {
  TRANSPORTS: 'tcp,websocket',
  DURATION: '2s',
  RATE: '200',
  IMAGE_SIZE: '10KB',
  WINDOW: '4',
  WARMUP: '0',
};

/** A raw connection that asks for GET /events and never reads a byte of the answer. */
function stalledClient(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.pause();
      socket.write('GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', () => resolve(socket));
    });
    socket.on('error', reject);
  });
}

const names = (events: readonly ReceivedEvent[]): string[] => events.map((e) => e.event);
const sectionsStarted = (events: readonly ReceivedEvent[]): number =>
  events.filter((e) => e.event === 'section-start').length;

describe('GET /events during a run', () => {
  it('gives a late client everything from id 1, a reconnect exactly the rest, and ends after run-end', async () => {
    const { receiver, transmitterConfig } = await startReceiver(outputDir, RUN_ENV);
    const port = transmitterConfig.controlPort;
    const stalled = await stalledClient(port);
    try {
      // Open before the run: it waits for the run's events.
      const early = await openEventStream(port);
      expect([early.status, early.headers['content-type'], early.headers['cache-control']]).toEqual([
        200,
        'text/event-stream; charset=utf-8',
        'no-cache',
      ]);
      expect(early.headers['x-accel-buffering']).toBe('no');
      const run = runTransmitter(transmitterConfig);
      // Late: once the second section has a second on the clock.
      await early.waitFor((events) => sectionsStarted(events) === 2 && events.at(-1)?.event === 'second');
      const late = await openEventStream(port);
      const partial = await openEventStream(port);
      await partial.waitFor((events) => events.length >= 4);
      partial.close();
      const had = [...partial.events];
      const rest = await openEventStream(port, { lastEventId: had.at(-1)!.id });
      const outcome = await run;
      expect(outcome.succeeded, outcome.summary).toBe(true);
      await Promise.all([early.ended, late.ended, rest.ended]);

      // One run on a fresh receiver: ids 1, 2, 3... in order; the run's shape in its names.
      const all = early.events;
      expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
      expect(names(all)[0]).toBe('run');
      expect(names(all).at(-1)).toBe('run-end');
      expect(names(all).filter((n) => n !== 'second')).toEqual([
        'run',
        'section-start',
        'section-end',
        'section-start',
        'section-end',
        'run-end',
      ]);
      expect(all[0]!.data).toMatchObject({
        transports: [
          { name: 'tcp', label: 'TCP' },
          { name: 'websocket', label: 'WebSocket' },
        ],
        imageCount: null,
        durationMs: 2000,
        ratePerSecond: 200,
        window: 4,
      });
      expect(all[1]!.data).toMatchObject({ transport: 'tcp', label: 'TCP', imageCount: null, durationMs: 2000 });
      expect(all.at(-1)!.data).toEqual({ stopReason: null, succeeded: true, sections: 2 });
      // Each section's seconds count every image that came once: their sum is its verdict's.
      for (const end of all.filter((e) => e.event === 'section-end')) {
        const seconds = all.filter((e) => e.event === 'second' && e.data.sectionId === end.data.sectionId);
        expect(seconds.length).toBeGreaterThanOrEqual(2);
        expect(seconds.reduce((sum, e) => sum + (e.data.images as number), 0)).toBe(
          (end.data.okCount as number) + (end.data.corruptCount as number),
        );
        expect(end.data).toMatchObject({ ok: true, lostCount: 0, corruptCount: 0, failure: null });
      }
      // The late client saw exactly what the early one saw; the reconnect the rest of it, nothing twice.
      expect(late.events).toEqual(all);
      expect([...had, ...rest.events]).toEqual(all);
      // No secret in any event: not the token, not the section credentials derived from it.
      for (const stream of [early, late, rest]) expect(stream.text()).not.toContain(TEST_AUTH_TOKEN);

      // After the run: a client that has its end gets 204 (an EventSource stops reconnecting); another its rest.
      const done = await openEventStream(port, { lastEventId: all.at(-1)!.id });
      expect(done.status).toBe(204);
      const last = await openEventStream(port, { queryLastEventId: all.at(-1)!.id - 1 });
      await last.ended;
      expect(last.events).toEqual([all.at(-1)]);
      const fresh = await openEventStream(port);
      await fresh.ended;
      expect(fresh.events).toEqual(all);
    } finally {
      stalled.destroy();
      await receiver.close();
    }
  }, 60_000);

  it('ends its streams when the receiver closes mid-run, promptly, with a client that never reads', async () => {
    const { receiver, transmitterConfig } = await startReceiver(outputDir, { ...RUN_ENV, DURATION: '30s' });
    const port = transmitterConfig.controlPort;
    const stalled = await stalledClient(port);
    const watcher = await openEventStream(port);
    const run = runTransmitter(transmitterConfig).catch((err: unknown) => err);
    await watcher.waitFor((events) => events.some((e) => e.event === 'second'));
    const closing = receiver.close();
    const closeTimer = new Promise<string>((resolve) => setTimeout(() => resolve('close hung'), 10_000).unref());
    expect(await Promise.race([closing.then(() => 'closed'), closeTimer])).toBe('closed');
    await watcher.ended;
    // The run ended as the receiver went: its end came before the stream did.
    expect(watcher.events.at(-1)?.event).toBe('run-end');
    expect(watcher.events.at(-1)?.data.stopReason).toBe('receiver shut down during the run');
    stalled.destroy();
    await run;
  }, 60_000);

  it('ends a stream opened before any run when the receiver closes', async () => {
    const { receiver, transmitterConfig } = await startReceiver(outputDir, RUN_ENV);
    const waiting = await openEventStream(transmitterConfig.controlPort);
    expect(waiting.status).toBe(200);
    const closeTimer = new Promise<string>((resolve) => setTimeout(() => resolve('close hung'), 10_000).unref());
    expect(await Promise.race([receiver.close().then(() => 'closed'), closeTimer])).toBe('closed');
    await waiting.ended;
    expect(waiting.events).toEqual([]);
  });
});
