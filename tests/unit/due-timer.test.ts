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
    'resolves at or after every due time, 0.5 ms apart, using under half the span in CPU (a spin would use all of ' +
      'it)',
    async () => {
      timer = await DueTimer.open();
      const count = 400;
      const periodNs = 500_000n;
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
      // 200 ms of schedule; the old setImmediate spin took ~0.46 ms of CPU per 0.5 ms period here.
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
