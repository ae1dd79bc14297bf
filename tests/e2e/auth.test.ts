import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  exitWithin,
  freePortsEnv,
  startReadyReceiver,
  startService,
  stopService,
  type ServiceProcess,
} from '../helpers/processes.js';

// The shared secret through the real entries: a receiver started on its own with no AUTH_TOKEN
// makes one in AUTH_TOKEN_FILE, readable by its owner only; a transmitter reading that file runs;
// one holding another secret is refused before anything is recorded and exits 2; a token file
// holding junk stops the receiver at start.

let dir: string;
let env: Record<string, string>;
let receiver: ServiceProcess;
let tokenFile: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-auth-'));
  tokenFile = path.join(dir, 'secret', 'token');
  await mkdir(path.dirname(tokenFile));
  env = {
    ...(await freePortsEnv()),
    TRANSPORTS: 'tcp',
    IMAGE_COUNT: '3',
    OUTPUT_DIR: path.join(dir, 'output'),
    AUTH_TOKEN_FILE: tokenFile,
    LOG_LEVEL: 'info',
    CONNECT_TIMEOUT_MS: '5000',
  };
  receiver = await startReadyReceiver(env);
}, 90_000);
afterAll(async () => {
  await stopService(receiver);
  await rm(dir, { recursive: true, force: true });
});

describe('AUTH_TOKEN', () => {
  it(
    'a receiver without AUTH_TOKEN creates a random ' + 'secret in AUTH_TOKEN_FILE, mode 0600, and says where',
    async () => {
      expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
      expect((await readFile(tokenFile, 'utf8')).trim()).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(receiver.stderr()).toContain(tokenFile);
      expect(receiver.stderr()).not.toContain((await readFile(tokenFile, 'utf8')).trim());
    },
  );

  it('a transmitter with another secret is refused at its first request and exits 2; nothing is recorded', async () => {
    const transmitter = startService('transmitter', { ...env, AUTH_TOKEN: 'another-secret-0123456789' });
    expect(await exitWithin(transmitter, 20_000)).toBe(2);
    expect(transmitter.stderr()).toMatch(/receiver refused POST \/runs \(HTTP 403\): wrong AUTH_TOKEN/);
    expect(await readdir(env.OUTPUT_DIR!).catch(() => [])).toEqual([]);
  }, 90_000);

  it('a transmitter that reads the same AUTH_TOKEN_FILE runs, and the secret is in no output file', async () => {
    const transmitter = startService('transmitter', env);
    expect(await exitWithin(transmitter, 30_000), transmitter.stderr().slice(-2000)).toBe(0);
    const secret = (await readFile(tokenFile, 'utf8')).trim();
    for (const file of ['output.log', 'results.json', 'report.html']) {
      expect(await readFile(path.join(env.OUTPUT_DIR!, file), 'utf8'), file).not.toContain(secret);
    }
    // Nor in any file of the run's folder (each section's CSV among them).
    const written = (await readdir(env.OUTPUT_DIR!, { recursive: true, withFileTypes: true })).filter((entry) =>
      entry.isFile(),
    );
    expect(written.map((entry) => entry.name)).toContainEqual(expect.stringMatching(/^images-01-tcp\.csv$/));
    for (const entry of written)
      expect(await readFile(path.join(entry.parentPath, entry.name), 'utf8'), entry.name).not.toContain(secret);
  }, 40_000);

  it('an AUTH_TOKEN_FILE holding something else stops either service at start with exit 2, naming it', async () => {
    const junk = path.join(dir, 'junk-token');
    await writeFile(junk, 'not a secret\n', { mode: 0o600 });
    for (const name of ['receiver', 'transmitter'] as const) {
      const service = startService(name, {
        ...(await freePortsEnv()),
        OUTPUT_DIR: path.join(dir, `out-${name}`),
        AUTH_TOKEN_FILE: junk,
      });
      expect(await exitWithin(service, 10_000), name).toBe(2);
      expect(service.stderr(), name).toMatch(
        new RegExp(
          /AUTH_TOKEN_FILE="[^"]*junk-token": expected a regular file \(not a link\) holding a secret /.source +
            /.*junk-token is refused: holds something other than a secret/.source,
        ),
      );
    }
  }, 90_000);
});
