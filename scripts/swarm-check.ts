import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPORT_DATA_ELEMENT } from '../services/core/report/html-report.js';
import { freePort } from '../services/shared/net.js';
import { projectRoot } from '../services/shared/paths.js';
import { fetchWithin } from '../services/shared/waits.js';
import { defaultTransports } from '../services/transports/index.js';
import { expectAllOk, fail, parseReport, throughputLine } from './lib/run-checks.js';

// `node dist/scripts/swarm-check.js`: deploy/swarm/stack.yml for real, as docs/clusters.md "Docker
// Swarm" has a user do it, on a single-node swarm (the node labelled itb.role=receiver and the
// transmitter let onto it with TRANSMITTER_NODE_ROLE=receiver), from a fresh clone of HEAD:
// `docker stack deploy`, the transmitter job must complete once (no restart), every default
// transport ok in output.log (served at GET /output.log on the published control port), a
// schema-valid results.json and the report at GET /. Then the stack, its volume, the secret and
// the image are removed, the label too, and the swarm is left when this script made it. Needs a
// Docker engine with the stand-in base images (scripts/docker/stand-in-images.sh) and root.
// .ci/run runs it after compose-check; `npm test` does not.

const DEFAULT_TRANSPORTS = defaultTransports.map((t) => t.name);
const STACK = `itbswarm${process.pid}`;
const IMAGE = `image-transfer-bench:swarm-check-${process.pid}`;
const SECRET = 'itb_auth_token';
const JOB_TIMEOUT_MS = 10 * 60_000;
const REMOVE_TIMEOUT_MS = 60_000;
const POLL_MS = 2000;

/** Runs docker with `args`; its output is returned (and printed when `echo`); a non-zero exit fails with its stderr. */
function docker(
  args: readonly string[],
  options: { input?: string; cwd?: string; env?: Record<string, string>; echo?: boolean } = {},
): string {
  if (options.echo) process.stdout.write(`swarm-check: docker ${args.join(' ')}\n`);
  const result = spawnSync('docker', args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    input: options.input,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0)
    fail(
      `docker ${args.join(' ')} exited ${result.status}: ` +
        (result.stderr || result.stdout || String(result.error)).trim(),
    );
  return result.stdout;
}

/** Like docker(), but a failure is only reported: for the clean-up, which must go on. */
function tryDocker(args: readonly string[]): boolean {
  return spawnSync('docker', args, { stdio: 'ignore' }).status === 0;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `docker build` streamed through, bounded in time. */
function build(dir: string): Promise<void> {
  process.stdout.write(`swarm-check: docker build -t ${IMAGE} (fresh clone)\n`);
  return new Promise((resolve, reject) => {
    const child = spawn('docker', ['build', '-q', '-t', IMAGE, '.'], {
      cwd: dir,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), JOB_TIMEOUT_MS);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`docker build exited ${code}`));
    });
  });
}

/** The transmitter job's tasks: their states (Complete, Failed, Running, …) and errors. */
function transmitterTasks(): { state: string; error: string }[] {
  return docker(['service', 'ps', `${STACK}_transmitter`, '--no-trunc', '--format', '{{.CurrentState}}\t{{.Error}}'])
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [state = '', error = ''] = line.split('\t');
      return { state, error };
    });
}

async function waitForJob(): Promise<void> {
  const deadline = Date.now() + JOB_TIMEOUT_MS;
  for (;;) {
    const tasks = transmitterTasks();
    const finished = tasks.find((t) => /^(Complete|Failed|Rejected|Shutdown)/.test(t.state));
    if (finished !== undefined) {
      if (tasks.length !== 1)
        fail(
          `the transmitter job ran ${tasks.length} tasks, expected one (no ` +
            `restart): ${tasks.map((t) => t.state).join('; ')}`,
        );
      if (!finished.state.startsWith('Complete')) {
        const logs = spawnSync('docker', ['service', 'logs', '--raw', `${STACK}_transmitter`], { encoding: 'utf8' });
        fail(
          `the transmitter job ended ${finished.state} ${finished.error}\n` +
            (logs.stdout + logs.stderr).split('\n').slice(-40).join('\n'),
        );
      }
      return;
    }
    if (Date.now() > deadline)
      fail(
        `the transmitter job did not finish within ${JOB_TIMEOUT_MS} ms: ` +
          (tasks.map((t) => t.state).join('; ') || 'no task'),
      );
    await sleep(POLL_MS);
  }
}

/** GET `route` on the receiver's published control port: its body, or a failure with the status. */
async function fetchText(port: number, route: string): Promise<string> {
  return fetchWithin(`http://127.0.0.1:${port}${route}`, 10_000, (response) => {
    if (!response.ok) fail(`GET ${route}: HTTP ${response.status}`);
    return response.text();
  });
}

async function removeStack(): Promise<void> {
  tryDocker(['stack', 'rm', STACK]);
  // The volume can go only once the receiver's container is gone.
  const deadline = Date.now() + REMOVE_TIMEOUT_MS;
  while (!tryDocker(['volume', 'rm', `${STACK}_results`]) && Date.now() < deadline) {
    if (!tryDocker(['volume', 'inspect', `${STACK}_results`])) break;
    await sleep(1000);
  }
  // The overlay network goes last; the next stack must not find it half removed.
  while (tryDocker(['network', 'inspect', `${STACK}_bench`]) && Date.now() < deadline) await sleep(1000);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'itb-swarm-'));
  const madeSwarm = docker(['info', '--format', '{{.Swarm.LocalNodeState}}']).trim() !== 'active';
  let nodeId = '';
  let madeSecret = false;
  let labelBefore: string | undefined;
  try {
    if (spawnSync('git', ['clone', '-q', projectRoot(), dir], { stdio: 'inherit' }).status !== 0)
      fail(`git clone of ${projectRoot()} failed`);
    // The stack file is checked by the Docker CLI's own schema before anything runs.
    docker(['stack', 'config', '-c', 'deploy/swarm/stack.yml'], { cwd: dir });
    await build(dir);
    if (madeSwarm) docker(['swarm', 'init', '--advertise-addr', '127.0.0.1'], { echo: true });
    nodeId = docker(['info', '--format', '{{.Swarm.NodeID}}']).trim();
    labelBefore =
      docker(['node', 'inspect', nodeId, '--format', '{{index .Spec.Labels "itb.role"}}']).trim() || undefined;
    docker(['node', 'update', '--label-add', 'itb.role=receiver', nodeId], { echo: true });
    if (!tryDocker(['secret', 'inspect', SECRET])) {
      docker(['secret', 'create', SECRET, '-'], { input: randomBytes(32).toString('base64'), echo: true });
      madeSecret = true;
    }
    const controlPort = await freePort();
    docker(['stack', 'deploy', '-c', 'deploy/swarm/stack.yml', STACK], {
      cwd: dir,
      env: { ITB_IMAGE: IMAGE, TRANSMITTER_NODE_ROLE: 'receiver', CONTROL_PORT: String(controlPort) },
      echo: true,
    });
    await waitForJob();
    const log = await fetchText(controlPort, '/output.log');
    const report = parseReport(await fetchText(controlPort, '/results.json'));
    expectAllOk(report, log, DEFAULT_TRANSPORTS);
    if (!(await fetchText(controlPort, '/')).includes(REPORT_DATA_ELEMENT)) fail('GET / did not serve the report');
    process.stdout.write(`swarm-check: every default transport ok on the swarm: ${throughputLine(report)}\n`);
  } finally {
    await removeStack();
    if (madeSecret) tryDocker(['secret', 'rm', SECRET]);
    if (nodeId !== '')
      tryDocker(
        labelBefore === undefined
          ? ['node', 'update', '--label-rm', 'itb.role', nodeId]
          : ['node', 'update', '--label-add', `itb.role=${labelBefore}`, nodeId],
      );
    if (madeSwarm) tryDocker(['swarm', 'leave', '--force']);
    // -f: the tag goes even while the stack's last containers are still being removed.
    tryDocker(['image', 'rm', '-f', IMAGE]);
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  await main();
  process.stdout.write('swarm-check: passed\n');
} catch (err) {
  process.stderr.write(`\nswarm-check: FAILED: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
