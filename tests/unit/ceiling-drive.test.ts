import { describe, expect, it } from 'vitest';
import { headerSeq, type CeilingSender } from '../../services/transports/ceiling-contract.js';
import { drive, type DrivenLink } from '../../scripts/ceiling/drive.js';
import { arrivalClock } from '../../scripts/ceiling/run.js';

// The ceiling's driver against a link of the test's own: acks come back after a timer, and the
// receiver's last arrival is whatever the test says, so the span's two ends can be checked.

const ACK_DELAY_MS = 3;

/** A link whose every image is acknowledged ACK_DELAY_MS after its send; it records what was in flight at each send. */
function timedLink(
  warmup: number,
  lastArrival: (firstTimedSendNs: bigint) => bigint | undefined,
): { link: DrivenLink; warmupInFlightAtTimedSends: number[] } {
  const unacked = new Set<number>();
  const warmupInFlightAtTimedSends: number[] = [];
  let firstTimedSendNs: bigint | undefined;
  const sender: CeilingSender = {
    send(seq, header) {
      expect(headerSeq(header)).toBe(seq);
      if (seq >= warmup) {
        firstTimedSendNs ??= process.hrtime.bigint();
        warmupInFlightAtTimedSends.push([...unacked].filter((s) => s < warmup).length);
      }
      unacked.add(seq);
      setTimeout(() => {
        unacked.delete(seq);
        link.acked(seq);
      }, ACK_DELAY_MS);
    },
    close: async () => {},
  };
  const link: DrivenLink = {
    sender,
    acked: () => {},
    failed: () => {},
    receiverReport: async () => ({ lastArrivalNs: lastArrival(firstTimedSendNs!), receiverCpuMs: 12.5 }),
  };
  return { link, warmupInFlightAtTimedSends };
}

describe('drive', () => {
  it('sends no timed image while a warm-up one is unacknowledged', async () => {
    const warmup = 6;
    const { link, warmupInFlightAtTimedSends } = timedLink(warmup, (first) => first + 1_000_000n);
    await drive(link, { image: Buffer.alloc(100), count: 8, window: 4, warmup, ackTimeoutMs: 1000 });
    expect(warmupInFlightAtTimedSends).toHaveLength(8);
    expect(warmupInFlightAtTimedSends.every((n) => n === 0)).toBe(true);
  });

  it(
    "ends the span at the receiver's last timed arrival, " + 'not at the last ack, and takes MB/s and images/s over it',
    async () => {
      const arrivalAfterMs = 1;
      const { link } = timedLink(2, (first) => first + BigInt(arrivalAfterMs * 1e6));
      const count = 5;
      const figures = await drive(link, { image: Buffer.alloc(1000), count, window: 1, warmup: 2, ackTimeoutMs: 1000 });
      // One at a time, the last ack comes at least count × ACK_DELAY_MS after the first timed send: far past the
      // arrival given.
      expect(figures.spanMs).toBeGreaterThanOrEqual(arrivalAfterMs);
      expect(figures.spanMs).toBeLessThan(count * ACK_DELAY_MS);
      expect(figures.imagesPerSecond).toBeCloseTo(count / (figures.spanMs / 1000), 6);
      expect(figures.MBps).toBeCloseTo((count * 1000) / (figures.spanMs / 1000) / 1e6, 9);
      // The receiver's CPU is whatever it reported, passed on.
      expect(figures.receiverCpuMs).toBe(12.5);
      // The round trips are still send → ack.
      expect(figures.rttP50Ms).toBeGreaterThanOrEqual(ACK_DELAY_MS * 0.9);
    },
  );

  it('fails a run whose receiver stamped no timed arrival', async () => {
    const { link } = timedLink(1, () => undefined);
    await expect(
      drive(link, { image: Buffer.alloc(10), count: 2, window: 1, warmup: 1, ackTimeoutMs: 1000 }),
    ).rejects.toThrow('the receiver reported no arrival of a timed image');
  });
});

/** Spins until this process has spent `ms` more CPU (user + system), however busy the host. */
function burnCpu(ms: number): void {
  const start = process.cpuUsage();
  for (;;) {
    const spent = process.cpuUsage(start);
    if ((spent.user + spent.system) / 1000 >= ms) return;
  }
}

describe('arrivalClock', () => {
  it('counts the CPU since the first timed arrival, not before it, whichever seq it is; none before it', () => {
    const clock = arrivalClock(2);
    expect(clock.cpuMsSinceFirstArrival()).toBeNull();
    clock.arrived(0);
    burnCpu(60);
    expect(clock.cpuMsSinceFirstArrival()).toBeNull();
    expect(clock.lastArrivalNs()).toBeUndefined();
    // The first timed arrival is seq 3 (seq 2 comes later, reordered): the CPU counts from it.
    clock.arrived(3);
    const firstMs = clock.cpuMsSinceFirstArrival()!;
    // This process's CPU so far (its start, the test file's import, the 60 ms above) is not in it.
    expect(firstMs).toBeGreaterThanOrEqual(0);
    expect(firstMs).toBeLessThan(30);
    burnCpu(40);
    clock.arrived(2);
    clock.arrived(4);
    burnCpu(40);
    // Later arrivals do not restart it.
    const laterMs = clock.cpuMsSinceFirstArrival()!;
    expect(laterMs).toBeGreaterThanOrEqual(80);
    expect(laterMs).toBeLessThan(80 + 30);
  });
});

describe('drive, for a latest-frame key', () => {
  it(
    'settles every image below an ack as superseded: it frees the window, and MB/s and images/s count only the ' +
      'delivered',
    async () => {
      // A key read once per burst: each ack is for the newest image sent so far, a timer after it.
      let newest = -1;
      let armed = false;
      const sender: CeilingSender = {
        send(seq) {
          newest = seq;
          if (armed) return;
          armed = true;
          setTimeout(() => {
            armed = false;
            link.acked(newest);
          }, ACK_DELAY_MS);
        },
        close: async () => {},
      };
      const link: DrivenLink = {
        sender,
        acked: () => {},
        failed: () => {},
        receiverReport: async () => ({ lastArrivalNs: process.hrtime.bigint(), receiverCpuMs: null }),
      };
      const image = Buffer.alloc(1000);
      const figures = await drive(link, {
        image,
        count: 40,
        window: 8,
        warmup: 0,
        ackTimeoutMs: 1000,
        supersedes: true,
      });
      expect(figures.superseded).toBeGreaterThan(0);
      expect(figures.count + figures.superseded!).toBe(40);
      expect(figures.imagesPerSecond).toBeCloseTo(figures.count / (figures.spanMs / 1000), 6);
      expect(figures.MBps).toBeCloseTo((figures.count * image.length) / (figures.spanMs / 1000) / 1e6, 6);
    },
  );
});
