import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { directoryProblem, makeDirectories } from '../../services/shared/directories.js';

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

describe('makeDirectories', () => {
  it('makes every missing level, and leaves existing ones as they are', async () => {
    await makeDirectories(path.join(dir, 'a', 'b', 'c'));
    expect((await stat(path.join(dir, 'a', 'b', 'c'))).isDirectory()).toBe(true);
    await makeDirectories(path.join(dir, 'a', 'b'));
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
