import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sectionCredential } from '../../services/core/wire/auth.js';
import { imageChecksum, XXH3_MIN_BYTES } from '../../services/core/wire/checksum.js';
import type { Config } from '../../services/core/config/config.js';
import { encodeFrameHeader, type Ack } from '../../services/core/wire/frame.js';
import type { SectionPlan } from '../../services/core/model/section.js';
import type { ReceiverApp } from '../../services/receiver/app.js';
import { Verifier } from '../../services/receiver/verifier.js';
import { hostFacts } from '../../services/shared/host.js';
import { ControlClient } from '../../services/transmitter/control-client.js';
import { transports } from '../../services/transports/index.js';
import { escapeRegExp, eventually, LocalServers, TEST_AUTH_TOKEN, testLog } from '../helpers/harness.js';
import { startReceiver } from '../helpers/in-process.js';
import { readImageRecords } from '../helpers/run-files.js';

// Verification comes after the stamp: the receiver acknowledges an image as soon as it is in hand
// and hashes it afterwards (or a byte stream sums its parts as it reads them, the last after the
// stamp). A mismatch must still be counted, shown per image and in the section's result, and the
// section must not be ok, on every transport.

describe('Verifier', () => {
  it('hashes as the delivering callback returns, before any other callback; flush() hashes at once', async () => {
    const runs: bigint[] = [];
    const verifier = new Verifier((runNs) => runs.push(runNs));
    const image = randomBytes(100_000);
    const verdicts: boolean[] = [];
    // Queued before the images: an I/O or check-phase callback that the old verifier (setImmediate) ran first.
    let verdictsSeenByNextCallback: boolean[] | undefined;
    setImmediate(() => {
      verdictsSeenByNextCallback = [...verdicts];
    });
    verifier.enqueue(image, imageChecksum(image), (ok) => verdicts.push(ok));
    verifier.enqueue([image.subarray(0, 10), image.subarray(10)], imageChecksum(image) + 1n, (ok) => verdicts.push(ok));
    // The caller (the transport, about to send the ack) gets control back before any hashing.
    expect(verdicts).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(verdicts).toEqual([true, false]);
    // Both hashed as one run, before any other callback of the event loop.
    expect(verdictsSeenByNextCallback).toEqual([true, false]);
    expect(runs).toHaveLength(1);
    verifier.enqueue(image, imageChecksum(image), (ok) => verdicts.push(ok));
    verifier.flush();
    expect(verdicts).toEqual([true, false, true]);
  });
});

const servers = new LocalServers();
let outputDir: string;
let receiver: ReceiverApp;
let config: Config;
beforeAll(async () => {
  await servers.startFor(transports);
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-verify-'));
  ({ receiver, transmitterConfig: config } = await startReceiver(outputDir, {
    TRANSPORTS: 'all',
    ...servers.env(transports),
  }));
});
afterAll(async () => {
  await receiver?.close();
  await servers.closeAll();
  await rm(outputDir, { recursive: true, force: true });
});

/** Images of 4 KB on every transport; the byte streams again with images they sum part by part as they read them. */
const CASES = [
  ...transports.map((transport, index) => ({ transport, sectionId: 900 + index, imageBytes: 4096, how: '' })),
  ...['tcp', 'unix'].map((name, index) => ({
    transport: transports.find((t) => t.name === name)!,
    sectionId: 950 + index,
    imageBytes: XXH3_MIN_BYTES + 4000,
    how: ', summed by parts as it was read,',
  })),
];

describe('a corrupt image, acknowledged before it is verified', () => {
  for (const { transport, sectionId, imageBytes, how } of CASES) {
    it(`${transport.name}: is acked as received${how} then counted ` +
      `corrupt in its image and its section, which is not ok (${imageBytes} B)`, async () => {
      const control = new ControlClient('127.0.0.1', config.controlPort, 5000);
      control.authorize(TEST_AUTH_TOKEN);
      try {
        await control.startRun({
          startedAt: new Date().toISOString(),
          imageDescription: 'random bytes',
          imageSizeBytes: imageBytes,
          imageCount: 3,
          window: 3,
          warmup: { mode: 'images', images: 0 },
          repeat: 1,
          transports: [transport.name],
          arrivalNotes: [],
          receivers: 1,
          receiverIndex: 0,
          config,
          hosts: { transmitter: hostFacts(transports) },
        });
        const plan: SectionPlan = {
          sectionId,
          transport: transport.name,
          label: transport.label,
          baseline: transport.traits.baseline,
          repeat: 1,
          imageCount: 3,
          warmup: { mode: 'images', images: 0 },
          imageSizeBytes: imageBytes,
          window: 3,
          ratePerSecond: null,
          clients: 1,
          receivers: 1,
          receiverIndex: 0,
          clock: null,
        };
        await control.openSection(plan);
        // A warm-up the plan does not allow would stretch the record: refused, and nothing changes.
        await expect(
          control.startMeasuring(plan.sectionId, { images: 5, ms: 1, steady: null, mediansMs: null }),
        ).rejects.toThrow(/HTTP 409.*a warm-up of 5 images is not what the section's plan allows/);
        // No warm-up: the recorded images start at seq 0.
        await control.startMeasuring(plan.sectionId, { images: 0, ms: 0, steady: null, mediansMs: null });
        await expect(
          control.startMeasuring(plan.sectionId, { images: 0, ms: 0, steady: null, mediansMs: null }),
        ).rejects.toThrow(/HTTP 409.*already measuring/);
        const acks: Ack[] = [];
        const link = await transport.connect({
          host: '127.0.0.1',
          bindHost: '127.0.0.1',
          port: config.ports[transport.name] ?? 0,
          url: config.urls[transport.name],
          socketPath: config.socketPaths[transport.name],
          maxImageBytes: config.maxImageBytes,
          log: testLog,
          connectTimeoutMs: 5000,
          imageBytes: 1024 * 1024,
          window: 64,
          credential: sectionCredential(TEST_AUTH_TOKEN, plan.sectionId),
          onAck: (ack) => acks.push(ack),
          onFailure() {},
        });
        try {
          const image = randomBytes(imageBytes);
          const checksum = imageChecksum(image);
          for (const seq of [0, 1, 2]) {
            // Image 2 (seq 1) carries a checksum that does not match its bytes.
            link.send(
              encodeFrameHeader({
                sectionId: plan.sectionId,
                seq,
                sizeBytes: image.length,
                checksum: seq === 1 ? checksum + 1n : checksum,
                sentAtNs: process.hrtime.bigint(),
              }),
              image,
            );
            // A latest-frame key supersedes an image the next one overwrites before it is read: one at a time.
            if (transport.traits.supersedesImages !== undefined) await eventually(() => acks.length === seq + 1);
          }
          await eventually(() => acks.length === 3);
        } finally {
          await link.close();
        }
        expect(acks.map((a) => [a.seq, a.status])).toEqual([
          [0, 'accepted'],
          [1, 'accepted'],
          [2, 'accepted'],
        ]);
        // The transmitter's round trips (5 s each: over any one-way time here) come in a batch, then its end.
        await control.roundTrips(
          plan.sectionId,
          Buffer.from(Float64Array.of(1, 5e9, Number.NaN, 2, 5e9, Number.NaN, 3, 5e9, Number.NaN).buffer),
        );
        const result = await control.endSection(plan.sectionId, {
          failure: null,
          transmitterCost: null,
          imagesSent: 3,
          roundTripsShipped: 3,
          sendLag: null,
          rttFromDue: null,
          meanInFlight: null,
          rttSeconds: [],
          achievedRatePerSecond: null,
          clientFigures: null,
          coldStart: { connectMs: 1.5, firstImageRttMs: 0.25 },
          clockAfter: null,
          commands: null,
        });
        expect(result.warmedUp).toEqual({ images: 0, ms: 0, steady: null, mediansMs: null });
        expect([result.okCount, result.corruptCount, result.lostCount]).toEqual([2, 1, 0]);
        // Not ok for the corrupt image alone: every round trip came, and none is shorter than its one-way time.
        expect([result.ok, result.failure, result.rtt?.count]).toEqual([false, null, 3]);
        // Only intact images are in the time figures.
        expect(result.latency?.count).toBe(2);
        expect(result.verifyMs).toBeGreaterThan(0);
        const finished = await control.finishRun();
        expect(finished.succeeded).toBe(false);
        expect(finished.summary).toMatch(new RegExp(`^${escapeRegExp(transport.label)}\\s.*\\s2\\s+0\\s+1\\s`, 'm'));
        // The section's CSV in the run's folder: each image with its verdict, its time and its round trip.
        const images = await readImageRecords(outputDir, result, finished.runFolder);
        expect(images.map((i) => [i.image, i.status, i.rttMs])).toEqual([
          [1, 'ok', 5000],
          [2, 'corrupt', 5000],
          [3, 'ok', 5000],
        ]);
        expect(images.every((i) => i.timeMs !== null && i.timeMs > 0)).toBe(true);
        // The transmitter's cold-start figures pass through; the first image's one-way time is the receiver's own (seq
        // 0, image 1).
        expect(result.coldStart).toEqual({ connectMs: 1.5, firstImageMs: images[0]!.timeMs, firstImageRttMs: 0.25 });
      } finally {
        control.close();
      }
    }, 90_000);
  }
});
