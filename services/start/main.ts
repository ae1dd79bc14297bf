import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { errorMessage } from '../core/errors.js';
import { stopChild } from '../shared/child-process.js';
import { configFromEnvOrExit, effectiveLogLevel, ExitCode, imagePathIssues, outputDirIssues } from '../shared/entry.js';
import { createLogger } from '../shared/logger.js';
import { projectPath } from '../shared/paths.js';
import { startPrivateRedis, type PrivateRedis } from '../shared/redis-server.js';

// `npm start`: the whole suite on this machine. Starts the receiver and the transmitter as two
// processes (as docker compose does), plus a private redis-server when REDIS_URL is not given,
// and exits with the transmitter's code once the receiver has shut down.

// The services' own checks, here too, so bad input stops everything before any process starts.
const config = configFromEnvOrExit((env) => [...imagePathIssues(env), ...outputDirIssues(env)]);
const log = createLogger('start', effectiveLogLevel(config));
const env: NodeJS.ProcessEnv = { ...process.env };
let redis: PrivateRedis | undefined;
const children = new Set<ChildProcess>();

function startService(name: 'receiver' | 'transmitter'): ChildProcess {
  const child = spawn(process.execPath, [projectPath('dist', 'services', name, 'main.js')], { env, stdio: 'inherit' });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function cleanUp(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child, 5000)));
  await redis?.close();
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    log.warn({ signal }, 'interrupted; stopping the services');
    void cleanUp().finally(() => process.exit(ExitCode.failed));
  });
}

if (config.transports.includes('redis') && config.redisUrl === undefined) {
  try {
    redis = await startPrivateRedis();
    env.REDIS_URL = redis.url;
    log.info({ url: redis.url }, 'private redis-server started for this run');
  } catch (err) {
    log.warn({ err: errorMessage(err) }, 'no private redis-server: the redis section will be reported as failed');
    process.stderr.write(`npm start: REDIS_URL is not set and no redis-server could be started (${errorMessage(err)}); the redis section will fail, the others run.\n`);
  }
}

const receiver = startService('receiver');
const transmitter = startService('transmitter');
// A receiver that dies takes the run with it: stop the transmitter rather than let it wait.
receiver.on('exit', () => {
  if (transmitter.exitCode === null) void stopChild(transmitter, 5000);
});
const [transmitterCode] = (await once(transmitter, 'exit')) as [number | null];
const receiverDied = receiver.exitCode !== null;
await cleanUp();
if (receiverDied) process.stderr.write(`npm start: the receiver exited early (code ${receiver.exitCode}); see its log above.\n`);
process.exit(transmitterCode === ExitCode.ok && !receiverDied ? ExitCode.ok : (transmitterCode ?? ExitCode.failed));
