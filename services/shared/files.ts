import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Writes a file so that readers see either the old content or the whole new one, never half:
 * the text goes to a temporary file in the same folder, which is then renamed over the target.
 */
export async function writeFileAtomic(target: string, text: string): Promise<void> {
  await mkdir(path.dirname(target), { recursive: true });
  const temporary = `${target}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, text);
    await rename(temporary, target);
  } catch (err) {
    await rm(temporary, { force: true });
    throw err;
  }
}

/** An error naming the file a write failed on and the system's reason (ENOSPC, EACCES, EROFS, EFBIG, …). */
export function describeWriteFailure(filePath: string, err: unknown): Error {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const reason = err instanceof Error ? err.message : String(err);
  // The system's message already starts with its code (`ENOSPC: no space left on device, write`).
  return new Error(`could not write ${filePath}: ${code !== undefined && !reason.startsWith(code) ? `${code}: ` : ''}${reason}`, { cause: err });
}
