import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../services/core/control/control-protocol.js';
import { TIME_BUCKET_BOUNDS_SECONDS, VERDICTS } from '../../services/core/model/metric-totals.js';
import type { SectionResult } from '../../services/core/model/section.js';
import type { ReceiverApp } from '../../services/receiver/app.js';
import type { Config } from '../../services/core/config/config.js';
import { TEST_AUTH_TOKEN } from '../helpers/harness.js';
import { runTransmitter, startReceiver } from '../helpers/in-process.js';
import { parsePrometheusText, promtoolCheckMetrics, type Scrape, sampleValue } from '../helpers/prometheus-text.js';

// GET /metrics over real HTTP, scraped before, during and after real runs over loopback (TCP and
// ZeroMQ: no broker needed), each scrape checked by promtool and read back.

const TRANSPORTS = ['tcp', 'zeromq'];
const IMAGE_SIZE_BYTES = 16_000;
const HISTOGRAMS = ['itb_image_one_way_seconds', 'itb_image_round_trip_seconds'];

let outputDir: string;
let receiver: ReceiverApp;
let transmitterConfig: Config;
let base: string;
beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-metrics-'));
  ({ receiver, transmitterConfig } = await startReceiver(outputDir, {
    TRANSPORTS: TRANSPORTS.join(','),
    IMAGE_SIZE: `${IMAGE_SIZE_BYTES}B`,
    DURATION: '2s',
    WARMUP: '10',
  }));
  base = `http://127.0.0.1:${transmitterConfig.controlPort}`;
});
afterAll(async () => {
  await receiver?.close();
  await rm(outputDir, { recursive: true, force: true });
});

/** GET /metrics with no AUTH_TOKEN, its text checked by promtool (valid, no lint finding), then read back. */
async function scrape(): Promise<{ scrape: Scrape; text: string; contentType: string | null }> {
  const response = await fetch(`${base}/metrics`);
  expect(response.status).toBe(200);
  const text = await response.text();
  const verdict = await promtoolCheckMetrics(text);
  expect(verdict, text).toEqual({ exitCode: 0, output: '' });
  return { scrape: parsePrometheusText(text), text, contentType: response.headers.get('content-type') };
}

const runState = (s: Scrape): string[] =>
  ['idle', 'running', 'ended'].filter((state) => sampleValue(s, 'itb_run_state', { state }) === 1);
const images = (s: Scrape, transport: string, verdict: string): number =>
  sampleValue(s, 'itb_images_total', { transport, verdict });
const sumOf = (sections: readonly SectionResult[], transport: string, figure: (s: SectionResult) => number): number =>
  sections.filter((s) => s.transport === transport).reduce((sum, s) => sum + figure(s), 0);

/** Every histogram's buckets rise with le, end at +Inf with _count, and the one-way _count is the intact images. */
function expectWholeHistograms(s: Scrape): void {
  for (const name of HISTOGRAMS)
    for (const transport of TRANSPORTS) {
      const buckets = s.samples.filter((x) => x.name === `${name}_bucket` && x.labels.transport === transport);
      expect(buckets.map((b) => b.labels.le)).toEqual([...TIME_BUCKET_BOUNDS_SECONDS.map(String), '+Inf']);
      const counts = buckets.map((b) => b.value);
      expect(counts).toEqual([...counts].sort((a, b) => a - b));
      const count = sampleValue(s, `${name}_count`, { transport });
      expect(counts.at(-1)).toBe(count);
      if (count > 0) expect(sampleValue(s, `${name}_sum`, { transport })).toBeGreaterThan(0);
    }
  for (const transport of TRANSPORTS)
    expect(sampleValue(s, 'itb_image_one_way_seconds_count', { transport })).toBe(images(s, transport, 'intact'));
}

/** Every counter and histogram sample of `later` is at least `earlier`'s: nothing goes back. */
function expectNoneBack(earlier: Scrape, later: Scrape): void {
  const counters = earlier.samples.filter((x) => /^itb_.*(_total|_bucket|_count)$/.test(x.name));
  expect(counters.length).toBeGreaterThan(40);
  for (const sample of counters)
    expect(sampleValue(later, sample.name, sample.labels)).toBeGreaterThanOrEqual(sample.value);
}

describe('GET /metrics', () => {
  let before: Scrape;
  let during: Scrape;
  let after: Scrape;
  let outcome: RunOutcome;

  it('before any run: valid, open without AUTH_TOKEN, every transport and verdict at 0, the state idle', async () => {
    const first = await scrape();
    before = first.scrape;
    expect(first.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(first.text).not.toContain(TEST_AUTH_TOKEN);
    expect(runState(before)).toEqual(['idle']);
    expect(sampleValue(before, 'itb_run_start_time_seconds')).toBe(0);
    for (const transport of TRANSPORTS)
      for (const verdict of VERDICTS) {
        expect(images(before, transport, verdict)).toBe(0);
        expect(sampleValue(before, 'itb_image_bytes_total', { transport, verdict })).toBe(0);
      }
    expectWholeHistograms(before);
    expect(sampleValue(before, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(sampleValue(before, 'process_resident_memory_bytes')).toBeGreaterThan(10 * 1024 * 1024);
    for (const name of ['itb_images_total', 'itb_image_one_way_seconds', 'itb_run_state'])
      expect(before.help.get(name)).toMatch(/\w/);
    expect(before.type.get('itb_image_one_way_seconds')).toBe('histogram');
    expect(before.help.get('itb_images_total')).toContain('warm-up images are in no figure');
  });

  it('mid-run: valid, the state running, the finished section and the open one both counted; after the run the ' +
    'counters are what the run delivered, and nothing went back', async () => {
    const startedBeforeMs = Date.now();
    const run = runTransmitter(transmitterConfig);
    // Scraped until the second section (ZeroMQ, after TCP's) has images: a run in progress with a finished section.
    const deadlineMs = Date.now() + 30_000;
    try {
      for (;;) {
        const { scrape: now } = await scrape();
        if (runState(now)[0] === 'running' && images(now, 'zeromq', 'intact') > 0) {
          during = now;
          break;
        }
        if (Date.now() > deadlineMs) throw new Error('no scrape found the ZeroMQ section with images within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      // A failed scrape leaves no run going on into the next test.
      outcome = await run;
    }
    expect(outcome.succeeded, outcome.summary).toBe(true);
    after = (await scrape()).scrape;

    expect(images(during, 'tcp', 'intact')).toBeGreaterThan(0);
    expectWholeHistograms(during);
    expect(sampleValue(during, 'itb_run_start_time_seconds') * 1e3).toBeGreaterThanOrEqual(startedBeforeMs - 1000);

    expect(runState(after)).toEqual(['ended']);
    expect(sampleValue(after, 'itb_run_start_time_seconds')).toBe(sampleValue(during, 'itb_run_start_time_seconds'));
    const { sections } = outcome.report;
    for (const transport of TRANSPORTS) {
      const figures = {
        intact: sumOf(sections, transport, (s) => s.okCount),
        corrupt: sumOf(sections, transport, (s) => s.corruptCount),
        lost: sumOf(sections, transport, (s) => s.lostCount),
      };
      expect(figures.intact).toBeGreaterThan(0);
      for (const verdict of VERDICTS) {
        expect(images(after, transport, verdict), `${transport} ${verdict}`).toBe(figures[verdict]);
        expect(sampleValue(after, 'itb_image_bytes_total', { transport, verdict })).toBe(
          figures[verdict] * IMAGE_SIZE_BYTES,
        );
      }
      expect(sampleValue(after, 'itb_image_round_trip_seconds_count', { transport })).toBe(
        sumOf(sections, transport, (s) => s.rtt?.count ?? 0),
      );
      // Every loopback time is under 10 s; the sum is the sections' count × mean, in seconds.
      expect(sampleValue(after, 'itb_image_one_way_seconds_bucket', { transport, le: '10' })).toBe(figures.intact);
      expect(sampleValue(after, 'itb_image_one_way_seconds_sum', { transport })).toBeCloseTo(
        sumOf(sections, transport, (s) => ((s.latency?.count ?? 0) * (s.latency?.meanMs ?? 0)) / 1e3),
        9,
      );
    }
    expectWholeHistograms(after);
    expectNoneBack(before, during);
    expectNoneBack(during, after);
  }, 60_000);

  it('adds the next run to the totals: counters are the receiver’s since it started, not the last run’s', async () => {
    const next = await runTransmitter({ ...transmitterConfig, durationMs: undefined, imageCount: 25 });
    expect(next.succeeded, next.summary).toBe(true);
    const latest = (await scrape()).scrape;
    expect(runState(latest)).toEqual(['ended']);
    for (const transport of TRANSPORTS)
      expect(images(latest, transport, 'intact')).toBe(
        images(after, transport, 'intact') + sumOf(next.report.sections, transport, (s) => s.okCount),
      );
    expectNoneBack(after, latest);
  }, 60_000);
});
