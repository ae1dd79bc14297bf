import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SectionResult } from '../../services/core/model/section.js';
import type { Transport } from '../../services/transports/contract.js';
import { COMMAND_SEQ_BASE } from '../../services/core/wire/frame.js';
import { LocalServers } from '../helpers/harness.js';
import { runBoth } from '../helpers/in-process.js';
import { readImageCsv, readImageRecords } from '../helpers/run-files.js';
import { DueTimer } from '../../services/transmitter/due-timer.js';

// The figures' self-checks, broken on purpose: every transport of the table runs whole (both apps
// in this process, real sockets, a real redis-server and nats-server) with a known delay put into
// one place of the path of every other image (odd seqs), and the delayed images' one-way time and
// round trip must move by that delay against the undelayed ones' of the same section where it lies
// on their path, and stay where they were where it does not. A measurement that ignored the delay,
// or counted it where it does not belong, fails here. Delayed and undelayed images alternate in one
// run, so a machine whose load changes between runs moves both alike (two separate runs' p50s once
// differed by 22 ms beside other test files).

/** Where the delay goes. */
type FaultPoint =
  /**
   * The transmitter's link holds each stamped frame before handing it to the library: on the wire's side of both
   * stamps.
   */
  | 'link'
  /** The receiver blocks in delivery, after the arrival stamp and before the ack leaves. */
  | 'delivery'
  /** The transmitter takes each ack late: after the arrival, before the round trip's end. */
  | 'ack'
  /** The receiver's arrival stamp is moved later than the arrival, as a stamp taken late by our own code would be. */
  | 'late-stamp'
  /** As late-stamp, for every command of the lane (COMMAND_RATE) and no image, by LATE_COMMAND_STAMP_MS. */
  | 'late-command-stamp';

/** Where a frame header holds its seq (services/core/wire/frame.ts: magic, version, headerBytes, sectionId, seq). */
const SEQ_OFFSET = 12;
/** The delay injected, in ms: far above the spread of a 1 KB image's p50 on a loaded 2-core machine. */
const DELAY_MS = 20;
/**
 * How late the late stamp is, in ms: arithmetic on the stamp, not a timer, so it can be far above any round trip a
 * loaded machine gives an image (one of 15 http-json round trips once exceeded its one-way time + 20 ms in CI).
 */
const LATE_STAMP_MS = 200;
/**
 * How late a command's stamp is, in ms: the 3 ms the issue that added the commands' check saw pass unnoticed. A
 * command's round trip on loopback is a fraction of it, so most commands' one-way times exceed their round trips.
 */
const LATE_COMMAND_STAMP_MS = 3;
let fault: FaultPoint | null = null;

/** Only odd seqs are delayed: their even neighbours, in the same run, are the undisturbed figures. */
const delayed = (seq: number): boolean => seq % 2 === 1;

/** `transport` with the current fault in its path; the real transport underneath, unchanged. */
function withFault(transport: Transport): Transport {
  return {
    ...transport,
    async connect(options) {
      const onAck: typeof options.onAck = (ack) =>
        fault === 'ack' && delayed(ack.seq) ? void setTimeout(() => options.onAck(ack), DELAY_MS) : options.onAck(ack);
      const link = await transport.connect({ ...options, onAck });
      return {
        send: (header, payload) =>
          fault === 'link' && delayed(header.readUInt32BE(SEQ_OFFSET))
            ? void setTimeout(() => link.send(header, payload), DELAY_MS)
            : link.send(header, payload),
        close: () => link.close(),
      };
    },
    listen(options) {
      return transport.listen({
        ...options,
        deliver(frame) {
          if (fault === 'late-command-stamp')
            return frame.header.seq >= COMMAND_SEQ_BASE
              ? options.deliver({ ...frame, arrivalNs: frame.arrivalNs + BigInt(LATE_COMMAND_STAMP_MS * 1e6) })
              : options.deliver(frame);
          if (!delayed(frame.header.seq)) return options.deliver(frame);
          if (fault === 'late-stamp')
            return options.deliver({ ...frame, arrivalNs: frame.arrivalNs + BigInt(LATE_STAMP_MS * 1e6) });
          if (fault === 'delivery') {
            const untilNs = process.hrtime.bigint() + BigInt(DELAY_MS * 1e6);
            while (process.hrtime.bigint() < untilNs);
          }
          return options.deliver(frame);
        },
      });
    },
  };
}

vi.mock('../../services/transports/index.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../services/transports/index.js')>();
  return { ...original, transportByName: (name: string) => withFault(original.transportByName(name)) };
});

const { transports } = await import('../../services/transports/index.js');
const servers = new LocalServers();
let outputDir: string;
beforeAll(async () => {
  await servers.startFor(transports);
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-faults-'));
});
afterAll(async () => {
  await servers.closeAll();
  await rm(outputDir, { recursive: true, force: true });
});

/** Warm-up images: even, so the recorded image k (from 1) has seq k + WARMUP_IMAGES - 1. */
const WARMUP_IMAGES = 4;
/** Recorded images: half of them delayed. */
const IMAGE_COUNT = 30;

/** Each transport's section, and the change in its p50 one-way and round trip of the delayed images over the others. */
interface Figures {
  sections: SectionResult[];
  shifts: { transport: string; oneWayMs: number; rttMs: number }[];
}

/** The median of `values` (the mean of the two middle ones for an even count). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1]! + sorted[middle]!) / 2 : sorted[Math.floor(middle)]!;
}

/** A whole run of every transport, one image at a time, with `point` delayed on every odd seq. */
async function runWith(point: FaultPoint): Promise<Figures> {
  fault = point;
  try {
    const outcome = await runBoth(outputDir, {
      TRANSPORTS: 'all',
      IMAGE_COUNT: String(IMAGE_COUNT),
      IMAGE_SIZE: '1KB',
      WINDOW: '1',
      WARMUP: String(WARMUP_IMAGES),
      ...servers.env(transports),
    });
    const sections = outcome.report.sections;
    const shifts = [];
    for (const section of sections) {
      const records = await readImageRecords(outputDir, section);
      expect(
        records.map((r) => r.image),
        section.transport,
      ).toEqual(Array.from({ length: IMAGE_COUNT }, (_, i) => i + 1));
      const isDelayed = (image: number): boolean => delayed(image + WARMUP_IMAGES - 1);
      const p50 = (which: boolean, figure: 'timeMs' | 'rttMs'): number =>
        median(records.filter((r) => isDelayed(r.image) === which).map((r) => r[figure]!));
      shifts.push({
        transport: section.transport,
        oneWayMs: p50(true, 'timeMs') - p50(false, 'timeMs'),
        rttMs: p50(true, 'rttMs') - p50(false, 'rttMs'),
      });
    }
    return { sections, shifts };
  } finally {
    fault = null;
  }
}

// Delayed and undelayed images of one run differ by up to DRIFT_MS on a loaded 2-core machine with
// nothing injected, so an unmoved figure may drift by that much, and a moved one may fall short of
// the delay by as much; timers fire late under load (by up to 22 ms beside two busy test files and
// two CPU burners), so it may exceed it by LATE_TIMER_SLACK_MS. The two bands stay apart: a figure
// that moves by the delay can never pass for one that does not.
const LATE_TIMER_SLACK_MS = 25;
const DRIFT_MS = 6;

describe('the figures move by an injected delay exactly where it lies, on every transport', () => {
  const moved = (deltaMs: number, delayMs = DELAY_MS): boolean =>
    deltaMs >= delayMs - DRIFT_MS && deltaMs <= delayMs + LATE_TIMER_SLACK_MS;
  const still = (deltaMs: number): boolean => Math.abs(deltaMs) <= DRIFT_MS;

  it.each([
    // [where, one-way moves, round trip moves]
    ['link', true, true],
    ['delivery', false, true],
    ['ack', false, true],
  ] as const)(
    'a delay in the %s moves the one-way time: %s, the round trip: %s',
    async (point, oneWayMoves, rttMoves) => {
      const faulted = await runWith(point);
      expect(faulted.sections.map((s) => s.transport)).toEqual(transports.map((t) => t.name));
      for (const section of faulted.sections)
        expect(section.ok, `${section.transport}: ${section.failure ?? ''}`).toBe(true);
      const off = faulted.shifts.filter(
        (s) =>
          (oneWayMoves ? !moved(s.oneWayMs) : !still(s.oneWayMs)) || (rttMoves ? !moved(s.rttMs) : !still(s.rttMs)),
      );
      expect(off, `Δ p50 of the delayed images against the others, delay ${DELAY_MS} ms`).toEqual([]);
    },
    120_000,
  );

  it('a late arrival stamp moves the one-way time alone, and the timing check fails every section for it', async () => {
    const faulted = await runWith('late-stamp');
    const off = faulted.shifts.filter((s) => !moved(s.oneWayMs, LATE_STAMP_MS) || !still(s.rttMs));
    expect(off, `Δ p50 of the late-stamped images against the others, ${LATE_STAMP_MS} ms late`).toEqual([]);
    expect(faulted.sections.map((s) => s.transport)).toEqual(transports.map((t) => t.name));
    for (const section of faulted.sections) {
      expect(section.ok).toBe(false);
      expect(section.arrivalsAfterAck, section.transport).toBe(IMAGE_COUNT / 2);
      expect(section.failure).toMatch(
        new RegExp(`^timing check: ${IMAGE_COUNT / 2} of ${IMAGE_COUNT} images stamped as arriving after their ack`),
      );
    }
  }, 120_000);

  it('a command stamp 3 ms late fails the timing check of its section, with every image stamp left alone', async () => {
    fault = 'late-command-stamp';
    try {
      const outcome = await runBoth(outputDir, {
        TRANSPORTS: 'tcp',
        IMAGE_COUNT: String(IMAGE_COUNT),
        IMAGE_SIZE: '1KB',
        WINDOW: '1',
        WARMUP: String(WARMUP_IMAGES),
        COMMAND_RATE: '200',
        ...servers.env(transports),
      });
      const [section] = outcome.report.sections;
      const lane = section?.commands;
      expect([section?.ok, section?.arrivalsAfterAck, lane?.alone.paired]).toEqual([false, 0, lane?.alone.acked]);
      const late = (lane?.alone.arrivalsAfterAck ?? 0) + (lane?.beside.arrivalsAfterAck ?? 0);
      expect(late).toBeGreaterThan(0);
      expect(section?.failure).toMatch(
        new RegExp(`^timing check: ${late} of \\d+ commands stamped as arriving after their ack was processed`),
      );
    } finally {
      fault = null;
    }
  }, 90_000);

  it("a sender two intervals behind moves each late frame's age by its lag, and its time on the link not", async () => {
    // RATE 100 (10 ms interval): every fourth wait for a due time wakes two intervals late, so that frame goes 20 ms
    // late and the next two, due meanwhile, 10 ms and ~0 late.
    const intervalMs = 10;
    const until = DueTimer.prototype.until;
    let waits = 0;
    DueTimer.prototype.until = function (this: DueTimer, dueNs: bigint) {
      const lateNs = ++waits % 4 === 0 ? BigInt(2 * intervalMs * 1e6) : 0n;
      return until.call(this, dueNs + lateNs);
    };
    try {
      const outcome = await runBoth(outputDir, {
        TRANSPORTS: 'tcp',
        IMAGE_COUNT: '60',
        IMAGE_SIZE: '1KB',
        WINDOW: '4',
        WARMUP: String(WARMUP_IMAGES),
        RATE: String(1000 / intervalMs),
        ...servers.env(transports),
      });
      const [section] = outcome.report.sections;
      if (section === undefined) throw new Error('no section');
      const records = await readImageCsv(outputDir, section);
      const behind = records.filter((r) => r.dueLagNs! >= 2 * intervalMs * 1e6);
      const onTime = records.filter((r) => r.dueLagNs! < intervalMs * 1e6);
      expect(behind.length).toBeGreaterThanOrEqual(5);
      const p50 = (rs: typeof records, of: (r: (typeof records)[number]) => number): number =>
        median(rs.map((r) => of(r) / 1e6));
      const age = (r: (typeof records)[number]): number => r.oneWayNs! + r.dueLagNs!;
      // The age of a frame held back rises by the wait; its time on the link stays where the others' is.
      expect(p50(behind, age) - p50(onTime, age)).toBeGreaterThanOrEqual(2 * intervalMs - DRIFT_MS);
      expect(Math.abs(p50(behind, (r) => r.oneWayNs!) - p50(onTime, (r) => r.oneWayNs!))).toBeLessThanOrEqual(DRIFT_MS);
      // The headline and the deadline count are the frames' ages, exactly as the CSV gives them.
      const deadline = section.openLoop?.deadline;
      expect(section.frameAge?.maxMs).toBeCloseTo(Math.max(...records.map(age)) / 1e6, 6);
      expect(deadline?.lateCount).toBe(records.filter((r) => age(r) > intervalMs * 1e6).length);
      expect(deadline?.overDeadline).toBe(true);
      expect(section.ok).toBe(true);
    } finally {
      DueTimer.prototype.until = until;
    }
  }, 90_000);
});
