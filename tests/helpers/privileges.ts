import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'vitest';
import { projectPath } from '../../services/shared/paths.js';

// Some checks need what a machine may not give: root, network namespaces with veth and tc, a user
// namespace with a mount of its own. Each is probed by doing the real thing once per test file
// (the first test that asks), and a test that needs one it lacks is skipped with the reason, which
// tests/setup/skips-reporter.ts lists at the end of the run. CI has them all: there a missing one
// fails the test instead.

/** What a test may need that an unprivileged machine or container does not give. */
export type Privilege = 'root' | 'uid1000' | 'netns' | 'userns';

const INSTALL = 'bash scripts/install-test-tools.sh';

/** `file args`, run; null when it exited 0, else why not (its stderr's first line, or the spawn error). */
function failureOf(file: string, args: readonly string[]): string | null {
  const result = spawnSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  if (result.error) {
    const missing = (result.error as NodeJS.ErrnoException).code === 'ENOENT';
    return missing ? `${file} is not installed (${INSTALL})` : `${file}: ${result.error.message}`;
  }
  if (result.status === 0) return null;
  const said = result.stderr.trim().split('\n')[0] ?? '';
  return `\`${[file, ...args].join(' ')}\` failed: ${said || `exit ${result.status ?? result.signal}`}`;
}

function notRoot(): string {
  return `runs as uid ${process.getuid?.() ?? 'unknown'}, not root`;
}

/**
 * Root that can give a file away: chown to uid 1000 and to nobody (65534), as the tests do; a user namespace's root may
 * not.
 */
function rootMissing(): string | null {
  if (process.getuid?.() !== 0) return notRoot();
  return inTempDir((dir) => {
    const file = path.join(dir, 'owned');
    writeFileSync(file, '');
    for (const uid of [1000, 65534]) {
      try {
        chownSync(file, uid, uid);
      } catch (err) {
        return `root here cannot chown to uid ${uid} (${(err as Error).message}): a user namespace's root`;
      }
    }
    return null;
  });
}

/** `use` given a fresh temporary folder, removed afterwards. */
function inTempDir<T>(use: (dir: string) => T): T {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'itb-probe-'));
  try {
    return use(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A namespace, a veth pair in it, and a tbf qdisc on it: what a shaped link (scripts/lib/shaped-link.ts) does. */
function netnsMissing(): string | null {
  if (process.getuid?.() !== 0) return notRoot();
  const namespace = `itb-probe-${process.pid}`;
  const steps: [string, string[]][] = [
    ['ip', ['netns', 'add', namespace]],
    ['ip', ['-n', namespace, 'link', 'add', 'itbprobe0', 'type', 'veth', 'peer', 'name', 'itbprobe1']],
    [
      'tc',
      [
        '-n',
        namespace,
        'qdisc',
        'add',
        'dev',
        'itbprobe0',
        'root',
        'tbf',
        'rate',
        '40mbit',
        'burst',
        '32kbit',
        'latency',
        '50ms',
      ],
    ],
  ];
  try {
    for (const [file, args] of steps) {
      const failure = failureOf(file, args);
      if (failure) return failure;
    }
    return null;
  } finally {
    // Deleting the namespace deletes the veth pair in it; a namespace never made is no error here.
    spawnSync('ip', ['netns', 'delete', namespace], { stdio: 'ignore' });
  }
}

/**
 * Root, and uid 1000 (through setpriv, as the tests run a service) able to run this checkout's
 * built receiver: a checkout in /root (mode 0700, a container's usual place) is out of its reach.
 */
function uid1000Missing(): string | null {
  const root = rootMissing();
  if (root !== null) return root;
  const entry = projectPath('dist', 'services', 'receiver', 'main.js');
  const failure = failureOf('setpriv', [
    '--reuid=1000',
    '--regid=1000',
    '--clear-groups',
    process.execPath,
    '-e',
    `require('fs').accessSync(${JSON.stringify(entry)}, require('fs').constants.R_OK)`,
  ]);
  return failure === null
    ? null
    : `uid 1000 cannot run ${entry} (a folder above it is closed to others: a checkout in /root?): ${failure}`;
}

/** A user namespace with a mount namespace, and a bind mount over the boot id: what cross-host.test.ts does. */
function usernsMissing(): string | null {
  return inTempDir((dir) => {
    const bootId = path.join(dir, 'boot_id');
    writeFileSync(bootId, '00000000-0000-4000-8000-000000000000\n');
    return failureOf('unshare', ['-Urm', 'sh', '-c', 'mount --bind "$0" /proc/sys/kernel/random/boot_id', bootId]);
  });
}

const PROBES: Readonly<Record<Privilege, () => string | null>> = {
  root: rootMissing,
  uid1000: uid1000Missing,
  netns: netnsMissing,
  userns: usernsMissing,
};
const NAMES: Readonly<Record<Privilege, string>> = {
  root: 'root that can chown to any uid',
  uid1000: 'root, and uid 1000 able to run this checkout (setpriv)',
  netns: 'network namespaces, veth and tc (root with CAP_NET_ADMIN and CAP_SYS_ADMIN)',
  userns: 'an unprivileged user namespace with its own mounts (unshare -Urm)',
};
const probed = new Map<Privilege, string | null>();

/** Why this machine does not give `privilege`, or null when it does; probed once per test file. */
export function privilegeMissing(privilege: Privilege): string | null {
  if (!probed.has(privilege)) probed.set(privilege, PROBES[privilege]());
  return probed.get(privilege) ?? null;
}

/** True when the environment says this is CI (CI set, and not "false" or "0"), where nothing may be skipped. */
export function isCi(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0';
}

/**
 * Stops the running test unless the machine gives `privilege`: skipped with what did not run and
 * why (`check` says what the test checks), or failed with the same words under CI.
 */
export function requirePrivilege(context: TestContext, privilege: Privilege, check: string): void {
  const missing = privilegeMissing(privilege);
  if (missing === null) return;
  const reason = `${check} needs ${NAMES[privilege]}: ${missing}`;
  if (isCi()) throw new Error(`CI must run every check, and this machine skips one: ${reason}`);
  context.skip(reason);
}
