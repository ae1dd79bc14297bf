import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAuthToken } from '../../services/shared/auth-token.js';
import { requirePrivilege } from '../helpers/privileges.js';
import { exitWithin, freePortsEnv, startReadyReceiver, startService, stopService } from '../helpers/processes.js';

// AUTH_TOKEN_FILE through the real entries: a file is trusted only when it is the service's (a
// regular file, not a link, owned by its user and private, or owned by root and readable by its
// group at most, as a Kubernetes secret mount is). Every refusal stops either service at start
// with exit 2, naming the path and the reason. The ownership cases need root (chown): they run
// here as root, and as uid 1000 through setpriv for the cases of a service that is not root; they
// are skipped, and listed at the end of the run, when the tests do not run as root.

const asRoot = process.getuid?.() === 0;
/** Runs a service as uid and gid 1000 (the image's node user), as the Kubernetes manifests do. */
const AS_UID_1000 = ['setpriv', '--reuid=1000', '--regid=1000', '--clear-groups'];

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

/** A token file at a fresh path with `mode` (and `owner` uid:gid when given). */
async function tokenFile(name: string, mode: number, owner?: [number, number]): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, `${newAuthToken()}\n`, { mode });
  await chmod(file, mode);
  if (owner !== undefined) await chown(file, owner[0], owner[1]);
  return file;
}

/** Both services, started with AUTH_TOKEN_FILE=`file`, exit 2 naming the file and `reason`. */
async function expectRefusedByBoth(file: string, reason: RegExp, prefix: readonly string[] = []): Promise<void> {
  const env = { ...(await freePortsEnv()), AUTH_TOKEN_FILE: file, CONNECT_TIMEOUT_MS: '1000' };
  // Both at once; the bound is generous (loading the transports takes seconds on a loaded machine): what counts is the
  // exit code.
  const services = (['receiver', 'transmitter'] as const).map((name) => ({
    name,
    service: startService(name, { ...env, OUTPUT_DIR: path.join(dir, `out-${name}`) }, prefix),
  }));
  for (const { name, service } of services) {
    expect(await exitWithin(service, 30_000), `${name}: ${service.stderr()}`).toBe(2);
    expect(service.stderr(), name).toContain(`AUTH_TOKEN_FILE="${file}": expected a regular file (not a link)`);
    expect(service.stderr(), name).toContain(`${file} is refused: `);
    expect(service.stderr(), name).toMatch(reason);
  }
}

/** A receiver started with AUTH_TOKEN_FILE=`file` runs, and logs that file with why it was trusted. */
async function expectTrustedByReceiver(file: string, because: RegExp, prefix: readonly string[] = []): Promise<void> {
  const outputDir = path.join(dir, `out-${path.basename(file)}`);
  await mkdir(outputDir);
  if (prefix.length > 0) await chown(outputDir, 1000, 1000);
  const receiver = startService(
    'receiver',
    { ...(await freePortsEnv()), TRANSPORTS: 'tcp', LOG_LEVEL: 'info', OUTPUT_DIR: outputDir, AUTH_TOKEN_FILE: file },
    prefix,
  );
  try {
    await receiver.waitForLog(/receiver ready/, 60_000);
    const line = receiver
      .stderr()
      .split('\n')
      .find((l) => l.includes('using the secret in AUTH_TOKEN_FILE'));
    expect(line, receiver.stderr()).toBeDefined();
    const logged = JSON.parse(line!) as { authTokenFile: string; trustedBecause: string };
    expect(logged.authTokenFile).toBe(file);
    expect(logged.trustedBecause).toMatch(because);
  } finally {
    await stopService(receiver);
  }
}

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

  it('a private file owned by another uid (nobody, 65534)', async (context) => {
    requirePrivilege(context, 'root', 'chown to uid 65534');
    const file = await tokenFile('nobodys-token', 0o600, [65534, 65534]);
    await expectRefusedByBoth(
      file,
      /is refused: owned by uid 65534, not by uid 0 \(this process\) or root, so uid 65534 can change the secret/,
    );
  }, 90_000);

  it('run as uid 1000: a root-owned file its group may write (0460), and a file of its own its group can read ' +
    '(0640)', async (context) => {
    requirePrivilege(context, 'uid1000', 'chown and setpriv to uid 1000');
    const groupWritable = await tokenFile('root-group-writable-token', 0o460, [0, 1000]);
    await expectRefusedByBoth(
      groupWritable,
      new RegExp(
        `owned by root with mode 0460, which lets its group write it or others use it .*: \`chmod g-w,` +
          `o-rwx ${groupWritable}\``,
      ),
      AS_UID_1000,
    );
    const ownOpen = await tokenFile('uid1000-open-token', 0o640, [1000, 1000]);
    await expectRefusedByBoth(
      ownOpen,
      new RegExp(`mode 0640 allows group/others to use it: \`chmod 600 ${ownOpen}\``),
      AS_UID_1000,
    );
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

  it('run as root, a root-owned file its group may read ' +
    '(0440): the rule for root-owned files holds for root too', async (context) => {
    requirePrivilege(context, 'root', 'a service run as root');
    const file = await tokenFile('root-0440-token', 0o440, [0, 0]);
    await expectTrustedByReceiver(file, /^owned by root \(this process\), mode 0440: only root can have placed it/);
  }, 90_000);

  it('run as uid 1000: a Kubernetes secret mount (root-owned, group 1000, 0440) and a Docker swarm secret (uid ' +
    '1000, 0400)', async (context) => {
    requirePrivilege(context, 'uid1000', 'chown and setpriv to uid 1000');
    const mounted = await tokenFile('k8s-token', 0o440, [0, 1000]);
    await expectTrustedByReceiver(
      mounted,
      /^owned by root, mode 0440: only root can have placed it \(a secret mount\)/,
      AS_UID_1000,
    );
    const swarm = await tokenFile('swarm-token', 0o400, [1000, 1000]);
    await expectTrustedByReceiver(swarm, /^owned by this process's uid 1000, mode 0400$/, AS_UID_1000);
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
