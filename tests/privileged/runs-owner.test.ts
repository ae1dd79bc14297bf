import { chown, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunFolder } from '../../services/receiver/run-output/run-folder.js';
import { fixtureReport } from '../helpers/fixtures.js';
import { requirePrivilege } from '../helpers/privileges.js';

// The run folder's refusal of a `runs` it did not make, by owner: it needs root (chown), so CI's host
// runs it (the vitest project `privileged`); the rest is in tests/unit/planted-links.test.ts.

const run = fixtureReport([]).run;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-runs-owner-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('RunFolder.create', () => {
  it('a runs owned by another uid (65534, by chown: run as root) is refused', async (context) => {
    requirePrivilege(context, 'root', 'chown to uid 65534');
    const out = path.join(dir, 'out');
    await mkdir(path.join(out, 'runs'), { recursive: true });
    await chown(path.join(out, 'runs'), 65534, 65534);
    await expect(RunFolder.create(out, run)).rejects.toMatchObject({
      message: expect.stringContaining(`runs: it is owned by uid 65534, not by uid 0 (this process)`),
    });
    expect(await readdir(path.join(out, 'runs'))).toEqual([]);
  });
});
