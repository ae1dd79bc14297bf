import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';

// What planted links point at in the tests of writes that must never go through one: a file and a
// folder whose contents are known, to be checked untouched after the writes.

const VICTIM_TEXT = 'the victim, as it was\n';

/** A victim file and an empty victim folder in `dir`. */
export interface Victims {
  file: string;
  folder: string;
  /** Fails unless the file holds its text and the folder is still empty. */
  expectUntouched(): Promise<void>;
}

/** Makes the victims in `dir`. */
export async function makeVictims(dir: string): Promise<Victims> {
  const file = path.join(dir, 'victim');
  const folder = path.join(dir, 'victim-folder');
  await writeFile(file, VICTIM_TEXT);
  await mkdir(folder);
  return {
    file,
    folder,
    async expectUntouched() {
      expect(await readFile(file, 'utf8')).toBe(VICTIM_TEXT);
      expect(await readdir(folder)).toEqual([]);
    },
  };
}
