import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LiveEventData } from '../../services/core/live/live-events.js';
import { aloneCommandCount } from '../../services/core/model/command-lane.js';
import { openEventStream } from '../helpers/event-stream.js';
import { runTransmitter, startReceiver } from '../helpers/in-process.js';
import { parsePrometheusText, promtoolCheckMetrics, type Scrape, sampleValue } from '../helpers/prometheus-text.js';

// GET /events and GET /metrics of an open-loop run (RATE) with a command lane (COMMAND_RATE), over real TCP on
// loopback (both apps in this process): the frame age leads, the deadline counts and the command lane come through,
// every round trip reaches the stream (the last batch with the section's last second, marked partial), and the
// scrape's new series agree with the run's results. DEADLINE_MS is a microsecond, so every aged frame is late
// whatever the machine's load (a loopback frame takes tens of µs at least); DEADLINE_MISS_PERCENT 100 keeps that from
// being the section's verdict.

const RATE = 50;
const COMMAND_RATE = 100;
const RUN_ENV = {
  TRANSPORTS: 'tcp',
  RATE: String(RATE),
  DURATION: '2500ms',
  COMMAND_RATE: String(COMMAND_RATE),
  DEADLINE_MS: '0.001',
  DEADLINE_MISS_PERCENT: '100',
  IMAGE_SIZE: '10KB',
  WARMUP: '0',
};

let outputDir: string;
beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-events-open-loop-'));
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

/** GET /metrics, checked by promtool (valid, no lint finding), read back. */
async function scrape(port: number): Promise<Scrape> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  expect(await promtoolCheckMetrics(text), text).toEqual({ exitCode: 0, output: '' });
  return parsePrometheusText(text);
}

describe('GET /events and GET /metrics of an open-loop run with commands', () => {
  it('lead with the frame age, carry the deadline counts, the command lane and every round trip', async () => {
    const { receiver, transmitterConfig } = await startReceiver(outputDir, RUN_ENV);
    const port = transmitterConfig.controlPort;
    try {
      const stream = await openEventStream(port);
      const before = await scrape(port);
      // Before any open-loop section or command: no such series yet, the closed-loop ones as ever.
      expect(before.samples.some((s) => /frame_age|late_total|itb_command/.test(s.name))).toBe(false);
      expect(before.type.get('itb_image_frame_age_seconds')).toBe('histogram');
      const run = runTransmitter(transmitterConfig);
      // Mid-run: the open section's frame ages so far, once a round-trip batch has come.
      await stream.waitFor((events) => events.some((e) => e.event === 'second' && (e.data.frameAges as number) > 0));
      const during = await scrape(port);
      const outcome = await run;
      expect(outcome.succeeded, outcome.summary).toBe(true);
      await stream.ended;
      const after = await scrape(port);

      const [section] = outcome.report.sections;
      const deadline = section!.openLoop!.deadline!;
      const lane = section!.commands!;
      const events = stream.events;
      const start = events.find((e) => e.event === 'section-start')!.data as unknown as LiveEventData['section-start'];
      expect([start.deadlineMs, start.intervalMs]).toEqual([0.001, 1000 / RATE]);
      const seconds = events
        .filter((e) => e.event === 'second')
        .map((e) => e.data as unknown as LiveEventData['second']);
      const end = events.find((e) => e.event === 'section-end')!.data as unknown as LiveEventData['section-end'];

      // Every round trip and frame age reached the stream once: the batch that came at the section's end too.
      expect(seconds.reduce((sum, s) => sum + s.roundTrips, 0)).toBe(section!.rtt!.count);
      expect(seconds.reduce((sum, s) => sum + s.frameAges, 0)).toBe(section!.frameAge!.count);
      expect(section!.frameAge!.count).toBe(section!.okCount);
      // The last second is partial (its end cut it short), the ones before it whole.
      const last = seconds.at(-1)!;
      expect([last.partial, last.seconds < 1]).toEqual([true, true]);
      expect(seconds.slice(0, -1).every((s) => !s.partial && s.seconds === 1)).toBe(true);
      // The frame age leads each second's figures and the end's; under a 1 µs deadline every aged frame is late.
      for (const data of [last, end])
        expect(Object.keys(data).indexOf('frameAgeP50Ms')).toBeLessThan(Object.keys(data).indexOf('oneWayP50Ms'));
      expect(end.frameAgeP50Ms).toBe(section!.frameAge!.p50Ms);
      expect(end.oneWayP50Ms).toBe(section!.latency!.p50Ms);
      expect(last.deadline).toMatchObject({
        deadlineMs: 0.001,
        agedFrames: deadline.agedFrames,
        lateCount: deadline.agedFrames,
      });
      const lateSoFar = seconds.map((s) => s.deadline!.lateCount);
      expect(lateSoFar).toEqual([...lateSoFar].sort((a, b) => a - b));
      expect(end.deadline).toMatchObject({
        framesSent: section!.imageCount,
        lateCount: deadline.lateCount,
        veryLateCount: deadline.veryLateCount,
        longestGapMs: deadline.longestGapMs,
        jitterP99Ms: deadline.jitter!.p99Ms,
        overDeadline: false,
      });
      expect(deadline.lateCount).toBe(deadline.agedFrames);
      // The command lane at the end: TCP writes each frame whole, so commands go behind the images.
      expect(end.commands).toMatchObject({ ratePerSecond: COMMAND_RATE, lane: 'behind', notRun: null });
      const alone = aloneCommandCount(COMMAND_RATE);
      expect(end.commands!.alone).toMatchObject({ sent: alone, acked: alone, received: alone, corrupt: 0 });
      expect(end.commands!.beside.sent).toBeGreaterThan(0);
      expect(end.commands!.beside.oneWayP50Ms).toBe(lane.beside.oneWay!.p50Ms);
      expect(end.commands!.delayFactorP50).toBe(lane.delayFactorP50);
      // One clock: a command's one-way time is the first part of its round trip.
      expect(end.commands!.alone.oneWayP50Ms!).toBeLessThanOrEqual(end.commands!.alone.roundTripP50Ms!);

      // GET /metrics: mid-run the frame ages so far; after, every series what the run's result says.
      expect(sampleValue(during, 'itb_image_frame_age_seconds_count', { transport: 'tcp' })).toBeGreaterThan(0);
      const tcp = { transport: 'tcp' };
      expect(sampleValue(after, 'itb_image_frame_age_seconds_count', tcp)).toBe(section!.frameAge!.count);
      expect(sampleValue(after, 'itb_image_frame_age_seconds_bucket', { ...tcp, le: '10' })).toBe(
        section!.frameAge!.count,
      );
      expect(sampleValue(after, 'itb_images_late_total', tcp)).toBe(deadline.lateCount);
      expect(sampleValue(after, 'itb_images_very_late_total', tcp)).toBe(deadline.veryLateCount);
      expect(sampleValue(after, 'itb_image_longest_gap_seconds', tcp)).toBeCloseTo(deadline.longestGapMs! / 1e3, 9);
      expect(sampleValue(after, 'itb_image_arrival_jitter_seconds_count', tcp)).toBe(deadline.jitter!.count);
      for (const phase of ['alone', 'beside'] as const) {
        const labels = { ...tcp, phase };
        const figures = lane[phase];
        expect(sampleValue(after, 'itb_commands_sent_total', labels)).toBe(figures.sent);
        expect(sampleValue(after, 'itb_commands_acked_total', labels)).toBe(figures.acked);
        expect(sampleValue(after, 'itb_commands_received_total', { ...labels, verdict: 'intact' })).toBe(
          figures.received - figures.corrupt,
        );
        expect(sampleValue(after, 'itb_command_one_way_seconds_count', labels)).toBe(figures.oneWay!.count);
        expect(sampleValue(after, 'itb_command_round_trip_seconds_count', labels)).toBe(figures.paired);
      }
      // Counters and histograms never went back between the scrapes.
      for (const sample of during.samples.filter((s) => /^itb_.*(_total|_bucket|_count)$/.test(s.name)))
        expect(sampleValue(after, sample.name, sample.labels)).toBeGreaterThanOrEqual(sample.value);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});
