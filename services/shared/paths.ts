import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCode, ItbError } from '../core/errors.js';

/**
 * The project's root folder (the one holding package.json), found from this file so the same
 * code works from the TypeScript sources under vitest and from the compiled files in dist/.
 */
export function projectRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new ItbError(ErrorCode.setup, `no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  return dir;
}

/** Path of a file in the project, given relative to its root. */
export function projectPath(...segments: string[]): string {
  return path.join(projectRoot(), ...segments);
}
