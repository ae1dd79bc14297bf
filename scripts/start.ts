import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { errorMessage } from '../services/core/errors.js';
import { newAuthToken } from '../services/shared/auth-token.js';
import { stopChild } from '../services/shared/child-process.js';
import { configFromEnvOrExit, effectiveLogLevel, ExitCode, imagePathIssues, outputDirIssues } from '../services/shared/entry.js';
import { createLogger } from '../services/shared/logger.js';
import { SERVICE_NODE_FLAGS } from '../services/shared/node-flags.js';
import { projectPath } from '../services/shared/paths.js';
import type { LocalServer } from '../services/transports/contract.js';
import { transportByName, transports } from '../services/transports/index.js';

// `npm start`: the whole suite on this machine. Starts the receiver and the transmitter as two
// processes (as docker compose does), plus, for every transport in the run that goes through a
// server of its own (Redis) whose URL is not given, a private one from PATH; exits with the
// transmitter's code once the receiver has shut down. Both services get a fresh AUTH_TOKEN for
// this run alone, unless one is set.

// The services' own checks, here too, so bad input stops everything before any process starts.
const config = configFromEnvOrExit(transports, (env) => [...imagePathIssues(env), ...outputDirIssues(env)]);
const log = createLogger('start', effectiveLogLevel(config));
const env: NodeJS.ProcessEnv = { ...process.env };
if (!env.AUTH_TOKEN?.trim()) env.AUTH_TOKEN = newAuthToken();
const servers: LocalServer[] = [];
const children = new Set<ChildProcess>();

function startService(name: 'receiver' | 'transmitter'): ChildProcess {
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, projectPath('dist', 'services', name, 'main.js')], { env, stdio: 'inherit' });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function cleanUp(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child, 5000)));
  await Promise.all(servers.map((server) => server.close()));
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    log.warn({ signal }, 'interrupted; stopping the services');
    void cleanUp().finally(() => process.exit(ExitCode.failed));
  });
}

for (const name of config.transports) {
  const { setting, localServer } = transportByName(name);
  // Transports that share a URL setting (the Redis ones) share the one server started for it.
  if (setting.kind !== 'url' || localServer === undefined || config.urls[name] !== undefined || env[setting.envVar] !== process.env[setting.envVar]) continue;
  try {
    const server = await localServer.start();
    servers.push(server);
    env[setting.envVar] = server.url;
    log.info({ transport: name, url: server.url }, `private ${localServer.command} started for this run`);
  } catch (err) {
    log.warn({ transport: name, err: errorMessage(err) }, `no private ${localServer.command}: the ${name} section will be reported as failed`);
    process.stderr.write(`npm start: ${setting.envVar} is not set and no ${localServer.command} could be started (${errorMessage(err)}); the ${name} section will fail, the others run.\n`);
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
