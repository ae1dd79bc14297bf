import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneWayClockErrorNs } from '../../services/core/clock.js';
import type { RunReport } from '../../services/core/report.js';
import { stopChild } from '../../services/shared/child-process.js';
import { exitWithin, freePortsEnv, startService, type ServiceProcess } from '../helpers/processes.js';

// Two hosts have two kernels, two monotonic clocks. One machine cannot have two kernels, but the
// transmitter decides by the receiver's kernel boot id, so a receiver in a mount namespace of its
// own with another boot id over /proc/sys/kernel/random/boot_id (unshare -Urm: a user namespace,
// no root needed where the kernel allows them) takes the whole cross-host path for real: the
// offset estimated over the control endpoint and applied, the bound, output.log's figures. Both
// clocks are in fact one, so the true offset is 0 and every estimate must lie within its bound.

const OTHER_BOOT_ID = '00000000-0000-4000-8000-0000000000ff';
let dir: string;
let receiver: ServiceProcess | undefined;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-cross-host-'));
});
afterAll(async () => {
  if (receiver) await stopChild(receiver.child, 2000);
  await rm(dir, { recursive: true, force: true });
});

describe('a receiver on another kernel (another boot id)', () => {
  it('applies the clock offset, bounds every one-way time by it, and gives the clock-free round trip beside each', async () => {
    const bootIdFile = path.join(dir, 'boot_id');
    await writeFile(bootIdFile, `${OTHER_BOOT_ID}\n`);
    const env = { ...(await freePortsEnv()), OUTPUT_DIR: dir, TRANSPORTS: 'tcp,websocket', IMAGE_COUNT: '40', LOG_LEVEL: 'info', CONNECT_TIMEOUT_MS: '10000' };
    receiver = startService('receiver', env, ['unshare', '-Urm', 'sh', '-c', 'mount --bind "$0" /proc/sys/kernel/random/boot_id && exec "$@"', bootIdFile]);
    await receiver.waitForLog(/receiver ready/);
    const transmitter = startService('transmitter', env);
    expect(await exitWithin(transmitter, 60_000), transmitter.stderr().slice(-2000)).toBe(0);
    await stopChild(receiver.child, 5000);

    const report = JSON.parse(await readFile(path.join(dir, 'results.json'), 'utf8')) as RunReport;
    expect(report.run.hosts.receiver.bootId).toBe(OTHER_BOOT_ID);
    expect(report.run.hosts.transmitter.bootId).not.toBe(OTHER_BOOT_ID);
    const log = await readFile(path.join(dir, 'output.log'), 'utf8');
    for (const section of report.sections) {
      const { clock, clockAfter } = section;
      expect(clock?.applied, section.transport).toBe(true);
      // One clock in truth: the offset is 0, and each estimate is within its own bound of it.
      expect(Math.abs(clock!.offsetNs), section.transport).toBeLessThanOrEqual(clock!.uncertaintyNs);
      expect(Math.abs(clockAfter!.offsetNs), section.transport).toBeLessThanOrEqual(clockAfter!.uncertaintyNs);
      expect(section.oneWayClockErrorMs).toBe(oneWayClockErrorNs(clock!, clockAfter!) / 1e6);
      const bound = section.oneWayClockErrorMs!.toFixed(3);
      // Every image line of the section carries the bound and its own round trip.
      const block = log.slice(log.indexOf(`=== ${section.label}`), log.indexOf('Total transfer time', log.indexOf(`=== ${section.label}`)));
      const lines = block.split('\n').filter((line) => line.startsWith('Image '));
      expect(lines).toHaveLength(40);
      section.images.forEach((image, i) => {
        expect(lines[i]).toBe(`Image ${image.image} transmission time: ${image.timeMs!.toFixed(3)} ms ± ${bound} ms (two clocks); round trip ${image.rttMs!.toFixed(3)} ms (one clock)`);
      });
      expect(log).toContain(`(applied: one-way times ± ${bound} ms)`);
    }
    expect(log).toMatch(/mean ± sd ms +clock ± ms +RTT p50/);
  }, 90_000);
});
