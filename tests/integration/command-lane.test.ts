import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aloneCommandCount, commandLaneOf } from '../../services/core/model/command-lane.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { transportByName, transports } from '../../services/transports/index.js';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';
import { LocalServers } from '../helpers/harness.js';
import { runBoth } from '../helpers/in-process.js';

// The command lane (COMMAND_RATE) on every transport, through the real apps, with images in flight at 533 KB and at
// 16 MiB: every command sent alone and beside the images is acknowledged and arrives intact, each one's one-way time
// is inside its round trip, none counts as an image (counts, MB/s), and a transport that cannot carry the lane says
// why while its images go as ever. Times are compared only where the mechanism decides them (see each assertion).

const COMMAND_RATE = 500;
const servers = new LocalServers();
let outputDir: string;
beforeAll(async () => {
  await servers.startFor(transports);
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-command-lane-'));
});
afterAll(async () => {
  await servers.closeAll();
  await rm(outputDir, { recursive: true, force: true });
});

/** Checks one section's lane and images (softly: every transport's problems are reported); returns its lane. */
function checkSection(section: SectionResult, imageBytes: number) {
  const lane = section.commands;
  if (lane === undefined) throw new Error(`${section.transport}: no command lane in its result`);
  const declared = commandLaneOf(transportByName(section.transport).traits);
  // The images go as ever: none of the commands is among them.
  const delivered = section.okCount + (section.supersededCount ?? 0);
  expect
    .soft([section.transport, section.ok, delivered, section.lostCount, section.corruptCount])
    .toEqual([section.transport, true, section.imageCount, 0, 0]);
  expect
    .soft(section.throughputMBps, section.transport)
    .toBeCloseTo((section.okCount * imageBytes) / 1e6 / (section.totalMs! / 1000), 6);
  if ('unavailable' in declared) {
    expect.soft([lane.notRun, lane.alone.sent, lane.beside.sent]).toEqual([declared.unavailable, 0, 0]);
    return lane;
  }
  expect.soft([lane.notRun, lane.how, lane.interleaves]).toEqual([null, declared.how, declared.interleaves]);
  const alone = aloneCommandCount(COMMAND_RATE);
  const { alone: a, beside: b } = lane;
  expect
    .soft([section.transport, a.sent, a.acked, a.received, a.corrupt, a.unacknowledged])
    .toEqual([section.transport, alone, alone, alone, 0, 0]);
  expect.soft(b.sent, `${section.transport}: no command went beside the images`).toBeGreaterThan(0);
  expect.soft([section.transport, b.acked, b.received, b.corrupt]).toEqual([section.transport, b.sent, b.sent, 0]);
  // One clock (one host): each command's one-way time is the first part of its round trip, so every order
  // statistic of the one-way times is at most the same one of the round trips.
  for (const phase of [a, b]) {
    const name = `${section.transport}, ${phase === a ? 'alone' : 'beside'}`;
    expect.soft(phase.oneWay?.count, name).toBe(phase.received);
    expect.soft(phase.rtt?.count, name).toBe(phase.acked);
    // Each acknowledged command's round trip reached the receiver's record and was paired with its arrival.
    expect.soft([phase.paired, phase.arrivalsAfterAck], name).toEqual([phase.acked, 0]);
    if (phase.oneWay?.count !== phase.rtt?.count) continue;
    expect.soft(phase.oneWay!.p50Ms, name).toBeLessThanOrEqual(phase.rtt!.p50Ms);
    expect.soft(phase.oneWay!.maxMs, name).toBeLessThanOrEqual(phase.rtt!.maxMs);
  }
  return lane;
}

describe('the command lane (COMMAND_RATE) on every transport', () => {
  for (const { size, bytes, count, window, warmup } of [
    { size: '533KiB', bytes: 533 * 1024, count: '30', window: '4', warmup: '1' },
    // WINDOW 1 at 16 MiB: Redis pub/sub refuses two such images in flight (its output-buffer limit, 32 MB).
    // Two images, no warm-up: a command goes beside each (500 a second, one every 2 ms; a 16 MiB image takes longer on
    // every transport), and more would only add seconds of CPU.
    { size: '16MiB', bytes: 16 * 1024 * 1024, count: '2', window: '1', warmup: '0' },
  ]) {
    const title = `with ${size} images in flight: every command acknowledged and intact, alone and beside the images`;
    it(`${title}, apart from them`, async () => {
      const outcome = await runBoth(outputDir, {
        TRANSPORTS: 'all',
        IMAGE_SIZE: size,
        IMAGE_COUNT: count,
        WINDOW: window,
        WARMUP: warmup,
        COMMAND_RATE: String(COMMAND_RATE),
        ...servers.env(transports),
        IMAGE_TIMEOUT_MS: '30000',
      });
      expect(outcome.report.transports.map((t) => t.transport)).toEqual(transports.map((t) => t.name));
      expect(resultsSchemaErrors(outcome.report)).toEqual([]);
      const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
      for (const section of outcome.report.sections) {
        const lane = checkSection(section, bytes);
        if (lane.notRun === null)
          expect(log).toContain(
            `Commands beside the images: ${lane.beside.sent} sent, ${lane.beside.acked} acknowledged, 0 not, 0 corrupt`,
          );
        else expect(log).toContain(`not run: ${lane.notRun}`);
      }
      if (size === '16MiB') {
        // TCP writes each frame whole: a command handed over while a 16 MiB image is being written waits for it
        // (milliseconds on any machine), where alone it waits for nothing.
        const tcp = outcome.report.sections.find((s) => s.transport === 'tcp')!.commands!;
        expect(tcp.beside.oneWay!.p50Ms).toBeGreaterThan(tcp.alone.oneWay!.p50Ms);
      }
    }, 240_000);
  }

  it('opens a lane of its own (a second stream) at the first command: a warm-up longer than IMAGE_TIMEOUT_MS ' +
    'leaves it no idle stream for the receiver to close', async () => {
    // The receiver closes a stream silent for IMAGE_TIMEOUT_MS; a command stream opened at connect sat through the
    // warm-up (at least WARMUP_MIN_MS) and was closed, failing the section.
    const lanes = transports.filter((t) => t.name.startsWith('grpc'));
    const outcome = await runBoth(outputDir, {
      TRANSPORTS: lanes.map((t) => t.name).join(','),
      IMAGE_SIZE: '1KB',
      IMAGE_COUNT: '50',
      // 1.5 s longer than the timeout; a timeout of 3 s, not less: a machine loaded with other test files and CPU
      // burners once stalled an image's ack for over 1.5 s (the failure this test is not about).
      WARMUP_MIN_MS: '4500',
      IMAGE_TIMEOUT_MS: '3000',
      COMMAND_RATE: String(COMMAND_RATE),
    });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    for (const section of outcome.report.sections) checkSection(section, 1000);
  }, 120_000);
});
