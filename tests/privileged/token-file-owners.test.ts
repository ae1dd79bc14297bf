import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { requirePrivilege } from '../helpers/privileges.js';
import { AS_UID_1000, tokenFileChecks } from '../helpers/token-files.js';

// AUTH_TOKEN_FILE's ownership cases through the real entries (the rest: tests/e2e/token-file.test.ts).
// They need root (chown), and uid 1000 through setpriv for a service that is not root: CI's host
// runs them (the vitest project `privileged`); elsewhere they are skipped and listed at the end.

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-token-owners-'));
  // Others (uid 1000 below) must reach the files in it.
  await chmod(dir, 0o755);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const { tokenFile, expectRefusedByBoth, expectTrustedByReceiver } = tokenFileChecks(() => dir);

describe('AUTH_TOKEN_FILE refused by owner: exit 2, the path and the reason named', () => {
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

describe('AUTH_TOKEN_FILE trusted by owner: the receiver runs and logs which file and why', () => {
  it("run as root, a private file of root's own (0600)", async (context) => {
    requirePrivilege(context, 'root', 'a service run as root');
    const file = await tokenFile('root-0600-token', 0o600);
    await expectTrustedByReceiver(file, /^owned by root \(this process\), mode 0600/);
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
