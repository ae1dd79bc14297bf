import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../services/core/report/report.js';
import type { LocalServer } from '../../services/transports/contract.js';
import { startPrivateRedis } from '../../services/transports/kit/redis.js';
import { startPrivateNats } from '../../services/transports/kit/nats.js';
import {
  exitWithin,
  freePortsEnv,
  startReadyReceiver,
  startService,
  stopService,
  type ServiceProcess,
} from '../helpers/processes.js';

// Broker passwords through the real entries: a redis-server and a nats-server that refuse clients
// without them, a receiver and a transmitter run over the Redis transports and NATS. The run
// succeeding proves the password reached each library; then neither password may be in any file
// of the run, in what either process printed, nor in any answer of the receiver's GET routes,
// read during the run and after it.

const REDIS_PASSWORD = 'S3cretRedisPw';
const NATS_USER = 'itb-user';
const NATS_PASSWORD = 'S3cretNatsPw';
const SECRETS = [REDIS_PASSWORD, NATS_PASSWORD];
/** Every GET route of the receiver's control server (services/receiver/app.ts); /clock answers an empty body. */
const GET_ROUTES = ['/health', '/progress', '/', '/results.json', '/output.log', '/clock'];

let dir: string;
let redis: LocalServer;
let nats: LocalServer;
let redisHostPort: string;
let natsHostPort: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-broker-credentials-'));
  [redis, nats] = await Promise.all([
    startPrivateRedis([], '127.0.0.1', REDIS_PASSWORD),
    startPrivateNats(undefined, '127.0.0.1', { auth: { user: NATS_USER, password: NATS_PASSWORD } }),
  ]);
  redisHostPort = new URL(redis.url).host;
  natsHostPort = new URL(nats.url).host;
}, 90_000);
afterAll(async () => {
  await Promise.all([redis?.close(), nats?.close()]);
  await rm(dir, { recursive: true, force: true });
});

/** The text of every GET route of the receiver at `controlPort`, whatever its status. */
async function readGetRoutes(controlPort: string): Promise<string[]> {
  return Promise.all(
    GET_ROUTES.map(async (route) => {
      const response = await fetch(`http://127.0.0.1:${controlPort}${route}`, { signal: AbortSignal.timeout(5000) });
      return `${route} ${response.status}\n${[...response.headers].join('\n')}\n${await response.text()}`;
    }),
  );
}

/** Every regular file under `root`, by path. */
async function filesUnder(root: string): Promise<Map<string, string>> {
  const entries = (await readdir(root, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
  return new Map(
    await Promise.all(
      entries.map(
        async (entry) =>
          [
            path.join(entry.parentPath, entry.name),
            await readFile(path.join(entry.parentPath, entry.name), 'utf8'),
          ] as const,
      ),
    ),
  );
}

interface Run {
  code: number | null;
  results: RunReport;
  /** Every text the run let out: files, both services' stdout and stderr, GET answers during and after the run. */
  outputs: Map<string, string>;
}

/**
 * Runs a receiver and a transmitter with `brokerEnv` over `transports`, reading every GET route while the transmitter
 * runs.
 */
async function run(
  name: string,
  transports: string,
  brokerEnv: Record<string, string>,
  extraEnv: Record<string, string> = {},
): Promise<Run> {
  const outputDir = path.join(dir, name);
  const env: Record<string, string> = {
    ...(await freePortsEnv()),
    TRANSPORTS: transports,
    IMAGE_COUNT: '3',
    WARMUP: '0',
    OUTPUT_DIR: outputDir,
    LOG_LEVEL: 'debug',
    ...brokerEnv,
    ...extraEnv,
  };
  let receiver: ServiceProcess | undefined;
  try {
    receiver = await startReadyReceiver(env);
    const transmitter = startService('transmitter', env);
    const answers: string[] = [];
    let running = true;
    const reading = (async () => {
      while (running) answers.push(...(await readGetRoutes(env.CONTROL_PORT!)));
    })();
    const code = await exitWithin(transmitter, 60_000);
    running = false;
    await reading;
    answers.push(...(await readGetRoutes(env.CONTROL_PORT!)));
    await stopService(receiver);
    const outputs = await filesUnder(outputDir);
    outputs.set('transmitter stdout', transmitter.stdout());
    outputs.set('transmitter stderr', transmitter.stderr());
    outputs.set('receiver stdout', receiver.stdout());
    outputs.set('receiver stderr', receiver.stderr());
    for (const [index, answer] of answers.entries())
      outputs.set(`GET answer ${index}: ${answer.split('\n')[0]}`, answer);
    const results = JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as RunReport;
    return { code, results, outputs };
  } finally {
    await stopService(receiver);
  }
}

/** Fails naming the first output that holds a secret. */
function expectNoSecret(outputs: Map<string, string>): void {
  for (const [where, text] of outputs)
    for (const secret of SECRETS)
      expect(text.includes(secret), `${secret} in ${where}:\n${text.slice(0, 3000)}`).toBe(false);
}

describe('broker credentials', () => {
  it('with the passwords in REDIS_URL and NATS_URL, the run succeeds and neither password is in any file, log, or ' +
    'GET answer', async () => {
    const { code, results, outputs } = await run('in-url', 'redis,redis-list,redis-pubsub,nats,nats-jetstream', {
      REDIS_URL: `redis://:${REDIS_PASSWORD}@${redisHostPort}`,
      NATS_URL: `nats://${NATS_USER}:${NATS_PASSWORD}@${natsHostPort}`,
    });
    expect(code, outputs.get('transmitter stderr')?.slice(-3000)).toBe(0);
    expect(results.sections.map((s) => [s.transport, s.okCount])).toEqual([
      ['redis', 3],
      ['redis-list', 3],
      ['redis-pubsub', 3],
      ['nats', 3],
      ['nats-jetstream', 3],
    ]);
    // Shown, redacted, where the URL is reported.
    expect(results.run.config.urls).toEqual({
      redis: `redis://***@${redisHostPort}`,
      'redis-list': `redis://***@${redisHostPort}`,
      'redis-pubsub': `redis://***@${redisHostPort}`,
      'redis-kv': `redis://***@${redisHostPort}`,
      nats: `nats://***@${natsHostPort}`,
      'nats-jetstream': `nats://***@${natsHostPort}`,
    });
    expect([...outputs.keys()]).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/results\.json$/),
        expect.stringMatching(/report\.html$/),
        expect.stringMatching(/output\.log$/),
        expect.stringMatching(/images-01-redis\.csv$/),
      ]),
    );
    expect([...outputs.keys()].filter((where) => where.startsWith('GET answer')).length).toBeGreaterThan(
      GET_ROUTES.length,
    );
    expectNoSecret(outputs);
  }, 90_000);

  it('with REDIS_PASSWORD and NATS_PASSWORD (the user in NATS_URL), the run succeeds and neither password is ' +
    'reported', async () => {
    const { code, results, outputs } = await run('variables', 'redis,nats', {
      REDIS_URL: `redis://${redisHostPort}`,
      REDIS_PASSWORD,
      NATS_URL: `nats://${NATS_USER}@${natsHostPort}`,
      NATS_PASSWORD,
    });
    expect(code, outputs.get('transmitter stderr')?.slice(-3000)).toBe(0);
    expect(results.sections.map((s) => s.okCount)).toEqual([3, 3]);
    expect(results.run.config).not.toHaveProperty('brokerPasswords');
    expectNoSecret(outputs);
  }, 90_000);

  it('with REDIS_PASSWORD_FILE and NATS_PASSWORD_FILE, the run succeeds', async () => {
    const redisFile = path.join(dir, 'redis-password');
    const natsFile = path.join(dir, 'nats-password');
    await writeFile(redisFile, `${REDIS_PASSWORD}\n`, { mode: 0o600 });
    await writeFile(natsFile, `${NATS_PASSWORD}\n`, { mode: 0o600 });
    const { code, results, outputs } = await run('files', 'redis,nats', {
      REDIS_URL: `redis://${redisHostPort}`,
      REDIS_PASSWORD_FILE: redisFile,
      NATS_URL: `nats://${NATS_USER}@${natsHostPort}`,
      NATS_PASSWORD_FILE: natsFile,
    });
    expect(code, outputs.get('transmitter stderr')?.slice(-3000)).toBe(0);
    expect(results.sections.map((s) => s.okCount)).toEqual([3, 3]);
    expectNoSecret(outputs);
  }, 90_000);

  it('a wrong password fails the section with the broker ' +
    'named redacted, and the password given is nowhere', async () => {
    const wrong = `${REDIS_PASSWORD}-wrong`;
    const { code, results, outputs } = await run(
      'wrong',
      'redis',
      { REDIS_URL: `redis://:${wrong}@${redisHostPort}` },
      { CONNECT_TIMEOUT_MS: '1000' },
    );
    expect(code).toBe(1);
    expect(results.sections[0]?.failure).toMatch(new RegExp(`Redis at redis://\\*\\*\\*@${redisHostPort}.*WRONGPASS`));
    for (const [where, text] of outputs) expect(text.includes(wrong), `${where}:\n${text.slice(0, 3000)}`).toBe(false);
  }, 90_000);
});
