import { chmod, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAuthToken } from '../../services/shared/auth-token.js';
import { exitWithin, freePortsEnv, startReadyReceiver, startService, stopService } from '../helpers/processes.js';
import { tokenFileChecks } from '../helpers/token-files.js';

// AUTH_TOKEN_FILE through the real entries: a file is trusted only when it is the service's (a
// regular file, not a link, owned by its user and private, or owned by root and readable by its
// group at most, as a Kubernetes secret mount is). Every refusal stops either service at start
// with exit 2, naming the path and the reason. The ownership cases, which need root (chown) and
// setpriv, are in tests/privileged/token-file-owners.test.ts.

const asRoot = process.getuid?.() === 0;

let dir: string;
/** A valid secret in a private file of the test's own: the target of the planted links. */
let othersToken: string;
let othersTokenFile: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-token-file-'));
  // Others (uid 1000 below) must reach the files in it.
  await chmod(dir, 0o755);
  othersToken = newAuthToken();
  othersTokenFile = path.join(dir, 'others-token');
  await writeFile(othersTokenFile, `${othersToken}\n`, { mode: 0o600 });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const { tokenFile, expectRefusedByBoth, expectTrustedByReceiver } = tokenFileChecks(() => dir);

describe('AUTH_TOKEN_FILE refused: exit 2, the path and the reason named', () => {
  it('a symbolic link to a valid secret: the linked secret is not taken', async () => {
    const link = path.join(dir, 'link-token');
    await symlink(othersTokenFile, link);
    await expectRefusedByBoth(
      link,
      new RegExp(`is refused: a symbolic link \\(to ${othersTokenFile}\\): a link is never followed`),
    );
    // The receiver created no file of its own through the link either.
    expect((await readFile(othersTokenFile, 'utf8')).trim()).toBe(othersToken);
  }, 90_000);

  it('a dangling symbolic link: named as such, and nothing created where it points', async () => {
    const link = path.join(dir, 'dangling-token');
    const nowhere = path.join(dir, 'nowhere');
    await symlink(nowhere, link);
    await expectRefusedByBoth(
      link,
      new RegExp(`is refused: a dangling symbolic link \\(to ${nowhere}, which does not exist\\)`),
    );
    await expect(stat(nowhere)).rejects.toMatchObject({ code: 'ENOENT' });
  }, 90_000);

  it('a file others can read (0644): the chmod that fixes it', async () => {
    const file = await tokenFile('open-token', 0o644);
    await expectRefusedByBoth(file, new RegExp(`mode 0644 allows group/others to use it: \`chmod 600 ${file}\``));
  }, 90_000);

  it('a FIFO or a folder: not a regular file (a FIFO does not hang the start)', async () => {
    const fifo = path.join(dir, 'fifo-token');
    execFileSync('mkfifo', ['-m', '600', fifo]);
    await expectRefusedByBoth(fifo, /is refused: not a regular file/);
    const folder = path.join(dir, 'folder-token');
    await mkdir(folder, { mode: 0o700 });
    await expectRefusedByBoth(folder, /is refused: not a regular file/);
  }, 90_000);
});

describe('AUTH_TOKEN_FILE trusted: the receiver runs and logs which file and why', () => {
  it("a private file of the service's own (0600)", async () => {
    const file = await tokenFile('good-token', 0o600);
    await expectTrustedByReceiver(
      file,
      asRoot ? /^owned by root \(this process\), mode 0600/ : /^owned by this process's uid \d+, mode 0600$/,
    );
  }, 90_000);
});

describe('AUTH_TOKEN_FILE created by the receiver', () => {
  it('a receiver creates a missing file (mode 0600) and a transmitter running as the same user takes it', async () => {
    const file = path.join(dir, 'created-token');
    const env = {
      ...(await freePortsEnv()),
      TRANSPORTS: 'tcp',
      IMAGE_COUNT: '3',
      OUTPUT_DIR: path.join(dir, 'out-created'),
      AUTH_TOKEN_FILE: file,
      CONNECT_TIMEOUT_MS: '5000',
    };
    const receiver = await startReadyReceiver(env);
    try {
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const transmitter = startService('transmitter', { ...env, LOG_LEVEL: 'info' });
      expect(await exitWithin(transmitter, 30_000), transmitter.stderr().slice(-2000)).toBe(0);
      expect(transmitter.stderr()).toMatch(
        /"trustedBecause":"owned by [^"]*mode 0600[^"]*".*using the secret in AUTH_TOKEN_FILE/,
      );
    } finally {
      await stopService(receiver);
    }
  }, 90_000);
});
