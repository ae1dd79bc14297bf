import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneWayClockErrorNs } from '../../services/core/model/clock.js';
import { renderImageLine } from '../../services/core/report/text/output-log.js';
import type { RunReport } from '../../services/core/report/report.js';
import { stopChild } from '../../services/shared/child-process.js';
import { escapeRegExp } from '../helpers/harness.js';
import { requirePrivilege } from '../helpers/privileges.js';
import { exitWithin, freePortsEnv, startService, type ServiceProcess } from '../helpers/processes.js';
import { logSections, readImageCsv } from '../helpers/run-files.js';

// Two hosts have two kernels, two monotonic clocks. One machine cannot have two kernels, but the
// transmitter decides by the receiver's kernel boot id, so a receiver in a mount namespace of its
// own with another boot id over /proc/sys/kernel/random/boot_id (unshare -Urm: a user namespace,
// no root needed where the kernel allows them) takes the whole cross-host path for real: the
// offset estimated over the control endpoint and applied, the bound, output.log's figures. Both
// clocks are in fact one, so the true offset is 0 and every estimate must lie within its bound.
// Where the machine allows no user namespace (an unprivileged container), the test is skipped and
// listed at the end of the run.

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
  it('applies the clock offset, bounds every one-way time by it, and keeps the clock-free round trip of each in ' +
    'its CSV', async (context) => {
    requirePrivilege(context, 'userns', 'a receiver on another boot id');
    const bootIdFile = path.join(dir, 'boot_id');
    await writeFile(bootIdFile, `${OTHER_BOOT_ID}\n`);
    const env = {
      ...(await freePortsEnv()),
      OUTPUT_DIR: dir,
      TRANSPORTS: 'tcp,websocket',
      IMAGE_COUNT: '40',
      LOG_LEVEL: 'info',
      CONNECT_TIMEOUT_MS: '10000',
    };
    receiver = startService('receiver', env, [
      'unshare',
      '-Urm',
      'sh',
      '-c',
      'mount --bind "$0" /proc/sys/kernel/random/boot_id && exec "$@"',
      bootIdFile,
    ]);
    await receiver.waitForLog(/receiver ready/);
    const transmitter = startService('transmitter', env);
    expect(await exitWithin(transmitter, 60_000), transmitter.stderr().slice(-2000)).toBe(0);
    await stopChild(receiver.child, 5000);

    const report = JSON.parse(await readFile(path.join(dir, 'results.json'), 'utf8')) as RunReport;
    expect(report.run.hosts.receiver.bootId).toBe(OTHER_BOOT_ID);
    expect(report.run.hosts.transmitter.bootId).not.toBe(OTHER_BOOT_ID);
    const log = await readFile(path.join(dir, 'output.log'), 'utf8');
    const sections = logSections(log);
    expect(sections).toHaveLength(report.sections.length);
    for (const section of report.sections) {
      const { clock, clockAfter } = section;
      expect(clock?.applied, section.transport).toBe(true);
      // One clock in truth: the offset is 0, and each estimate is within its own bound of it.
      expect(Math.abs(clock!.offsetNs), section.transport).toBeLessThanOrEqual(clock!.uncertaintyNs);
      expect(Math.abs(clockAfter!.offsetNs), section.transport).toBeLessThanOrEqual(clockAfter!.uncertaintyNs);
      expect(section.oneWayClockErrorMs).toBe(oneWayClockErrorNs(clock!, clockAfter!) / 1e6);
      const bound = section.oneWayClockErrorMs!.toFixed(3);
      // Every image's line, written as it arrived (WINDOW 1: in order), points to the bound given
      // below the section's lines; the CSV has its one-way time and its round trip, on one clock.
      const logged = sections.find((s) => s.heading.startsWith(`=== ${section.label}`))!;
      const images = await readImageCsv(dir, section);
      expect(images.map((i) => [i.image, i.status]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual(
        Array.from({ length: 40 }, (_, i) => [i + 1, 'ok']),
      );
      expect(
        images.every((i) => i.rttNs !== null && i.rttNs > 0),
        section.transport,
      ).toBe(true);
      expect(logged.imageLines).toEqual(
        [...images].sort((a, b) => a.image - b.image).map((i) => renderImageLine(i.image, i.oneWayNs, 'ok', true)),
      );
      expect(logged.imageLines[0]).toMatch(
        /^Image 1 transmission time: -?\d+\.\d{3} ms \(two clocks: ± the bound below\)$/,
      );
      expect(logged.footer).toContainEqual(
        expect.stringMatching(
          new RegExp(`^Latency \\(one-way across two clocks: each figure ± ${escapeRegExp(bound)} ms\\): `),
        ),
      );
      expect(logged.footer).toContainEqual(
        expect.stringMatching(
          new RegExp(`^Clock: receiver − transmitter .* \\(applied: one-way times ± ${escapeRegExp(bound)} ms\\)$`),
        ),
      );
      expect(log).toContain(`(applied: one-way times ± ${bound} ms)`);
    }
    expect(log).toMatch(/mean ± sd ms +clock ± ms +RTT p50/);
  }, 90_000);
});
