import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCESS_HEADER } from '../../services/core/live/process-load.js';
import type { LocalServer } from '../../services/transports/contract.js';
import { startPrivateRedis } from '../../services/transports/kit/redis.js';
import { openEventStream, type ReceivedEvent } from '../helpers/event-stream.js';
import { runTransmitter, startReceiver } from '../helpers/in-process.js';
import { ControlClient } from '../../services/transmitter/control-client.js';

// GET /events' figures of the other sides during a real run (both apps in this process, over
// loopback, Redis a private redis-server): each `second` carries the round trips that reached the
// receiver since the one before, the transmitter's load from the header of its round-trip batches,
// and the broker's from Redis INFO (none on TCP). One kernel: no clock offset bound. A batch whose
// process header cannot be read still counts its round trips.

/** Long enough for a few round-trip batches and two broker reads a section (one load needs two). */
const RUN_ENV = {
  TRANSPORTS: 'redis,tcp',
  DURATION: '5s',
  RATE: '200',
  IMAGE_SIZE: '10KB',
  WINDOW: '4',
  WARMUP: '0',
};

/** A round trip on loopback is far under this; the bound only catches a unit mix-up (ns or s for ms). */
const GENEROUS_ROUND_TRIP_MS = 5000;
const MB = 1_000_000;

let redis: LocalServer;
let outputDir: string;
beforeAll(async () => {
  redis = await startPrivateRedis();
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-events-sides-'));
});
afterAll(async () => {
  await redis?.close();
  await rm(outputDir, { recursive: true, force: true });
});

interface Load {
  cpuMsPerSecond: number;
  rssBytes: number;
}

/** The `second` events of the section `end` closed. */
function secondsOf(events: readonly ReceivedEvent[], end: ReceivedEvent): Record<string, unknown>[] {
  return events.filter((e) => e.event === 'second' && e.data.sectionId === end.data.sectionId).map((e) => e.data);
}

/** The round trips the `second` events carried, summed. */
const roundTripsIn = (seconds: readonly Record<string, unknown>[]): number =>
  seconds.reduce((sum, s) => sum + (s.roundTrips as number), 0);

/**
 * Runs `work` with every round-trips POST of the transmitter's control client sending `value` as its process header;
 * returns its result and the status of each such POST (the client's requests, wrapped where they are made).
 */
async function withRoundTripHeader<T>(
  value: string,
  work: () => Promise<T>,
): Promise<{ result: T; statuses: number[] }> {
  // The client's private request(method, route, headers, payload): the one place every POST goes through.
  type Request = (
    this: ControlClient,
    method: string,
    route: string,
    headers?: Record<string, string>,
    payload?: unknown,
  ) => Promise<{ statusCode: number }>;
  const prototype = ControlClient.prototype as unknown as { request: Request };
  const original = prototype.request;
  const statuses: number[] = [];
  prototype.request = async function (method, route, headers = {}, payload) {
    if (!route.endsWith('/round-trips')) return original.call(this, method, route, headers, payload);
    const answer = await original.call(this, method, route, { ...headers, [PROCESS_HEADER]: value }, payload);
    statuses.push(answer.statusCode);
    return answer;
  };
  try {
    return { result: await work(), statuses };
  } finally {
    prototype.request = original;
  }
}

describe("GET /events: the round trips, the transmitter's load and the broker's", () => {
  it("carries each second's round trips and both other sides' loads, Redis's broker only on its section", async () => {
    const { receiver, transmitterConfig } = await startReceiver(outputDir, { ...RUN_ENV, REDIS_URL: redis.url });
    try {
      const stream = await openEventStream(transmitterConfig.controlPort);
      const outcome = await runTransmitter(transmitterConfig);
      expect(outcome.succeeded, outcome.summary).toBe(true);
      await stream.ended;
      const events = stream.events;

      const starts = events.filter((e) => e.event === 'section-start');
      expect(starts.map((e) => e.data.transport)).toEqual(['redis', 'tcp']);
      // Both sides on this kernel: no offset applied, so no bound on it.
      for (const start of starts) expect(start.data.clockOffsetBoundMs).toBeNull();

      const ends = events.filter((e) => e.event === 'section-end');
      expect(ends.map((e) => e.data.transport)).toEqual(['redis', 'tcp']);
      for (const end of ends) {
        const transport = end.data.transport as string;
        const seconds = secondsOf(events, end);
        expect(seconds.length, transport).toBeGreaterThanOrEqual(3);
        const recorded = (end.data.okCount as number) + (end.data.corruptCount as number);

        // Round trips: some seconds carry them, each counted once (never more than the images recorded).
        const withRoundTrips = seconds.filter((s) => (s.roundTrips as number) > 0);
        expect(withRoundTrips.length, transport).toBeGreaterThan(0);
        for (const s of withRoundTrips) {
          expect(s.roundTripP50Ms, transport).toBeGreaterThan(0);
          expect(s.roundTripP50Ms, transport).toBeLessThanOrEqual(GENEROUS_ROUND_TRIP_MS);
        }
        for (const s of seconds.filter((s) => s.roundTrips === 0)) {
          expect(s.roundTripP50Ms, transport).toBeNull();
          expect(s.roundTripP99Ms, transport).toBeNull();
        }
        expect(roundTripsIn(seconds), transport).toBeGreaterThan(0);
        expect(roundTripsIn(seconds), transport).toBeLessThanOrEqual(recorded);
        expect(end.data.roundTripP50Ms, transport).toBeGreaterThan(0);
        expect(end.data.roundTripP50Ms, transport).toBeLessThanOrEqual(GENEROUS_ROUND_TRIP_MS);
        expect(end.data.clockOffsetBoundMs, transport).toBeNull();

        // The transmitter (this very process: its RSS holds Node and both apps) from its batches' header.
        const transmitterLoads = seconds.map((s) => s.transmitter as Load | null).filter((l) => l !== null);
        expect(transmitterLoads.length, transport).toBeGreaterThan(0);
        for (const load of transmitterLoads) {
          expect(load.rssBytes, transport).toBeGreaterThan(10 * MB);
          expect(load.cpuMsPerSecond, transport).toBeGreaterThanOrEqual(0);
        }

        const brokerLoads = seconds.map((s) => s.broker as Load | null);
        if (transport === 'redis') {
          const read = brokerLoads.filter((l) => l !== null);
          expect(read.length, 'a Redis second with the broker').toBeGreaterThan(0);
          for (const load of read) {
            expect(load.rssBytes).toBeGreaterThan(0);
            expect(load.cpuMsPerSecond).toBeGreaterThanOrEqual(0);
          }
        } else {
          // TCP has no broker, and Redis's load, read in the section before, does not carry over.
          expect(
            brokerLoads.every((l) => l === null),
            JSON.stringify(brokerLoads),
          ).toBe(true);
        }
      }
    } finally {
      await receiver.close();
    }
  }, 60_000);

  it('takes round trips sent with a malformed process header: they all count, no load is made up', async () => {
    const env = { ...RUN_ENV, TRANSPORTS: 'tcp', DURATION: '3s' };
    const { receiver, transmitterConfig } = await startReceiver(outputDir, env);
    try {
      const stream = await openEventStream(transmitterConfig.controlPort);
      const { result: outcome, statuses } = await withRoundTripHeader('cpuMicros=12;rssBytes=;atMs=oops', () =>
        runTransmitter(transmitterConfig),
      );
      expect(outcome.succeeded, outcome.summary).toBe(true);
      await stream.ended;
      // Every batch went through the rewriting, and every one was taken.
      expect(statuses.length).toBeGreaterThan(0);
      expect(
        statuses.every((s) => s === 204),
        statuses.join(' '),
      ).toBe(true);
      // Not one round trip lost: the section's record has one per image.
      const [section] = outcome.report.sections;
      expect(section!.rtt?.count).toBe(section!.okCount);
      const end = stream.events.find((e) => e.event === 'section-end')!;
      const seconds = secondsOf(stream.events, end);
      expect(roundTripsIn(seconds)).toBeGreaterThan(0);
      expect(end.data.roundTripP50Ms).toBeGreaterThan(0);
      // The header said nothing readable: no transmitter load on any second.
      expect(seconds.every((s) => s.transmitter === null)).toBe(true);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});
