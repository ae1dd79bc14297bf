import { execFile, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { once } from 'node:events';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { errorMessage } from '../services/core/errors.js';
import { newAuthToken } from '../services/shared/auth-token.js';
import { stopChild } from '../services/shared/child-process.js';
import type { ConfigIssue } from '../services/core/config/config.js';
import {
  configFromEnvOrExit,
  effectiveLogLevel,
  ExitCode,
  imagePathIssues,
  makeOutputDirOrExit,
  outputDirIssues,
} from '../services/shared/entry.js';
import { createLogger } from '../services/shared/logger.js';
import { printChildLines, relayingPrinter } from '../services/shared/terminal-relay.js';
import { bracketHost } from '../services/shared/net.js';
import { SERVICE_NODE_FLAGS } from '../services/shared/node-flags.js';
import { projectPath } from '../services/shared/paths.js';
import { runFolders } from '../services/shared/run-folders.js';
import { OUTPUT_FILES, type RunCompletionAnswer } from '../services/core/report/run-files.js';
import { isLoopbackHost, isShaped } from '../services/core/config/link.js';
import { redactUrl } from '../services/core/config/redact.js';
import type { LocalServer } from '../services/transports/contract.js';
import { transportByName, transports } from '../services/transports/index.js';
import { freePortsEnv } from './lib/ports.js';
import { openShapedLink, ShapingRefused, type ShapedLink } from './lib/shaped-link.js';

// `npm start`: the whole suite on this machine. Starts the receiver and the transmitter as two processes (as docker
// compose does), plus, for every transport in the run that goes through a server of its own (Redis) whose URL is not
// given, a private one from PATH; exits with the transmitter's code once the receiver has shut down. Both services get
// a fresh AUTH_TOKEN for this run alone, unless one is set. With RECEIVERS=n it starts n receivers. With NETWORK_RATE,
// NETWORK_DELAY or NETWORK_LOSS the transmitter runs in a network namespace of its own behind a shaped link
// (./lib/shaped-link.ts).

// The services' own checks, here too, so bad input stops everything before any process starts
// (and before anything is created: OUTPUT_DIR is made only once the configuration is accepted).
const config = configFromEnvOrExit(
  transports,
  (env) => [...imagePathIssues(env), ...outputDirIssues(env), ...shapedUrlIssues(env)],
  { shapesLink: true },
);
// On a terminal the transmitter draws the progress bars: every other line (the receivers', this
// script's own log) goes to the terminal through it while it runs (../services/shared/terminal-relay.ts).
const onTerminal = Boolean(process.stderr.isTTY);
let relayTarget: ChildProcess | undefined;
const print = relayingPrinter(() => relayTarget);
const childLines: Promise<void>[] = [];
const log = createLogger('start', effectiveLogLevel(config), { print });
const env: NodeJS.ProcessEnv = { ...process.env };
if (!env.AUTH_TOKEN?.trim()) env.AUTH_TOKEN = newAuthToken();
const servers: LocalServer[] = [];
const children = new Set<ChildProcess>();

// A broker URL on loopback cannot be reached from the transmitter's namespace: refused with the
// other bad variables, before anything starts.
function shapedUrlIssues(processEnv: NodeJS.ProcessEnv): ConfigIssue[] {
  const shaped = ['NETWORK_RATE', 'NETWORK_DELAY', 'NETWORK_LOSS'].some((name) => processEnv[name]?.trim());
  if (!shaped) return [];
  return [
    ...new Set(transports.flatMap((t) => (t.deployment.setting.kind === 'url' ? [t.deployment.setting.envVar] : []))),
  ].flatMap((envVar) => {
    const raw = processEnv[envVar]?.trim();
    if (!raw || !URL.canParse(raw) || !isLoopbackHost(new URL(raw).hostname.replace(/^\[|\]$/g, ''))) return [];
    return [
      {
        variable: envVar,
        value: redactUrl(raw),
        allowed:
          'unset, or an address the transmitter can reach from its own network namespace when NETWORK_* shape ' +
          'the link: unset, a private server starts behind the shaped link',
      },
    ];
  });
}

/**
 * Free ports for another receiver: CONTROL_PORT and every transport's, none of them one the first receiver is
 * configured with.
 */
async function portsBesides(first: typeof config): Promise<Record<string, string>> {
  const taken = new Set([first.controlPort, ...Object.values(first.ports).flatMap((port) => [port, port + 1])]);
  for (;;) {
    const ports = await freePortsEnv();
    if (Object.values(ports).every((port) => !taken.has(Number(port)))) return ports;
  }
}

// Shaping first: when this machine cannot apply it, nothing has started yet (exit 2).
let link: ShapedLink | undefined;
if (isShaped(config.network)) {
  try {
    link = await openShapedLink(config.network);
  } catch (err) {
    if (!(err instanceof ShapingRefused)) throw err;
    process.stderr.write(`npm start: ${err.message}\n`);
    process.exit(ExitCode.config);
  }
  env.ITB_LINK = link.description;
  log.info(
    { namespace: link.namespace, receiverAddress: link.receiverAddress, transmitterAddress: link.transmitterAddress },
    `shaped link: ${link.description}`,
  );
}
// After the shaping, which may still refuse the run (exit 2, nothing made); before any process.
await makeOutputDirOrExit(config, async () => link?.close());
// The run folders each receiver's OUTPUT_DIR held before: a folder not among them at the end is this run's.
const foldersBefore = new Set(
  (await Promise.all(Array.from({ length: config.receivers }, (_, index) => runFolders(receiverBase(index))))).flat(),
);

function startService(name: 'receiver' | 'transmitter', ownEnv: NodeJS.ProcessEnv = {}): ChildProcess {
  const main = [...SERVICE_NODE_FLAGS, projectPath('dist', 'services', name, 'main.js')];
  // Behind a shaped link the receiver binds its end of the veth, and the transmitter runs in its
  // namespace, binding its own end (websocket-push's server) and dialling the receiver's.
  const childEnv: NodeJS.ProcessEnv = {
    ...env,
    // The receivers stop when the transmitter has ended: this script says where the files are once they have.
    ...(name === 'transmitter' ? { ITB_NPM_START: '1' } : {}),
    ...ownEnv,
    ...(link === undefined
      ? {}
      : name === 'receiver'
        ? { BIND_HOST: link.receiverAddress }
        : { BIND_HOST: link.transmitterAddress, RECEIVER_HOST: link.receiverAddress }),
  };
  // On a terminal the receiver's stderr is a pipe read here, so it logs at the level it would pick
  // on the terminal itself, and the transmitter gets an IPC channel for the lines relayed to it.
  if (onTerminal && name === 'receiver' && !childEnv.LOG_LEVEL?.trim()) childEnv.LOG_LEVEL = effectiveLogLevel(config);
  const stdio: StdioOptions = !onTerminal
    ? 'inherit'
    : name === 'receiver'
      ? ['inherit', 'inherit', 'pipe']
      : ['inherit', 'inherit', 'inherit', 'ipc'];
  const child =
    link !== undefined && name === 'transmitter'
      ? spawn('ip', ['netns', 'exec', link.namespace, process.execPath, ...main], { env: childEnv, stdio })
      : spawn(process.execPath, main, { env: childEnv, stdio });
  if (onTerminal && name === 'receiver') childLines.push(printChildLines(child, print));
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function cleanUp(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child, 5000)));
  // The receivers' last lines (their shutdown) are printed before this script exits; bounded, in
  // case something else still holds a pipe open.
  await Promise.race([Promise.all(childLines), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
  await Promise.all(servers.map((server) => server.close()));
  await link?.close();
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    log.warn({ signal }, 'interrupted; stopping the services');
    void cleanUp().finally(() => process.exit(ExitCode.failed));
  });
}

for (const name of config.transports) {
  const { setting, localServer } = transportByName(name).deployment;
  // Transports that share a URL setting (the Redis ones) share the one server started for it.
  if (
    setting.kind !== 'url' ||
    localServer === undefined ||
    config.urls[name] !== undefined ||
    env[setting.envVar] !== process.env[setting.envVar]
  )
    continue;
  try {
    const server = await localServer.start(link?.receiverAddress);
    servers.push(server);
    env[setting.envVar] = server.url;
    log.info({ transport: name, url: server.url }, `private ${localServer.command} started for this run`);
  } catch (err) {
    log.warn(
      { transport: name, err: errorMessage(err) },
      `no private ${localServer.command}: the ${name} section will be reported as failed`,
    );
    process.stderr.write(
      `npm start: ${setting.envVar} is not set and no ${localServer.command} could be started ` +
        `(${errorMessage(err)}); the ${name} section will fail, the others run.\n`,
    );
  }
}

// RECEIVERS > 1: the first receiver as configured, each other one on free ports of its own (its
// files under OUTPUT_DIR/receiver-<k>); the transmitter gets every control address.
const receiverEnvs: NodeJS.ProcessEnv[] = [{}];
for (let index = 1; index < config.receivers; index++) receiverEnvs.push(await portsBesides(config));
const receiverHost = link?.receiverAddress ?? config.receiverHost;
const receivers = receiverEnvs.map((ownEnv) => startService('receiver', ownEnv));
const transmitterEnv: NodeJS.ProcessEnv =
  config.receivers === 1
    ? {}
    : {
        ITB_RECEIVERS: receiverEnvs
          .map((own) => `${bracketHost(receiverHost)}:${own.CONTROL_PORT ?? config.controlPort}`)
          .join(','),
      };
const transmitter = startService('transmitter', transmitterEnv);
relayTarget = transmitter;
// A receiver that dies takes the run with it: stop the transmitter rather than let it wait.
for (const receiver of receivers) {
  receiver.on('exit', () => {
    if (transmitter.exitCode === null) void stopChild(transmitter, 5000);
  });
}
const [transmitterCode] = (await once(transmitter, 'exit')) as [number | null];
// A receiver killed by a signal (the OOM killer's SIGKILL) has no exit code, only the signal.
const died = receivers.find((receiver) => receiver.exitCode !== null || receiver.signalCode !== null);
await cleanUp();
if (died !== undefined) {
  const index = receivers.indexOf(died);
  const which = receivers.length > 1 ? `receiver ${index + 1}` : 'the receiver';
  process.stderr.write(`npm start: ${which} ${receiverEnd(died)}; see its log above.\n`);
  await completeRunOf(index, `${which} ${receiverEnd(died)}`);
}
await sayWhereFilesAre();
// A receiver that died fails the run even when the transmitter, stopped, exited 0.
process.exit(died === undefined && transmitterCode !== null ? transmitterCode : transmitterCode || ExitCode.failed);

/**
 * What a dead receiver's run wrote stays: its newest run folder, if unfinished, is completed
 * (finished sections as they were, the open one from its per-image file, marked incomplete) and
 * becomes OUTPUT_DIR's latest.
 */
async function completeRunOf(index: number, reason: string): Promise<void> {
  const base = receiverBase(index);
  const newest = (await runFolders(base)).at(-1);
  if (newest === undefined) return;
  try {
    const { sections } = await completeRunInReceiverProcess(base, newest, reason);
    if (sections !== null)
      process.stderr.write(
        `npm start: kept what the run wrote: ${sections} section(s) in ` +
          (path.relative(process.cwd(), newest) || newest) +
          ` (the open one marked incomplete), now OUTPUT_DIR's latest.\n`,
      );
  } catch (err) {
    process.stderr.write(`npm start: could not complete the run in ${newest}: ${errorMessage(err)}\n`);
  }
}

/**
 * Completes run folder `dir` in `base` through the receiver's own code, run as a process (scripts never import the
 * receiver): services/receiver/complete-run.ts. Rejects with the reason it gave on stderr.
 */
async function completeRunInReceiverProcess(base: string, dir: string, reason: string): Promise<RunCompletionAnswer> {
  const entry = projectPath('dist', 'services', 'receiver', 'complete-run.js');
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [entry, base, dir, reason], { encoding: 'utf8' });
    return JSON.parse(stdout) as RunCompletionAnswer;
  } catch (err) {
    const { stderr } = err as { stderr?: unknown };
    throw typeof stderr === 'string' && stderr.trim() !== '' ? new Error(stderr.trim()) : err;
  }
}

/** The OUTPUT_DIR of receiver `index` (from 0): OUTPUT_DIR for the first, OUTPUT_DIR/receiver-<k> for the k-th. */
function receiverBase(index: number): string {
  return path.resolve(index === 0 ? config.outputDir : path.join(config.outputDir, `receiver-${index + 1}`));
}

/** A path as printed: from the working directory when it is under it, else whole. */
function shownPath(dir: string): string {
  const relative = path.relative(process.cwd(), dir);
  return relative === '' || relative.startsWith('..') ? dir : relative;
}

/**
 * The last line: where this run's files are, now that the receivers that served them have stopped, and how to look at
 * them again; nothing when no receiver wrote this run's report (its files could not be written, or it never started).
 */
async function sayWhereFilesAre(): Promise<void> {
  const written = await Promise.all(
    receivers.map(async (_, index) => {
      const newest = (await runFolders(receiverBase(index))).at(-1);
      if (newest === undefined || foldersBefore.has(newest)) return undefined;
      const reported = await access(path.join(newest, OUTPUT_FILES.report)).then(
        () => true,
        () => false,
      );
      return reported ? { index, folder: newest } : undefined;
    }),
  );
  const runs = written.filter((run) => run !== undefined);
  const first = runs[0];
  if (first === undefined) return;
  const outputDir = shownPath(receiverBase(first.index));
  const folders = runs
    .map((run) => (run.index === 0 ? '' : `receiver ${run.index + 1}'s: `) + shownPath(run.folder))
    .join('; ');
  process.stdout.write(
    `Files: ${OUTPUT_FILES.log}, ${OUTPUT_FILES.results} and ${OUTPUT_FILES.report} in ${outputDir} ` +
      `(this run's folder: ${folders}). npm start has stopped its receiver, so no control port serves them now: ` +
      `open ${path.join(outputDir, OUTPUT_FILES.report)} in a browser (it needs no server), or start a receiver on ` +
      `that OUTPUT_DIR to serve every kept run at /runs (docs/running.md#starting-the-services-by-hand).\n`,
  );
}

/** How a receiver ended before its time: "was killed by SIGKILL", or "exited early (code 1)". */
function receiverEnd(child: ChildProcess): string {
  return child.signalCode !== null ? `was killed by ${child.signalCode}` : `exited early (code ${child.exitCode})`;
}
