import { mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { judgeSecretFile } from '../../services/core/wire/auth.js';
import { ErrorCode } from '../../services/core/errors.js';
import { newAuthToken, readOrCreateTokenFile, readTokenFile } from '../../services/shared/auth-token.js';

// Which secret files a service trusts (judgeSecretFile, pure), and the receiver's creation of a
// missing one with real files and links: 'wx' never goes through a link at the path, and the file
// behind a link is never read as the secret.

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-token-unit-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('judgeSecretFile', () => {
  const file = '/s/token';
  // [what, facts, process uid, trusted, reason or why]
  const cases: [string, { regularFile: boolean; ownerUid: number; mode: number }, number, boolean, string][] = [
    [
      'own, 0600',
      { regularFile: true, ownerUid: 1000, mode: 0o100600 },
      1000,
      true,
      "owned by this process's uid 1000, mode 0600",
    ],
    [
      'own, 0400 (Docker swarm)',
      { regularFile: true, ownerUid: 1000, mode: 0o100400 },
      1000,
      true,
      "owned by this process's uid 1000, mode 0400",
    ],
    [
      'own, 0640',
      { regularFile: true, ownerUid: 1000, mode: 0o100640 },
      1000,
      false,
      'mode 0640 allows group/others to use it: `chmod 600 /s/token`',
    ],
    [
      'own, 0604',
      { regularFile: true, ownerUid: 1000, mode: 0o100604 },
      1000,
      false,
      'mode 0604 allows group/others to use it: `chmod 600 /s/token`',
    ],
    [
      'root, 0440 (Kubernetes fsGroup)',
      { regularFile: true, ownerUid: 0, mode: 0o100440 },
      1000,
      true,
      'owned by root, mode 0440: only root can have placed it (a secret mount), and no one outside its group ' +
        'can read it',
    ],
    [
      'root, 0640',
      { regularFile: true, ownerUid: 0, mode: 0o100640 },
      1000,
      true,
      'owned by root, mode 0640: only root can have placed it (a secret mount), and no one outside its group ' +
        'can read it',
    ],
    [
      'root, 0460',
      { regularFile: true, ownerUid: 0, mode: 0o100460 },
      1000,
      false,
      'owned by root with mode 0460, which lets its group write it or others use it (a root-owned secret may be ' +
        'readable by its group, no more): `chmod g-w,o-rwx /s/token`',
    ],
    [
      'root, 0444',
      { regularFile: true, ownerUid: 0, mode: 0o100444 },
      1000,
      false,
      'owned by root with mode 0444, which lets its group write it or others use it (a root-owned secret may be ' +
        'readable by its group, no more): `chmod g-w,o-rwx /s/token`',
    ],
    [
      'root as root, 0440',
      { regularFile: true, ownerUid: 0, mode: 0o100440 },
      0,
      true,
      'owned by root (this process), mode 0440: only root can have placed it (a secret mount), and no one ' +
        'outside its group can read it',
    ],
    [
      'root as root, 0644',
      { regularFile: true, ownerUid: 0, mode: 0o100644 },
      0,
      false,
      'mode 0644 allows group/others to use it: `chmod 600 /s/token`',
    ],
    [
      'another uid, 0600',
      { regularFile: true, ownerUid: 65534, mode: 0o100600 },
      1000,
      false,
      'owned by uid 65534, not by uid 1000 (this process) or root, so uid 65534 can change the secret: use a ' +
        "file of uid 1000's with mode 0600",
    ],
    [
      'another uid as root',
      { regularFile: true, ownerUid: 1000, mode: 0o100600 },
      0,
      false,
      'owned by uid 1000, not by uid 0 (this process) or root, so uid 1000 can change the secret: use a file of ' +
        "uid 0's with mode 0600",
    ],
    ['a folder of its own', { regularFile: false, ownerUid: 1000, mode: 0o40700 }, 1000, false, 'not a regular file'],
  ];
  it.each(cases)('%s', (_what, facts, uid, trusted, text) => {
    const verdict = judgeSecretFile(facts, uid, file);
    expect(verdict.trusted).toBe(trusted);
    expect(verdict.trusted ? verdict.because : verdict.reason).toBe(text);
  });
});

describe('readOrCreateTokenFile', () => {
  it('creates a missing file with a fresh secret, mode 0600, and takes it the next time', async () => {
    const file = path.join(dir, 'token');
    const created = readOrCreateTokenFile(file);
    expect(created).toMatchObject({ created: true, file, trustedBecause: 'created by this receiver, mode 0600' });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(readOrCreateTokenFile(file)).toMatchObject({ created: false, token: created.token });
  });

  it(
    'a link to another secret: nothing written through it, its secret refused (ITB_ERR_CONFIG naming the path and ' +
      'why)',
    async () => {
      const others = path.join(dir, 'others');
      const othersToken = newAuthToken();
      await writeFile(others, `${othersToken}\n`, { mode: 0o600 });
      const link = path.join(dir, 'token');
      await symlink(others, link);
      expect(() => readOrCreateTokenFile(link)).toThrow(
        expect.objectContaining({
          code: ErrorCode.config,
          message: expect.stringContaining(`AUTH_TOKEN_FILE ${link} is refused: a symbolic link (to ${others})`),
        }),
      );
      expect(() => readTokenFile(link)).toThrow(expect.objectContaining({ code: ErrorCode.config }));
      expect(await readFile(others, 'utf8')).toBe(`${othersToken}\n`);
    },
  );

  it('a dangling link: the file it names is not created (O_EXCL), and the refusal says dangling', async () => {
    const nowhere = path.join(dir, 'nowhere');
    const link = path.join(dir, 'token');
    await symlink(nowhere, link);
    expect(() => readOrCreateTokenFile(link)).toThrow(
      expect.objectContaining({
        code: ErrorCode.config,
        message: expect.stringContaining(`a dangling symbolic link (to ${nowhere}, which does not exist)`),
      }),
    );
    await expect(stat(nowhere)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a file over 4096 bytes is refused without reading it as a secret', async () => {
    const file = path.join(dir, 'token');
    await writeFile(file, `${'a'.repeat(5000)}\n`, { mode: 0o600 });
    expect(() => readTokenFile(file)).toThrow(
      expect.objectContaining({
        code: ErrorCode.config,
        message: expect.stringContaining('is 5001 bytes, more than a secret'),
      }),
    );
  });
});
