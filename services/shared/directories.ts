import { accessSync, constants, lstatSync, type Stats, statfsSync, statSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../core/errors.js';

// A directory the services write into (OUTPUT_DIR, bench's --out) is checked at start without
// creating anything, so a refused configuration leaves no trace, and in bounded time: Node's
// recursive mkdir never returns on procfs (mkdir answers ENOENT for a parent that exists), so
// the check walks the path one level at a time and creation, once the configuration is accepted,
// makes one level at a time too.

/**
 * The kernel's pseudo file systems, by statfs f_type (linux/magic.h): what looks like a folder
 * there is a kernel table, where mkdir fails (procfs, sysfs, debugfs, securityfs, devpts, pstore,
 * binfmt_misc, fusectl), makes a kernel object instead of a folder (cgroup, configfs, tracefs,
 * bpf, mqueue), or a file cannot be written with write(2) (hugetlbfs) or is firmware NVRAM (efivarfs).
 */
const PSEUDO_FILE_SYSTEMS: ReadonlyMap<number, string> = new Map([
  [0x9fa0, "procfs (the kernel's view of processes)"],
  [0x62656572, "sysfs (the kernel's view of devices)"],
  [0x27e0eb, 'cgroup (control groups)'],
  [0x63677270, 'cgroup2 (control groups)'],
  [0x64626720, 'debugfs (kernel debugging)'],
  [0x73636673, 'securityfs (security modules)'],
  [0x74726163, 'tracefs (kernel tracing)'],
  [0x1cd1, 'devpts (terminals)'],
  [0xcafe4a11, 'bpf (BPF objects)'],
  [0x6165676c, 'pstore (crash records)'],
  [0xde5e81e4, 'efivarfs (firmware variables)'],
  [0x62656570, 'configfs (kernel objects)'],
  [0x42494e4d, 'binfmt_misc (executable formats)'],
  [0x65735543, 'fusectl (FUSE connections)'],
  [0x19800202, 'mqueue (message queues)'],
  [0x958458f6, 'hugetlbfs (huge pages)'],
]);

/**
 * True for a folder of `mode` in which any user of the host can create, rename or remove names: others can write it
 * and it has no sticky bit (with the sticky bit, as /tmp has, only a name's owner can rename or remove it).
 */
export function othersMayPlant(mode: number): boolean {
  return (mode & 0o002) !== 0 && (mode & 0o1000) === 0;
}

/** A folder's permission bits as chmod takes them: 0755, 1777. */
export function folderModeText(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

/**
 * Why `dir` is open to every user of the host, worded to follow "<dir>: ", or undefined when it is not (or does not
 * exist yet: it is then made without write for others). A link is followed: OUTPUT_DIR may be one the user chose.
 * In such a folder anyone could plant a link or a file at a name the receiver writes or serves.
 */
export function openToOthersProblem(dir: string): string | undefined {
  let stats: Stats | undefined;
  try {
    stats = statSync(dir, { throwIfNoEntry: false });
  } catch {
    // directoryProblem says why it cannot be examined.
    return undefined;
  }
  if (stats === undefined || !stats.isDirectory() || !othersMayPlant(stats.mode)) return undefined;
  return (
    `others can write it (mode ${folderModeText(stats.mode)}) and it has no sticky bit, so any user of this host ` +
    `could plant a link or a file in it: chmod o-w ${path.resolve(dir)} (or chmod +t, as /tmp has)`
  );
}

/** The pseudo file system `dir` is on, named, or undefined for one files can be written to. */
function pseudoFileSystem(dir: string): string | undefined {
  return PSEUDO_FILE_SYSTEMS.get(Number(statfsSync(dir).type) >>> 0);
}

/**
 * Why `dir` cannot be made or written, worded to follow "<dir>: ", or undefined when it can;
 * creates nothing. From the root down, each level that exists must be a directory; the deepest
 * one (`dir` itself when it exists) must be on a file system of files and writable by this process.
 */
export function directoryProblem(dir: string): string | undefined {
  const target = path.resolve(dir);
  let deepest = path.parse(target).root;
  for (const next of levels(target)) {
    let stats: Stats | undefined;
    try {
      stats = statSync(next, { throwIfNoEntry: false });
    } catch (err) {
      return `${next}: ${reasonOf(err)}`;
    }
    if (stats === undefined) {
      if (lstatSync(next, { throwIfNoEntry: false }) !== undefined) return `${next} is a link to nothing`;
      break;
    }
    if (!stats.isDirectory()) return `${next} is not a directory`;
    deepest = next;
  }
  // Said after the path asked for: "it" when it exists, else the level creation would start from.
  const where = deepest === target ? undefined : `${deepest}, the deepest part that exists,`;
  try {
    const pseudo = pseudoFileSystem(deepest);
    if (pseudo !== undefined) return `${where ?? 'it'} is on ${pseudo}, where no files can be written`;
    accessSync(deepest, constants.W_OK | constants.X_OK);
  } catch (err) {
    return `${where === undefined ? '' : `${where} is not writable: `}${reasonOf(err)}`;
  }
  return undefined;
}

/**
 * Makes `dir` and any missing parent, one level at a time (a recursive mkdir can spin forever on
 * procfs); a level another process makes meanwhile is fine. Rejects with the system's reason, or
 * ENOTDIR when a level exists and is not a directory. No level made is writable by others, whatever
 * the umask: the receiver would refuse such an OUTPUT_DIR at its next start.
 */
export async function makeDirectories(dir: string): Promise<void> {
  for (const current of levels(path.resolve(dir))) {
    try {
      await mkdir(current, { mode: 0o775 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (!(await stat(current)).isDirectory())
        throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${current}'`), {
          code: 'ENOTDIR',
          syscall: 'mkdir',
          path: current,
        });
    }
  }
}

// "/a", "/a/b", "/a/b/c" for "/a/b/c": each level below the root, from the top.
function levels(target: string): string[] {
  const { root } = path.parse(target);
  const names = path
    .relative(root, target)
    .split(path.sep)
    .filter((name) => name !== '');
  return names.map((_, i) => path.join(root, ...names.slice(0, i + 1)));
}

// "EACCES: permission denied", without the syscall and path Node appends: the path is said already.
function reasonOf(err: unknown): string {
  return errorMessage(err).replace(/, \w+ '[^']*'$/, '');
}
