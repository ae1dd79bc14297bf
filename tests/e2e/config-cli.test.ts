import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromEnv } from '../../services/shared/entry.js';
import { transmitterEnvChecks } from '../../services/transmitter/env-checks.js';
import { transports } from '../../services/transports/index.js';
import {
  exitWithin,
  freePortsEnv,
  startReadyReceiver,
  startService,
  stopService,
  TEST_AUTH_TOKEN_FILE,
} from '../helpers/processes.js';

// Bad configuration, through the real entries: exit code 2, every bad variable named with its
// value, nothing started, and the previous run's output.log left exactly as it was.

let outputDir: string;
let unreadableImage: string;
const previousLog = 'output.log of an earlier run\n';

beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-config-'));
  await writeFile(path.join(outputDir, 'output.log'), previousLog);
  unreadableImage = path.join(outputDir, 'secret.png');
  await writeFile(unreadableImage, 'x');
  await chmod(unreadableImage, 0o000);
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

const firstPortVariable = transports.flatMap(({ deployment: { setting } }) =>
  setting.kind === 'port' ? [setting.envVar] : [],
)[0]!;

// One wrong value per variable (and the cross-variable rules), with what the message must say.
const badValues: [variable: string, value: string, expected: string][] = [
  ['IMAGE_COUNT', '0', 'IMAGE_COUNT="0": expected a whole number from 1 to 1,000,000'],
  ['IMAGE_COUNT', '-5', 'IMAGE_COUNT="-5": expected a whole number'],
  [
    'DURATION',
    '5',
    'DURATION="5": expected a time with units (a bare number has none): whole numbers with h, m, s or ms',
  ],
  ['IMAGE_SIZE', 'abc', 'IMAGE_SIZE="abc": expected a whole number of bytes, or a number with'],
  ['IMAGE_SIZE', '300MiB', 'IMAGE_SIZE="300MiB": expected at most MAX_IMAGE_SIZE'],
  [
    'TRANSPORTS',
    'websocket,pigeon',
    `TRANSPORTS="websocket,pigeon": expected all, or a comma-separated list of distinct transports from: ` +
      transports.map((t) => t.name).join(', '),
  ],
  // Set but empty is not the default run, unlike the other variables.
  [
    'TRANSPORTS',
    '',
    `TRANSPORTS="": expected all, or a comma-separated list of distinct transports from: ` +
      transports.map((t) => t.name).join(', ') +
      `; no entry empty (unset for the default run:`,
  ],
  ['WINDOW', '0', 'WINDOW="0": expected a whole number from 1 to 1,024'],
  [
    'WARMUP',
    'some',
    'WARMUP="some": expected auto, or a whole number of images from 0 to 100,000 (0: a cold run on purpose)',
  ],
  ['WARMUP_MIN_MS', '-1', 'WARMUP_MIN_MS="-1": expected a whole number from 0 to 600,000'],
  ['WARMUP_MAX_MS', '0', 'WARMUP_MAX_MS="0": expected a whole number from 1 to 3,600,000'],
  ['REPEAT', '0', 'REPEAT="0": expected a whole number from 1 to 100'],
  ['VERIFY', 'maybe', 'VERIFY="maybe": expected true or false'],
  ['PROFILE', '2', 'PROFILE="2": expected 1 or 0 (or true or false)'],
  ['CONTROL_PORT', '70000', 'CONTROL_PORT="70000": expected a whole number from 1 to 65,535'],
  ['LOG_LEVEL', 'chatty', 'LOG_LEVEL="chatty": expected one of fatal, error, warn, info, debug, trace, silent'],
  [
    'MAX_IMAGE_SIZE',
    '3GiB',
    'MAX_IMAGE_SIZE="3GiB": expected a whole number of bytes, or a number with B, KB, MB, GB (×1000) or KiB, ' +
      'MiB, GiB (×1024), e.g. 533KB, 4MB, 1MiB, at least 1 byte and at most 2.0 GiB (2146435071 bytes)',
  ],
  ['IMAGE_TIMEOUT_MS', '0', 'IMAGE_TIMEOUT_MS="0": expected a whole number from 1 to 3,600,000'],
  ['CONNECT_TIMEOUT_MS', '1e3', 'CONNECT_TIMEOUT_MS="1e3": expected a whole number from 1 to 3,600,000'],
  // A refused secret is not printed either.
  ['AUTH_TOKEN', 'secret', 'AUTH_TOKEN="***": expected 16 to 256 characters'],
  // Every transport's own setting, from the table: a port, or a broker's URL.
  // (Transports that share a setting, as the Redis ones share REDIS_URL, give it one row.)
  ...[...new Map(transports.map(({ deployment: { setting } }) => [setting.envVar, setting])).values()].map(
    (setting, i): [string, string, string] => {
      if (setting.kind === 'url')
        return [
          setting.envVar,
          'localhost:6379',
          `${setting.envVar}="localhost:6379": expected a ` +
            setting.schemes.map((scheme) => `${scheme}://`).join(' or ') +
            ` URL`,
        ];
      if (setting.kind === 'socket')
        return [
          setting.envVar,
          'sockets',
          `${setting.envVar}="sockets": expected an absolute directory path of at most`,
        ];
      const value = ['0', 'x', '-1', '65536'][i % 4]!;
      // A transport that binds the ports after its own too (zeromq-pubsub's acks) leaves room for them.
      const highest = (65_535 - (setting.nextPorts ?? 0)).toLocaleString('en-US');
      return [setting.envVar, value, `${setting.envVar}="${value}": expected a whole number from 1 to ${highest}`];
    },
  ),
  // The cross-variable rules: a warm-up whose minimum is above its maximum (10,000 ms by default), two ports alike.
  ['WARMUP_MIN_MS', '10001', 'WARMUP_MIN_MS="10001": expected at most WARMUP_MAX_MS (10000)'],
  [
    firstPortVariable,
    '8080',
    `${firstPortVariable}="8080": expected a port no other variable uses (CONTROL_PORT is 8080 too)`,
  ],
];

// Generous: a refusal takes well under a second, and a hang (recursive mkdir on procfs spun
// forever) fails the test here instead of holding vitest.
async function runEntry(entry: 'transmitter' | 'receiver' | 'start', env: Record<string, string>) {
  const service = startService(entry, { OUTPUT_DIR: outputDir, ...env });
  const code = await exitWithin(service, 12_000);
  return { code, stderr: service.stderr(), stdout: service.stdout() };
}

describe('bad configuration', () => {
  // Each value through the function the transmitter's entry calls before it prints the message and exits 2, in this
  // process: a child per value cost 40 node starts. The entries themselves print, exit 2 and leave output.log alone for
  // all these values at once, below.
  it.each(badValues)('%s=%j: the transmitter names it', (variable, value, expected) => {
    const env = { PATH: process.env.PATH ?? '', AUTH_TOKEN_FILE: TEST_AUTH_TOKEN_FILE, OUTPUT_DIR: outputDir };
    const result = configFromEnv({ ...env, [variable]: value }, transports, transmitterEnvChecks);
    expect(result.ok).toBe(false);
    const message = result.ok ? '' : result.message;
    expect(message).toMatch(/^Invalid configuration \(\d+ bad variables?\):$/m);
    expect(message).toContain(expected);
  });

  it.each(['transmitter', 'receiver', 'start'] as const)(
    'DURATION=5 with IMAGE_COUNT=3: %s names both problems, exit 2, output untouched',
    async (entry) => {
      const result = await runEntry(entry, { DURATION: '5', IMAGE_COUNT: '3' });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('Invalid configuration (2 bad variables):');
      expect(result.stderr).toContain('  DURATION="5": expected a time with units (a bare number has none)');
      expect(result.stderr).toContain('  IMAGE_COUNT="3": expected unset when DURATION is set (DURATION="5")');
      expect(result.stdout).toBe('');
      expect(await readFile(path.join(outputDir, 'output.log'), 'utf8')).toBe(previousLog);
    },
    15_000,
  );

  it('an unreadable IMAGE_PATH is named with the reason', async () => {
    // Root reads any file whatever its mode, so the permission case is only checked for others.
    if (process.getuid?.() !== 0) {
      const result = await runEntry('transmitter', { IMAGE_PATH: unreadableImage });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`IMAGE_PATH="${unreadableImage}": expected a readable file (EACCES`);
    }
    const missing = await runEntry('transmitter', { IMAGE_PATH: path.join(outputDir, 'nope.png') });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('expected a readable file (ENOENT');
    const directory = await runEntry('transmitter', { IMAGE_PATH: outputDir });
    expect(directory.code).toBe(2);
    expect(directory.stderr).toContain('expected a readable file (not a regular file)');
  }, 90_000);

  it.each(['transmitter', 'receiver', 'start'] as const)(
    'all bad at once: %s names every one in a single message, exit 2, output untouched',
    async (entry) => {
      const env = Object.fromEntries(
        badValues.filter(([v], i, all) => all.findIndex(([w]) => w === v) === i).map(([v, value]) => [v, value]),
      );
      const result = await runEntry(entry, env);
      expect(result.code).toBe(2);
      const message = result.stderr;
      expect(message.match(/^Invalid configuration \(\d+ bad variables\):$/gm)).toHaveLength(1);
      for (const variable of Object.keys(env)) expect(message, variable).toContain(`  ${variable}=`);
      expect(result.stdout).toBe('');
      expect(await readFile(path.join(outputDir, 'output.log'), 'utf8')).toBe(previousLog);
    },
    15_000,
  );

  it('an OUTPUT_DIR the receiver cannot write is refused at start', async () => {
    const blocked = path.join(outputDir, 'file-not-dir');
    await writeFile(blocked, 'x');
    const result = await runEntry('receiver', { OUTPUT_DIR: path.join(blocked, 'out') });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`  OUTPUT_DIR="${blocked}/out": expected a directory `);
    expect(result.stderr).toContain(`can create and write; ${blocked}/out: ${blocked} is not a directory`);
    await mkdir(path.join(outputDir, 'ok'), { recursive: true });
  }, 15_000);
});

describe('an OUTPUT_DIR where nothing can be made', () => {
  // Each refused in bounded time (recursive mkdir never returned on procfs), naming OUTPUT_DIR, the
  // level that stops it and why, together with every other bad variable, with nothing made.
  const cases: [string, string, string][] = [
    ['procfs', '/proc/x', '/proc/x: /proc, the deepest part that exists, is on procfs'],
    ['procfs, deeper', '/proc/itb/a/b', '/proc/itb/a/b: /proc, the deepest part that exists, is on procfs'],
    ['procfs, existing', '/proc/self', '/proc/self: it is on procfs'],
    ['sysfs', '/sys/x', '/sys/x: /sys, the deepest part that exists, is on sysfs'],
    ['a device for a parent', '/dev/null/x', '/dev/null/x: /dev/null is not a directory'],
  ];
  const entries = ['receiver', 'start'] as const;
  it.each(entries.flatMap((entry) => cases.map(([what, dir, reason]) => [entry, what, dir, reason] as const)))(
    '%s, %s (%s): exit 2 naming OUTPUT_DIR, the reason and WINDOW too',
    async (entry, _what, dir, reason) => {
      const result = await runEntry(entry, { OUTPUT_DIR: dir, WINDOW: '0' });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('Invalid configuration (2 bad variables):');
      expect(result.stderr).toContain(`  OUTPUT_DIR="${dir}": expected a directory `);
      expect(result.stderr).toContain(reason);
      expect(result.stderr).toContain('  WINDOW="0": expected a whole number from 1 to 1,024');
    },
    15_000,
  );
});

describe('a refused configuration makes nothing', () => {
  it.each(['receiver', 'start'] as const)(
    '%s: a bad variable and a fresh OUTPUT_DIR and AUTH_TOKEN_FILE: exit 2, neither exists after',
    async (entry) => {
      const fresh = path.join(outputDir, `fresh-${entry}`);
      const tokenFile = path.join(outputDir, `token-${entry}`);
      const result = await runEntry(entry, {
        OUTPUT_DIR: path.join(fresh, 'a', 'b'),
        AUTH_TOKEN_FILE: tokenFile,
        TRANSPORTS: '',
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('  TRANSPORTS="": expected all, or a comma-separated list');
      expect(existsSync(fresh)).toBe(false);
      expect(existsSync(tokenFile)).toBe(false);
    },
    15_000,
  );

  it('accepted, the receiver makes a fresh OUTPUT_DIR two levels deep at start', async () => {
    const fresh = path.join(outputDir, 'fresh-accepted');
    const receiver = await startReadyReceiver({
      ...(await freePortsEnv()),
      OUTPUT_DIR: path.join(fresh, 'a', 'b'),
      AUTH_TOKEN: 'a'.repeat(32),
      TRANSPORTS: 'tcp',
    });
    try {
      expect(existsSync(path.join(fresh, 'a', 'b'))).toBe(true);
    } finally {
      await stopService(receiver);
    }
  }, 90_000);
});
