import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  directoryProblem,
  makeDirectories,
  openToOthersProblem,
  othersMayPlant,
} from '../../services/shared/directories.js';
import { outputDirIssues } from '../../services/shared/entry.js';

// On real files, links and the kernel's own file systems: the check makes nothing, and neither it
// nor the making ever spins on procfs (Node's recursive mkdir did).

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-directories-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('directoryProblem', () => {
  it('accepts an existing directory and a fresh path under one, and makes nothing', () => {
    expect(directoryProblem(dir)).toBeUndefined();
    expect(directoryProblem(path.join(dir, 'a', 'b', 'c'))).toBeUndefined();
    expect(existsSync(path.join(dir, 'a'))).toBe(false);
  });

  it('names the level that is not a directory: a file, a device, a link to nothing', async () => {
    await writeFile(path.join(dir, 'file'), 'x');
    await symlink(path.join(dir, 'nowhere'), path.join(dir, 'dangling'));
    expect(directoryProblem(path.join(dir, 'file'))).toBe(`${path.join(dir, 'file')} is not a directory`);
    expect(directoryProblem(path.join(dir, 'file', 'out'))).toBe(`${path.join(dir, 'file')} is not a directory`);
    expect(directoryProblem('/dev/null/x')).toBe('/dev/null is not a directory');
    expect(directoryProblem(path.join(dir, 'dangling', 'out'))).toBe(
      `${path.join(dir, 'dangling')} is a link to nothing`,
    );
  });

  it('follows a link to a directory, as OUTPUT_DIR may be one', async () => {
    await mkdir(path.join(dir, 'real'));
    await symlink(path.join(dir, 'real'), path.join(dir, 'link'));
    expect(directoryProblem(path.join(dir, 'link', 'out'))).toBeUndefined();
  });

  it.each([
    [
      '/proc/x',
      "/proc, the deepest part that exists, is on procfs (the kernel's view of processes), where no files can " +
        'be written',
    ],
    ['/proc/self', "it is on procfs (the kernel's view of processes), where no files can be written"],
    [
      '/sys/x/y',
      "/sys, the deepest part that exists, is on sysfs (the kernel's view of devices), where no files can be written",
    ],
  ])('refuses %s by its file system, named', (target, problem) => {
    expect(directoryProblem(target)).toBe(problem);
  });
});

describe('a directory others can plant in (OUTPUT_DIR at start)', () => {
  it.each([
    [0o777, true],
    [0o2777, true],
    [0o773, true],
    [0o1777, false],
    [0o775, false],
    [0o755, false],
    [0o700, false],
  ])('mode %o: others may plant in it: %s', (mode, expected) => {
    expect(othersMayPlant(mode)).toBe(expected);
  });

  it('names the directory, its mode and the fix; a sticky one, a missing one and a private one pass', async () => {
    const open = path.join(dir, 'open');
    await mkdir(open);
    await chmod(open, 0o777);
    expect(openToOthersProblem(open)).toBe(
      'others can write it (mode 0777) and it has no sticky bit, so any user of this host could plant a link or a ' +
        `file in it: chmod o-w ${open} (or chmod +t, as /tmp has)`,
    );
    // Through a link to it, as OUTPUT_DIR may be: the folder it names is judged.
    await symlink(open, path.join(dir, 'link'));
    expect(openToOthersProblem(path.join(dir, 'link'))).toContain('others can write it (mode 0777)');
    await chmod(open, 0o1777);
    expect(openToOthersProblem(open)).toBeUndefined();
    await chmod(open, 0o755);
    expect(openToOthersProblem(open)).toBeUndefined();
    expect(openToOthersProblem(path.join(dir, 'not-yet'))).toBeUndefined();
  });

  it("is one of OUTPUT_DIR's issues at start, with the value given", async () => {
    const open = path.join(dir, 'open');
    await mkdir(open);
    await chmod(open, 0o777);
    expect(outputDirIssues({ OUTPUT_DIR: open })).toEqual([
      {
        variable: 'OUTPUT_DIR',
        value: open,
        allowed: expect.stringMatching(
          new RegExp(`^a directory others cannot write, or one with the sticky bit; ${open}: others can write it`),
        ),
      },
    ]);
    await chmod(open, 0o1777);
    expect(outputDirIssues({ OUTPUT_DIR: open })).toEqual([]);
  });
});

describe('makeDirectories', () => {
  it('makes every missing level, and leaves existing ones as they are', async () => {
    await makeDirectories(path.join(dir, 'a', 'b', 'c'));
    expect((await stat(path.join(dir, 'a', 'b', 'c'))).isDirectory()).toBe(true);
    await makeDirectories(path.join(dir, 'a', 'b'));
  });

  it('makes no level others can write, even under umask 0', async () => {
    const previous = process.umask(0);
    try {
      await makeDirectories(path.join(dir, 'a', 'b'));
    } finally {
      process.umask(previous);
    }
    for (const level of [path.join(dir, 'a'), path.join(dir, 'a', 'b')])
      expect(((await stat(level)).mode & 0o777).toString(8), level).toBe('775');
  });

  it('lets two callers make the same path at once', async () => {
    const target = path.join(dir, 'x', 'y', 'z');
    await Promise.all([makeDirectories(target), makeDirectories(target), makeDirectories(target)]);
    expect((await stat(target)).isDirectory()).toBe(true);
  });

  it('fails, not spins, where a level cannot be made: procfs (ENOENT), through a file (ENOTDIR)', async () => {
    await writeFile(path.join(dir, 'file'), 'x');
    await expect(makeDirectories('/proc/itb-x/y')).rejects.toMatchObject({ code: 'ENOENT', path: '/proc/itb-x' });
    await expect(makeDirectories(path.join(dir, 'file'))).rejects.toMatchObject({
      code: 'ENOTDIR',
      path: path.join(dir, 'file'),
    });
    await expect(makeDirectories(path.join(dir, 'file', 'out'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });
});
