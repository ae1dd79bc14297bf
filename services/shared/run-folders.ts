import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { RUNS_FOLDER } from '../core/report/run-files.js';
import { othersMayPlant } from './directories.js';

// Finding the run folders an OUTPUT_DIR holds, for whoever reads them (the receiver's pages and sweep, npm start once
// its receivers are gone), never through a folder someone else planted: the receiver writes only into folders of its
// own, and a reader that followed a planted `runs` would complete or list another user's files.

/**
 * Why `dir` is not a real folder of this process's user that others cannot write (undefined when it is): a link, not
 * a folder, another user's, or open to every user of the host without the sticky bit.
 */
export async function foreignFolderProblem(dir: string): Promise<string | undefined> {
  const stats = await lstat(dir).catch(() => undefined);
  if (stats === undefined) return 'it cannot be examined';
  if (stats.isSymbolicLink()) return `it is a symbolic link (to ${await readlink(dir).catch(() => '?')})`;
  if (!stats.isDirectory()) return 'it is not a folder';
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid)
    return `it is owned by uid ${stats.uid}, not by uid ${uid} (this process)`;
  // Others may write it only with the sticky bit, where no one can rename or remove what is not theirs.
  if (othersMayPlant(stats.mode)) return 'others can write in it';
  return undefined;
}

/**
 * The run folders under `baseDir` (OUTPUT_DIR, or a second receiver's `receiver-<k>` in it), newest last (their names
 * start with the start time): only real folders in a `runs` of this process's own.
 */
export async function runFolders(baseDir: string): Promise<string[]> {
  const runsDir = path.join(baseDir, RUNS_FOLDER);
  if ((await foreignFolderProblem(runsDir)) !== undefined) return [];
  const entries = await readdir(runsDir, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => path.join(runsDir, name));
}
