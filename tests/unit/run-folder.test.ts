import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderImageLine } from '../../services/core/report/text/output-log.js';
import { fanOutOf, withFanOut, type SectionPlan, type SectionResult } from '../../services/core/model/section.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import { IMAGES_CSV_HEADER } from '../../services/core/report/run-files.js';
import { RunFolder } from '../../services/receiver/run-output/run-folder.js';
import { fixturePlan, fixtureReport, NO_WARMUP } from '../helpers/fixtures.js';
import { logSections, readImageCsv } from '../helpers/run-files.js';

// A run's folder as the receiver writes it while the run goes: output.log's header, each
// section's heading, its images' lines as they arrive, its figures when it ends; its CSV.

let baseDir: string;
beforeEach(async () => {
  baseDir = await mkdtemp(path.join(os.tmpdir(), 'itb-run-folder-'));
});
afterEach(async () => {
  await rm(baseDir, { recursive: true, force: true });
});

const run = fixtureReport([]).run;
const frame = (plan: SectionPlan, seq: number, sentAtNs: bigint) => ({
  sectionId: plan.sectionId,
  seq,
  sizeBytes: plan.imageSizeBytes,
  checksum: 0n,
  sentAtNs,
});

/**
 * A section of `plan` through `folder`: image 2 arrives before image 1 (1.5 and 2 ms), image 3 never; image 2's round
 * trip only comes.
 */
async function recordSection(folder: RunFolder, plan: SectionPlan): Promise<SectionResult> {
  const files = await folder.openSection(plan);
  const recorder = new SectionRecorder(plan, files.sink);
  recorder.beginRecording(NO_WARMUP, 0n);
  recorder.record(frame(plan, 1, 0n), 1_500_000n);
  recorder.verified(1, true);
  recorder.record(frame(plan, 0, 0n), 2_000_000n);
  recorder.verified(0, true);
  recorder.roundTrips(Float64Array.of(2, 2_500_000, Number.NaN));
  return folder.endSection(recorder.result(null, { roundTripsShipped: 1 }));
}

describe('RunFolder', () => {
  it(
    "streams output.log's lines in arrival order, the lost " + "at the section's end, and the CSV as records complete",
    async () => {
      const folder = await RunFolder.create(baseDir, run);
      expect(path.relative(baseDir, folder.dir)).toMatch(/^runs\/20261123T080000Z-[0-9a-f]{6}$/);
      const plan = fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, imageCount: 3 });
      const recorded = await recordSection(folder, plan);
      expect(recorded.imagesFile).toBe('images-01-tcp.csv');
      await folder.abandon();

      const [section] = logSections(await readFile(path.join(folder.dir, 'output.log'), 'utf8'));
      expect(section!.heading).toBe(
        '=== TCP (baseline) performance test: 3 images transfer (533.0 KiB each, window 1) ===',
      );
      expect(section!.imageLines).toEqual([
        renderImageLine(2, 1_500_000, 'ok', false),
        renderImageLine(1, 2_000_000, 'ok', false),
        'Image 3: LOST (never arrived)',
      ]);
      expect(section!.footer[0]).toBe('Per-image records: images-01-tcp.csv');
      expect(section!.footer.at(-1)).toBe('Clock: offset not estimated');
      expect(recorded).toMatchObject({ okCount: 2, lostCount: 1, ok: false });
      // The CSV: image 2 once its round trip came, image 1 at the end without one, the lost last.
      expect((await readFile(path.join(folder.dir, recorded.imagesFile!), 'utf8')).split('\n')[0]).toBe(
        IMAGES_CSV_HEADER,
      );
      expect(await readImageCsv(baseDir, recorded, path.relative(baseDir, folder.dir))).toEqual([
        { image: 2, status: 'ok', oneWayNs: 1_500_000, rttNs: 2_500_000, dueLagNs: null },
        { image: 1, status: 'ok', oneWayNs: 2_000_000, rttNs: null, dueLagNs: null },
        { image: 3, status: 'lost', oneWayNs: null, rttNs: null, dueLagNs: null },
      ]);
      // The run did not end: results.json in its folder says so, and OUTPUT_DIR links to nothing yet.
      const snapshot = JSON.parse(await readFile(path.join(folder.dir, 'results.json'), 'utf8')) as {
        stopReason: string;
        sections: SectionResult[];
      };
      expect([snapshot.stopReason, snapshot.sections.map((s) => s.imagesFile)]).toEqual([
        'in progress: the run has not ended',
        ['images-01-tcp.csv'],
      ]);
      expect(await readdir(baseDir)).toEqual(['runs']);
    },
  );

  it(
    "RECEIVERS > 1: holds the first receiver's figures until every receiver's come (its fan-out), and writes them " +
      'without when none comes',
    async () => {
      const folder = await RunFolder.create(baseDir, { ...run, receivers: 2 });
      const plan = fixturePlan({
        transport: 'tcp',
        label: 'TCP',
        baseline: true,
        imageCount: 3,
        receivers: 2,
        sectionId: 1,
      });
      const first = await recordSection(folder, plan);
      const other = { ...first, receiverIndex: 1, okCount: 1, lostCount: 2 };
      await folder.replaceSection(withFanOut(first, fanOutOf([first, other], 'copies')));
      // A section that failed before its fan-out (none comes): its figures go when the next section opens.
      await recordSection(folder, {
        ...plan,
        sectionId: 2,
        transport: 'websocket',
        label: 'WebSocket',
        baseline: false,
      });
      await folder.openSection({ ...plan, sectionId: 3, transport: 'zeromq', label: 'ZeroMQ', baseline: false });
      await folder.abandon();

      const sections = logSections(await readFile(path.join(folder.dir, 'output.log'), 'utf8'));
      expect(sections.map((s) => s.heading.split(' performance')[0])).toEqual([
        '=== TCP (baseline)',
        '=== WebSocket',
        '=== ZeroMQ',
      ]);
      expect(sections[0]!.footer).toContainEqual(
        expect.stringMatching(/^Receivers: 2, a copy each: aggregate of 3 intact, /),
      );
      expect(sections[0]!.footer.at(-1)).toMatch(/^FAILED: .*receiver 2 of 2: 2 lost, 0 corrupt$/);
      expect(sections[1]!.footer.some((line) => line.startsWith('Receivers:'))).toBe(false);
      expect(sections[1]!.footer[0]).toBe('Per-image records: images-02-websocket.csv');
      expect(sections[2]!.footer).toEqual([]);
    },
  );
});
