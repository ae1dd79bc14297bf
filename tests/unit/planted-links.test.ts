import { chmod, lstat, mkdir, mkdtemp, open, readdir, readFile, readlink, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import { CREATE_NEW_FILE, writeFileAtomic } from '../../services/shared/files.js';
import { OUTPUT_FILES } from '../../services/core/report/run-files.js';
import { runFolders } from '../../services/shared/run-folders.js';
import { AppendFile } from '../../services/receiver/run-output/append-file.js';
import { RunFolder } from '../../services/receiver/run-output/run-folder.js';
import { reportLibraries } from '../../services/shared/report-assets.js';
import { fixturePlan, fixtureReport } from '../helpers/fixtures.js';
import { makeVictims, type Victims } from '../helpers/victims.js';

// No file is written through a link the writer did not make: links planted at every name the
// writers use, or could once be guessed to use, each pointing at a victim file or folder, which
// must come out untouched. Real files and links in a temporary folder.

const run = fixtureReport([]).run;

let dir: string;
let victims: Victims;
let victim: string;
let victimDir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-planted-'));
  victims = await makeVictims(dir);
  ({ file: victim, folder: victimDir } = victims);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('writeFileAtomic', () => {
  it(
    'writes beside links planted at the target and at the old temporary name (<target>.<pid>.tmp): the victim is ' +
      'untouched',
    async () => {
      const out = path.join(dir, 'out');
      await mkdir(out);
      const target = path.join(out, 'results.json');
      const oldTemporary = `${target}.${process.pid}.tmp`;
      await symlink(victim, oldTemporary);
      await symlink(victim, target);
      await writeFileAtomic(target, 'new text\n');
      await victims.expectUntouched();
      // The link at the target was replaced by the new file (a rename), not written through.
      expect((await lstat(target)).isFile()).toBe(true);
      expect(await readFile(target, 'utf8')).toBe('new text\n');
      // The planted link is left as it was, and no temporary is left behind.
      expect(await readlink(oldTemporary)).toBe(victim);
      expect((await readdir(out)).sort()).toEqual(['results.json', path.basename(oldTemporary)].sort());
    },
  );

  it(
    'creates its temporaries so that even a guessed name with a link at it fails (EEXIST) instead of writing ' +
      'through',
    async () => {
      const link = path.join(dir, 'guessed.tmp');
      await symlink(victim, link);
      await expect(open(link, CREATE_NEW_FILE, 0o644)).rejects.toMatchObject({ code: 'EEXIST' });
      const dangling = path.join(dir, 'dangling.tmp');
      await symlink(path.join(dir, 'not-there'), dangling);
      await expect(open(dangling, CREATE_NEW_FILE, 0o644)).rejects.toMatchObject({ code: 'EEXIST' });
      await expect(lstat(path.join(dir, 'not-there'))).rejects.toMatchObject({ code: 'ENOENT' });
      await victims.expectUntouched();
    },
  );
});

describe('AppendFile', () => {
  it('create and reopen refuse a link at the name (ITB_ERR_WRITE naming it); the victim is untouched', async () => {
    const link = path.join(dir, 'output.log');
    await symlink(victim, link);
    await expect(AppendFile.create(link)).rejects.toMatchObject({
      code: ErrorCode.write,
      message: expect.stringContaining(`could not write ${link}: EEXIST`),
    });
    await expect(AppendFile.reopen(link)).rejects.toMatchObject({
      code: ErrorCode.write,
      message: expect.stringContaining(`could not write ${link}: ELOOP`),
    });
    await victims.expectUntouched();
  });
});

describe('RunFolder in an OUTPUT_DIR others could plant in', () => {
  it(
    'a whole run: links at output.log, results.json, report.html, latest and their old temporary names are ' +
      'replaced, never written through',
    async () => {
      const out = path.join(dir, 'out');
      await mkdir(out);
      const planted = [
        ...Object.values(OUTPUT_FILES).flatMap((file) => [file, `${file}.${process.pid}.tmp`]),
        `latest.${process.pid}.tmp`,
      ];
      for (const name of planted) await symlink(victim, path.join(out, name));
      await symlink(victimDir, path.join(out, 'latest'));

      const folder = await RunFolder.create(out, run);
      const plan = fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, imageCount: 1 });
      await folder.openSection(plan);
      const report = folder.report(null);
      await folder.finish(report, reportLibraries());

      await victims.expectUntouched();
      expect(await readlink(path.join(out, 'latest'))).toBe(path.relative(out, folder.dir));
      for (const file of Object.values(OUTPUT_FILES))
        expect(await readlink(path.join(out, file)), file).toBe(path.join('latest', file));
      expect(await readFile(path.join(out, 'output.log'), 'utf8')).toContain('=== TCP (baseline) performance test');
    },
  );

  it('a planted runs link is refused, naming it and where it points; nothing is made where it points', async () => {
    const out = path.join(dir, 'out');
    await mkdir(out);
    await symlink(victimDir, path.join(out, 'runs'));
    await expect(RunFolder.create(out, run)).rejects.toMatchObject({
      code: ErrorCode.write,
      message:
        `could not write ${path.join(out, 'runs')}: it is a symbolic link (to ${victimDir}), which this receiver ` +
        `did not make: remove it, or use an OUTPUT_DIR only you can write`,
    });
    await victims.expectUntouched();
  });

  it("a second receiver's receiver-<k> planted as a link is refused the same way", async () => {
    const out = path.join(dir, 'out');
    await mkdir(out);
    await symlink(victimDir, path.join(out, 'receiver-2'));
    await expect(RunFolder.create(path.join(out, 'receiver-2'), run, out)).rejects.toMatchObject({
      code: ErrorCode.write,
      message: expect.stringContaining(
        `could not write ${path.join(out, 'receiver-2')}: it is a symbolic link (to ${victimDir})`,
      ),
    });
    await victims.expectUntouched();
  });

  it('a runs others can write (0777, no sticky bit) is refused; one made here is used', async () => {
    const out = path.join(dir, 'out');
    await mkdir(path.join(out, 'runs'), { recursive: true });
    await chmod(path.join(out, 'runs'), 0o777);
    await expect(RunFolder.create(out, run)).rejects.toMatchObject({
      message: expect.stringContaining('runs: others can write in it, which this receiver did not make'),
    });
    await chmod(path.join(out, 'runs'), 0o755);
    const folder = await RunFolder.create(out, run);
    await folder.abandon();
    expect(path.dirname(folder.dir)).toBe(path.join(out, 'runs'));
  });

  it('OUTPUT_DIR itself may be a link (the user chose it): the run goes where it points', async () => {
    const real = path.join(dir, 'real-out');
    await mkdir(real);
    const out = path.join(dir, 'out');
    await symlink(real, out);
    const folder = await RunFolder.create(out, run);
    await folder.abandon();
    expect(await readdir(path.join(real, 'runs'))).toEqual([folder.name]);
  });

  it('runFolders skips a link planted among the runs, and every run when runs itself is a link', async () => {
    const out = path.join(dir, 'out');
    const folder = await RunFolder.create(out, run);
    await folder.abandon();
    await symlink(victimDir, path.join(out, 'runs', '99999999T999999Z-planted'));
    expect(await runFolders(out)).toEqual([folder.dir]);
    const other = path.join(dir, 'other');
    await mkdir(other);
    await symlink(path.join(out, 'runs'), path.join(other, 'runs'));
    expect(await runFolders(other)).toEqual([]);
  });
});
