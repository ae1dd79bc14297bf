import { afterEach, describe, expect, it } from 'vitest';
import { DUE_SPIN_NS, DueTimer } from '../../services/transmitter/due-timer.js';

// The open loop's wait for due times: never early, and asleep (not spinning) until DUE_SPIN_NS before each.

let timer: DueTimer | undefined;
afterEach(async () => {
  await timer?.close();
  timer = undefined;
});

describe('DueTimer', () => {
  it(
    'resolves at or after every due time, 2 ms apart, using under half the span in CPU (a spin would use all of ' +
      'it)',
    async () => {
      timer = await DueTimer.open();
      // 2 ms apart, not 0.5: each wake costs ~0.1 ms of CPU besides its 0.1 ms spin, ~0.3 ms on a loaded 2-core
      // machine, which at 0.5 ms apart came within a whisker of half the span without any spinning.
      const count = 100;
      const periodNs = 2_000_000n;
      const startNs = process.hrtime.bigint() + 2_000_000n;
      const cpuBefore = process.cpuUsage();
      let early = 0;
      for (let i = 0n; i < BigInt(count); i++) {
        const dueNs = startNs + i * periodNs;
        await timer.until(dueNs);
        if (process.hrtime.bigint() < dueNs) early++;
      }
      const spanMs = Number(process.hrtime.bigint() - startNs) / 1e6;
      const cpu = process.cpuUsage(cpuBefore);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      expect(early).toBe(0);
      // 200 ms of schedule; the old setImmediate spin took nearly all of every period here.
      expect(cpuMs).toBeLessThan(spanMs / 2);
      expect(DUE_SPIN_NS).toBe(100_000n);
    },
  );

  it('resolves at once for a due time already past, and after close rejects a wait that needs the worker', async () => {
    timer = await DueTimer.open();
    const before = process.hrtime.bigint();
    await timer.until(before - 1_000_000n);
    expect(Number(process.hrtime.bigint() - before) / 1e6).toBeLessThan(5);
    await timer.close();
    await timer.close();
    await expect(timer.until(process.hrtime.bigint() + 50_000_000n)).rejects.toThrow('the due timer is closed');
  });
});
