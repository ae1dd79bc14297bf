import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SectionResult } from '../../services/core/model/section.js';
import type { Transport } from '../../services/transports/contract.js';
import { LocalServers } from '../helpers/harness.js';
import { runBoth } from '../helpers/in-process.js';

// The figures' self-checks, broken on purpose: every transport of the table runs whole (both apps
// in this process, real sockets, a real redis-server and nats-server) with a known delay put into
// one place of its path, and the reported one-way time and round trip must move by that delay
// where it lies on their path, and stay where they were where it does not. A measurement that
// ignored the delay, or counted it where it does not belong, fails here.

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
  | 'late-stamp';

/** The delay injected, in ms: far above the spread of a 1 KB image's p50 on a loaded 2-core machine. */
const DELAY_MS = 20;
/**
 * How late the late stamp is, in ms: arithmetic on the stamp, not a timer, so it can be far above any round trip a
 * loaded machine gives an image (one of 15 http-json round trips once exceeded its one-way time + 20 ms in CI).
 */
const LATE_STAMP_MS = 200;
let fault: FaultPoint | null = null;

/** `transport` with the current fault in its path; the real transport underneath, unchanged. */
function withFault(transport: Transport): Transport {
  return {
    ...transport,
    async connect(options) {
      const onAck: typeof options.onAck = (ack) =>
        fault === 'ack' ? void setTimeout(() => options.onAck(ack), DELAY_MS) : options.onAck(ack);
      const link = await transport.connect({ ...options, onAck });
      return {
        send: (header, payload) =>
          fault === 'link' ? void setTimeout(() => link.send(header, payload), DELAY_MS) : link.send(header, payload),
        close: () => link.close(),
      };
    },
    listen(options) {
      return transport.listen({
        ...options,
        deliver(frame) {
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

/** p50 one-way and round trip of every transport's section, by transport. */
interface Figures {
  sections: Map<string, SectionResult>;
}

/** A whole run of every transport, one image at a time, with `point` delayed (none: null). */
async function runWith(point: FaultPoint | null): Promise<Figures> {
  fault = point;
  try {
    const outcome = await runBoth(outputDir, {
      TRANSPORTS: 'all',
      IMAGE_COUNT: '15',
      IMAGE_SIZE: '1KB',
      WINDOW: '1',
      WARMUP: '3',
      ...servers.env(transports),
    });
    return { sections: new Map(outcome.report.sections.map((s) => [s.transport, s])) };
  } finally {
    fault = null;
  }
}

// Two runs' p50s differ by up to DRIFT_MS on a loaded 2-core machine with nothing injected (seen:
// 1 ms), so an unmoved figure may drift by that much, and a moved one may fall short of the delay
// by as much; timers fire late under load, so it may exceed it by LATE_TIMER_SLACK_MS. The two
// bands stay far apart: a figure that moves by the delay can never pass for one that does not.
const LATE_TIMER_SLACK_MS = 12;
const DRIFT_MS = 6;

describe('the figures move by an injected delay exactly where it lies, on every transport', () => {
  let baseline: Figures;
  beforeAll(async () => {
    baseline = await runWith(null);
  }, 120_000);

  /** Each transport's change in p50 one-way and p50 round trip against the undisturbed run. */
  const shifts = (faulted: Figures): { transport: string; oneWayMs: number; rttMs: number }[] =>
    transports.map(({ name }) => {
      const before = baseline.sections.get(name);
      const after = faulted.sections.get(name);
      expect(before?.ok, `${name} undisturbed: ${before?.failure ?? ''}`).toBe(true);
      return {
        transport: name,
        oneWayMs: after!.latency!.p50Ms - before!.latency!.p50Ms,
        rttMs: after!.rtt!.p50Ms - before!.rtt!.p50Ms,
      };
    });
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
      for (const section of faulted.sections.values())
        expect(section.ok, `${section.transport}: ${section.failure ?? ''}`).toBe(true);
      const off = shifts(faulted).filter(
        (s) =>
          (oneWayMoves ? !moved(s.oneWayMs) : !still(s.oneWayMs)) || (rttMoves ? !moved(s.rttMs) : !still(s.rttMs)),
      );
      expect(off, `Δ p50 against the undisturbed run, delay ${DELAY_MS} ms`).toEqual([]);
    },
    120_000,
  );

  it('a late arrival stamp moves the one-way time alone, and the timing check fails every section for it', async () => {
    const faulted = await runWith('late-stamp');
    const off = shifts(faulted).filter((s) => !moved(s.oneWayMs, LATE_STAMP_MS) || !still(s.rttMs));
    expect(off, `Δ p50 against the undisturbed run, stamp ${LATE_STAMP_MS} ms late`).toEqual([]);
    for (const section of faulted.sections.values()) {
      expect(section.ok).toBe(false);
      expect(section.arrivalsAfterAck, section.transport).toBe(15);
      expect(section.failure).toMatch(
        /^timing check: 15 of 15 images stamped as arriving after their ack was processed/,
      );
    }
  }, 120_000);
});
