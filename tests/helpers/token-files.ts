import { chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import { newAuthToken } from '../../services/shared/auth-token.js';
import { exitWithin, freePortsEnv, startService, stopService } from './processes.js';

/** Runs a service as uid and gid 1000 (the image's node user), as the Kubernetes manifests do. */
export const AS_UID_1000 = ['setpriv', '--reuid=1000', '--regid=1000', '--clear-groups'];

/** The token-file checks over real entries, making their files in the folder `folder()` gives (made by the test). */
export function tokenFileChecks(folder: () => string): {
  tokenFile(name: string, mode: number, owner?: [number, number]): Promise<string>;
  expectRefusedByBoth(file: string, reason: RegExp, prefix?: readonly string[]): Promise<void>;
  expectTrustedByReceiver(file: string, because: RegExp, prefix?: readonly string[]): Promise<void>;
} {
  /** A token file at a fresh path with `mode` (and `owner` uid:gid when given). */
  async function tokenFile(name: string, mode: number, owner?: [number, number]): Promise<string> {
    const file = path.join(folder(), name);
    await writeFile(file, `${newAuthToken()}\n`, { mode });
    await chmod(file, mode);
    if (owner !== undefined) await chown(file, owner[0], owner[1]);
    return file;
  }

  /** Both services, started with AUTH_TOKEN_FILE=`file`, exit 2 naming the file and `reason`. */
  async function expectRefusedByBoth(file: string, reason: RegExp, prefix: readonly string[] = []): Promise<void> {
    const env = { ...(await freePortsEnv()), AUTH_TOKEN_FILE: file, CONNECT_TIMEOUT_MS: '1000' };
    // Both at once; the bound is generous (loading the transports takes seconds on a loaded machine): what counts is
    // the exit code.
    const services = (['receiver', 'transmitter'] as const).map((name) => ({
      name,
      service: startService(name, { ...env, OUTPUT_DIR: path.join(folder(), `out-${name}`) }, prefix),
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
    const outputDir = path.join(folder(), `out-${path.basename(file)}`);
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

  return { tokenFile, expectRefusedByBoth, expectTrustedByReceiver };
}
