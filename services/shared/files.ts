import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';

/**
 * "could not write /x/output.log: ENOSPC: no space left on device": the file meant (not its
 * temporary) and the system's reason, without the syscall and path Node appends to it.
 */
export function describeWriteFailure(target: string, err: unknown): string {
  const { syscall } = err as { syscall?: unknown };
  let reason = errorMessage(err);
  // Node words it "EFBIG: file too large, write" or "EACCES: permission denied, open '/x/y.tmp'".
  if (typeof syscall === 'string') {
    const suffix = reason.lastIndexOf(`, ${syscall}`);
    if (suffix > 0) reason = reason.slice(0, suffix);
  }
  return `could not write ${target}: ${reason}`;
}

/** ITB_ERR_WRITE naming `target` and the system's reason ({@link describeWriteFailure}), `err` as its cause. */
export function writeFailure(target: string, err: unknown): ItbError {
  return new ItbError(ErrorCode.write, describeWriteFailure(target, err), { cause: err });
}

/**
 * Flags that create a new file and nothing else: O_EXCL fails on anything already at the path, a
 * link (dangling or not) included, and O_NOFOLLOW says so again, so a write never goes through a
 * link planted at the name.
 */
export const CREATE_NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/**
 * Writes a file so that readers see either the old content or the whole new one, never half:
 * the text goes to a new temporary file in the same folder, which is then renamed over the target
 * (a rename replaces a link at the target, never writes through it).
 * Fails with ITB_ERR_WRITE worded by {@link describeWriteFailure}.
 */
export async function writeFileAtomic(target: string, text: string): Promise<void> {
  await writeFilesAtomic([{ target, text }]);
}

/**
 * Writes several files so that none is replaced unless every one was written whole: all go to
 * temporary files first (where a full disk or a file-size limit fails), and only then are they
 * renamed over their targets, in the order given. On a failure the temporaries are removed and the
 * targets keep their previous content; it rejects with ITB_ERR_WRITE naming the file and the
 * system's reason.
 */
export async function writeFilesAtomic(files: readonly { target: string; text: string }[]): Promise<void> {
  const written: string[] = [];
  let current = files[0]?.target ?? '';
  try {
    for (const { target, text } of files) {
      current = target;
      await mkdir(path.dirname(target), { recursive: true });
      const temporary = temporaryFor(target);
      const handle = await open(temporary, CREATE_NEW_FILE, 0o644);
      written.push(temporary);
      try {
        await handle.writeFile(text);
      } finally {
        await handle.close();
      }
    }
    for (const [index, { target }] of files.entries()) {
      current = target;
      await rename(written[index]!, target);
    }
  } catch (err) {
    await Promise.all(written.map((temporary) => rm(temporary, { force: true }).catch(() => undefined)));
    throw writeFailure(current, err);
  }
}

// Beside its target, so the rename stays on one file system; named at random, so no one can plant
// a link at the name beforehand (a name by pid could be guessed) and two writers never share one.
function temporaryFor(target: string): string {
  return `${target}.${randomBytes(8).toString('hex')}.tmp`;
}
