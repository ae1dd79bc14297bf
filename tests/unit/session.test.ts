import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { imageChecksum, type PartsChecksum } from '../../services/core/wire/checksum.js';
import { parseConfig } from '../../services/core/config/config.js';
import type { RunAnnouncement, SectionEnd } from '../../services/core/control/control-protocol.js';
import type { SectionPlan, SectionResult } from '../../services/core/model/section.js';
import { RunSession } from '../../services/receiver/session.js';
import { Verifier } from '../../services/receiver/verifier.js';
import { transports } from '../../services/transports/index.js';
import { fixtureHost, fixturePlan } from '../helpers/fixtures.js';
import { testLog } from '../helpers/harness.js';

// What hashing takes from the receiver thread, as a section reports it. The hash is made to take
// a known time (a busy wait), so each figure can be told from the wrong one it could be: with the
// warm-up's hashing counted, with the run after the last recorded arrival counted, or summed
// instead of the longest.

/**
 * How long each injected hash keeps the thread busy: long beside what preemption adds to a busy wait
 * on a loaded machine (at 5 ms, three hashes were once timed at 61.8 ms, over the 45 of the wrong figure).
 */
const HASH_MS = 20;
const HASH_NS = BigInt(HASH_MS * 1_000_000);
const IMAGE = Buffer.alloc(1000, 3);
// Twice the recorded ones: every wrong figure is then at least twice the right one, a margin
// that holds when a loaded machine preempts the busy waits (a run of two was once timed at 19 ms).
const WARMUP_IMAGES = 6;

/** xxHash64, after keeping the thread busy for HASH_MS. */
function slowHash(payload: Buffer | readonly Buffer[]): bigint {
  const untilNs = process.hrtime.bigint() + HASH_NS;
  while (process.hrtime.bigint() < untilNs);
  return imageChecksum(payload);
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * What a byte stream hands over with each image in `runSection(true, true)`: a sum made as its parts were read (the
 * second recorded image's wrong), HASH_NS of hashing in four parts.
 */
const summedByParts = (seq: number): PartsChecksum => ({
  value: imageChecksum(IMAGE) + (seq === WARMUP_IMAGES + 1 ? 1n : 0n),
  hashNs: HASH_NS,
  longestPartNs: HASH_NS / 4n,
});

/**
 * One section of three recorded images after three warm-up ones, delivered as the timeline in the test says; with
 * `partsSummed`, each comes with its sum (summedByParts) and the verifier must never hash.
 */
async function runSection(verify: boolean, partsSummed = false): Promise<SectionResult> {
  const neverHash = (): bigint => {
    throw new Error('hashed an image whose parts were summed as they were read');
  };
  const session = new RunSession(
    testLog,
    () => fixtureHost('receiver'),
    verify,
    undefined,
    (onRun) => new Verifier(onRun, partsSummed ? neverHash : slowHash),
  );
  const parsed = parseConfig({ AUTH_TOKEN: 'test-secret-0123456789abcdef' }, transports);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const plan: SectionPlan = fixturePlan({
    transport: 'tcp',
    label: 'TCP',
    sectionId: 4,
    imageCount: 3,
    window: 3,
    imageSizeBytes: IMAGE.length,
    warmup: { mode: 'images', images: WARMUP_IMAGES },
  });
  const announcement: RunAnnouncement = {
    startedAt: new Date().toISOString(),
    imageDescription: 'zeros',
    imageSizeBytes: IMAGE.length,
    imageCount: 3,
    window: 3,
    warmup: { mode: 'images', images: 0 },
    repeat: 1,
    transports: ['tcp'],
    arrivalNotes: [],
    receivers: 1,
    receiverIndex: 0,
    config: parsed.config,
    hosts: { transmitter: fixtureHost('transmitter') },
  };
  session.start(announcement);
  session.openSection(plan, undefined);
  const deliver = (seq: number): void => {
    session.deliver({
      header: {
        sectionId: 4,
        seq,
        sizeBytes: IMAGE.length,
        checksum: imageChecksum(IMAGE),
        sentAtNs: process.hrtime.bigint(),
      },
      payload: IMAGE,
      arrivalNs: process.hrtime.bigint(),
      ...(partsSummed ? { partsChecksum: summedByParts(seq) } : {}),
    });
  };
  // The warm-up's six images arrive in one turn: one run of six hashes, before the span.
  for (let seq = 0; seq < WARMUP_IMAGES; seq++) deliver(seq);
  await nextTurn();
  expect(session.startMeasuring({ images: WARMUP_IMAGES, ms: 1, steady: null, mediansMs: null })).toBeUndefined();
  // Two recorded images in one turn: one run of two hashes, inside the span.
  deliver(WARMUP_IMAGES);
  deliver(WARMUP_IMAGES + 1);
  await nextTurn();
  // The last recorded image ends the span; its hash runs after it (once this callback, the test's, yields).
  deliver(WARMUP_IMAGES + 2);
  // The transmitter's round trips of the three images (60 ms each) come in their batch, then its end.
  expect(
    await session.roundTrips(
      '4',
      Buffer.from(
        Float64Array.of(1, 60_000_000, Number.NaN, 2, 60_000_000, Number.NaN, 3, 60_000_000, Number.NaN).buffer,
      ),
    ),
  ).toBe(true);
  const end: SectionEnd = {
    failure: null,
    transmitterCost: null,
    imagesSent: 3,
    roundTripsShipped: 3,
    sendLag: null,
    rttFromDue: null,
    meanInFlight: 3,
    rttSeconds: [],
    achievedRatePerSecond: null,
    clientFigures: null,
    coldStart: { connectMs: null, firstImageRttMs: null },
    clockAfter: null,
    commands: null,
  };
  const result = await session.endSection(end);
  if (result === undefined) throw new Error('no section result');
  return result;
}

describe('RunSession: what verification costs the receiver thread', () => {
  it(
    "reports the recorded images' hashing, the longest run " + 'inside the span and its share of the busy time there',
    async () => {
      const result = await runSection(true);
      expect(result.ok).toBe(true);
      expect(result.rtt).toMatchObject({ count: 3, minMs: 60, maxMs: 60 });
      // Three recorded hashes: 15 ms; with the warm-up's six it would be 45.
      expect(result.verifyMs).toBeGreaterThanOrEqual(3 * HASH_MS);
      expect(result.verifyMs).toBeLessThan(9 * HASH_MS);
      // The run of two inside the span: 10 ms; the warm-up's run of six (30) is outside it, as is the last image's.
      expect(result.verifyLongestRunMs).toBeGreaterThanOrEqual(2 * HASH_MS);
      expect(result.verifyLongestRunMs).toBeLessThan(6 * HASH_MS);
      // The span is mostly that run of hashing: the thread did little else in it.
      expect(result.verifyBusyShare).toBeGreaterThan(0.5);
      expect(result.verifyBusyShare).toBeLessThanOrEqual(1);
      expect(result.cost.receiver).not.toBeNull();
    },
  );

  it('has none of the three figures with VERIFY=false, and every image still counts as intact', async () => {
    const result = await runSection(false);
    expect([result.verifyMs, result.verifyLongestRunMs, result.verifyBusyShare]).toEqual([null, null, null]);
    expect(result.okCount).toBe(3);
  });
});

describe('RunSession: an image whose parts were summed as they were read', () => {
  it('has its verdict at once, its hashing counted from the sum, and the longest part as the longest run', async () => {
    const result = await runSection(true, true);
    // The second recorded image's sum does not match its header: corrupt, without the verifier hashing anything.
    expect([result.okCount, result.corruptCount, result.ok]).toEqual([2, 1, false]);
    // The three recorded images' hashing, exactly as their sums say; the warm-up's left out.
    expect(result.verifyMs).toBe(3 * HASH_MS);
    // A part at a time held the thread, never a whole image.
    expect(result.verifyLongestRunMs).toBe(HASH_MS / 4);
  });
});

describe('RunSession: the host load over the measured span', () => {
  it('reads the host as measuring starts and after the last recorded image, and keeps it in the result', async () => {
    const result = await runSection(true);
    const load = result.hostLoad;
    if (load == null) throw new Error('no host load');
    // The plan has no clock estimate: whether the transmitter shared the host is not known, so the others' CPU is not
    // told apart from the run's.
    expect(load.transmitterOnHost).toBeNull();
    expect(load.otherProcessesCores).toBeNull();
    expect(load.cores).toBeGreaterThan(0);
    if (existsSync('/proc/stat')) {
      // Between the two readings: the run of two hashes, each a 20 ms busy wait, which the host counts as busy.
      expect(load.spanMs).toBeGreaterThanOrEqual(2 * HASH_MS);
      expect(load.hostBusyShare).toBeGreaterThan(0);
    } else expect(load.spanMs).toBeNull();
  });
});
