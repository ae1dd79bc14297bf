import { chmod, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OUTPUT_FILES } from '../../services/core/report/run-files.js';
import { escapeRegExp, TEST_AUTH_TOKEN } from '../helpers/harness.js';
import {
  exitWithin,
  freePortsEnv,
  startReadyReceiver,
  startService,
  stopService,
  type ServiceProcess,
} from '../helpers/processes.js';
import { makeVictims, type Victims } from '../helpers/victims.js';

// A receiver whose OUTPUT_DIR others can write but with the sticky bit (mode 1777, as /tmp), with
// links planted at every name it writes or once wrote there, each pointing at a victim: a real run
// through the real entries leaves the victims untouched, and a planted `runs` stops the run with
// the reason instead of putting its files where the link points. One others can write without the
// sticky bit (0777) is refused at start, before anything is made in it.

let dir: string;
let victims: Victims;
let victim: string;
let victimDir: string;
let receiver: ServiceProcess | undefined;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-planted-e2e-'));
  victims = await makeVictims(dir);
  ({ file: victim, folder: victimDir } = victims);
});
afterEach(async () => {
  await stopService(receiver);
  receiver = undefined;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** An OUTPUT_DIR others can write (`mode`: sticky by default), and the environment of a one-transport run into it. */
async function sharedOutput(name: string, mode = 0o1777): Promise<{ out: string; env: Record<string, string> }> {
  const out = path.join(dir, name);
  await mkdir(out);
  await chmod(out, mode);
  return {
    out,
    env: {
      ...(await freePortsEnv()),
      OUTPUT_DIR: out,
      AUTH_TOKEN: TEST_AUTH_TOKEN,
      TRANSPORTS: 'tcp',
      IMAGE_COUNT: '3',
      CONNECT_TIMEOUT_MS: '10000',
    },
  };
}

describe('links planted in OUTPUT_DIR', () => {
  it('at output.log, results.json, report.html, latest and their <name>.<pid>.tmp: a run replaces them with its ' +
    'own links, the victims untouched', async () => {
    const { out, env } = await sharedOutput('out-links');
    receiver = await startReadyReceiver(env);
    const pid = receiver.child.pid!;
    for (const file of Object.values(OUTPUT_FILES)) {
      await symlink(victim, path.join(out, file));
      await symlink(victim, path.join(out, `${file}.${pid}.tmp`));
    }
    await symlink(victimDir, path.join(out, 'latest'));
    await symlink(victim, path.join(out, `latest.${pid}.tmp`));

    const transmitter = startService('transmitter', env);
    expect(await exitWithin(transmitter, 30_000), transmitter.stderr().slice(-2000)).toBe(0);
    await victims.expectUntouched();
    expect(await readlink(path.join(out, 'latest'))).toMatch(/^runs\/\d{8}T\d{6}Z-[0-9a-f]{6}$/);
    for (const file of Object.values(OUTPUT_FILES))
      expect(await readlink(path.join(out, file)), file).toBe(path.join('latest', file));
    expect(await readFile(path.join(out, 'output.log'), 'utf8')).toContain('Image 3 transmission time');
  }, 40_000);

  it('at runs: the run is refused with the reason (exit 1), and nothing goes where the link points', async () => {
    const { out, env } = await sharedOutput('out-runs');
    await symlink(victimDir, path.join(out, 'runs'));
    receiver = await startReadyReceiver(env);
    const transmitter = startService('transmitter', env);
    expect(await exitWithin(transmitter, 30_000), transmitter.stderr().slice(-2000)).toBe(1);
    expect(transmitter.stderr()).toMatch(
      new RegExp(
        `could not write ${escapeRegExp(path.join(out, 'runs'))}: it is a symbolic link ` +
          `\\(to ${escapeRegExp(victimDir)}\\), which this receiver did not make`,
      ),
    );
    await victims.expectUntouched();
  }, 40_000);
});

describe('an OUTPUT_DIR others can write', () => {
  it('without the sticky bit (0777): the receiver exits ' +
    '2 naming it and its mode, having made nothing in it', async () => {
    const { out, env } = await sharedOutput('out-open', 0o777);
    receiver = startService('receiver', env);
    expect(await exitWithin(receiver, 20_000), receiver.stderr().slice(-2000)).toBe(2);
    expect(receiver.stderr()).toContain(
      `OUTPUT_DIR="${out}": expected a directory others cannot write, or one with the sticky bit; ${out}: others can ` +
        `write it (mode 0777) and it has no sticky bit`,
    );
    expect(receiver.stderr()).toContain(`chmod o-w ${out}`);
    expect(await readdir(out)).toEqual([]);
  }, 30_000);

  it('with the sticky bit (1777, as /tmp): the receiver starts', async () => {
    const { env } = await sharedOutput('out-sticky');
    receiver = await startReadyReceiver(env);
    expect(receiver.child.exitCode).toBeNull();
  }, 30_000);
});
