import { chown, lchown, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reportLibraries } from '../../services/shared/report-assets.js';
import { OUTPUT_FILES } from '../../services/core/report/run-files.js';
import { RunFolder } from '../../services/receiver/run-output/run-folder.js';
import { openLatestRunFile } from '../../services/shared/safe-file.js';
import { fixturePlan, fixtureReport } from '../helpers/fixtures.js';
import { startReceiver } from '../helpers/in-process.js';
import { requirePrivilege } from '../helpers/privileges.js';

// The served files' refusal of what another user owns: it needs root (chown to uid 65534), so CI's host runs it (the
// vitest project `privileged`); links and the rest are in tests/unit/safe-file.test.ts and
// tests/integration/served-files.test.ts.

let dir: string;
let runDir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-served-owner-'));
  const folder = await RunFolder.create(dir, fixtureReport([]).run);
  await folder.openSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, imageCount: 1 }));
  await folder.finish(folder.report(null), reportLibraries());
  runDir = folder.dir;
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const uid = (): number => process.getuid!();

describe('a file served by the receiver', () => {
  it("is refused when another uid owns it (65534's results.json): 404 over HTTP, the reason named", async (context) => {
    requirePrivilege(context, 'root', 'chown to uid 65534');
    const file = path.join(runDir, OUTPUT_FILES.results);
    await chown(file, 65534, 65534);
    expect(await openLatestRunFile(dir, dir, OUTPUT_FILES.results)).toEqual({
      kind: 'refused',
      reason: `${file} is owned by uid 65534, not by uid ${uid()} (this process)`,
    });
    const { receiver, transmitterConfig } = await startReceiver(dir, { TRANSPORTS: 'tcp' });
    try {
      const response = await fetch(`http://127.0.0.1:${transmitterConfig.controlPort}/results.json`, {
        signal: AbortSignal.timeout(10_000),
      });
      expect(response.status).toBe(404);
      expect(await response.text()).not.toContain(await readFile(file, 'utf8').then((text) => text.slice(0, 40)));
      // Its own file beside it is still served.
      const log = await fetch(`http://127.0.0.1:${transmitterConfig.controlPort}/output.log`, {
        signal: AbortSignal.timeout(10_000),
      });
      expect(log.status).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  it("is refused when a folder on the way, or the latest link, is another uid's", async (context) => {
    requirePrivilege(context, 'root', 'chown to uid 65534');
    await chown(runDir, 65534, 65534);
    expect(await openLatestRunFile(dir, dir, OUTPUT_FILES.log)).toEqual({
      kind: 'refused',
      reason: `${runDir} is owned by uid 65534, not by uid ${uid()} (this process)`,
    });
    await chown(runDir, uid(), uid());
    const latest = path.join(dir, 'latest');
    await lchown(latest, 65534, 65534);
    expect(await openLatestRunFile(dir, dir, OUTPUT_FILES.log)).toEqual({
      kind: 'refused',
      reason: `${latest} is owned by uid 65534, not by uid ${uid()} (this process)`,
    });
  });
});
