import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunReport } from '../services/core/report/report.js';
import { REPORT_DATA_ELEMENT } from '../services/core/report/html-report.js';
import { freePort } from '../services/shared/net.js';
import { fetchWithin } from '../services/shared/waits.js';
import { projectRoot } from '../services/shared/paths.js';
import { defaultTransports, transports } from '../services/transports/index.js';
import { expectAllOk, fail, parseReport } from './lib/run-checks.js';

// `node dist/scripts/compose-check.js`: docker compose for real, as a new user runs it, on a fresh clone of this
// repository's HEAD (no ./output, no .env): the whole suite must end with exit 0, every default transport ok and a
// schema-valid results.json; `up -d` with TRANSPORTS=all must serve the report at GET / on the published control port,
// every transport ok (NATS through its compose service, websocket-push dialling the transmitter's container back); a
// run with one transport made to fail must exit 1 with the reason in output.log; a ./output owned by another host user
// must stay theirs; docker-compose.shaped.yml must shape the link to NETWORK_RATE; and `--scale receiver=2` with
// RECEIVERS=2 must send every image to both receivers. `docker-compose down -v` after each. Needs a Docker engine and
// the base images (on a machine without Docker Hub: scripts/docker/stand-in-images.sh) and root (it hands ./output to
// another uid). .ci/run runs it; `npm test` does not.

const DEFAULT_TRANSPORTS = defaultTransports.map((t) => t.name);
const ALL_TRANSPORTS = transports.map((t) => t.name);
const RUN_TIMEOUT_MS = 15 * 60_000;
const REPORT_TIMEOUT_MS = 3 * 60_000;
/** A host user other than root and the image's node user (1000): ./output made by them must stay theirs. */
const OTHER_HOST_UID = 4321;

const compose: string[] =
  spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0
    ? ['docker-compose']
    : ['docker', 'compose'];

/** Runs compose with `args` in `dir`, its output passed through; resolves with the exit code. */
function runCompose(
  dir: string,
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = RUN_TIMEOUT_MS,
): Promise<number> {
  const [command, ...prefix] = compose;
  process.stdout.write(`compose-check: ${compose.join(' ')} ${args.join(' ')}\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(command!, [...prefix, ...args], {
      cwd: dir,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${compose.join(' ')} ${args.join(' ')} took more than ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code ?? 1);
    });
  });
}

function readReport(dir: string): { report: RunReport; log: string } {
  const output = path.join(dir, 'output');
  return {
    report: parseReport(readFileSync(path.join(output, 'results.json'), 'utf8')),
    log: readFileSync(path.join(output, 'output.log'), 'utf8'),
  };
}

/** Every output file belongs to `uid` and can be read by anyone (the host user who ran compose). */
function expectOwnedAndReadable(dir: string, uid: number): void {
  for (const file of ['output.log', 'results.json', 'report.html']) {
    const info = statSync(path.join(dir, 'output', file));
    if (info.uid !== uid) fail(`output/${file} belongs to uid ${info.uid}, expected ${uid}`);
    if ((info.mode & 0o444) !== 0o444)
      fail(`output/${file} has mode ${(info.mode & 0o777).toString(8)}: not readable by every user`);
  }
}

async function scenario(
  name: string,
  body: (dir: string, env: Record<string, string>) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'itb-compose-'));
  // A fresh clone of HEAD, under a project name of its own: nothing of this checkout's leaks in.
  const clone = spawnSync('git', ['clone', '-q', projectRoot(), dir], { stdio: 'inherit' });
  if (clone.status !== 0) fail(`git clone of ${projectRoot()} failed`);
  // Two free ports in a row: the published range, one per receiver when a scenario scales it to two.
  const controlPort = await freePort(2);
  const env = {
    COMPOSE_PROJECT_NAME: `itbcheck${process.pid}`,
    CONTROL_PORT: String(controlPort),
    CONTROL_PORTS: `${controlPort}-${controlPort + 1}`,
  };
  process.stdout.write(`\ncompose-check: ${name}\n`);
  try {
    await body(dir, env);
    process.stdout.write(`compose-check: ${name}: ok\n`);
  } finally {
    await runCompose(dir, ['down', '-v', '--remove-orphans'], env).catch(() => 1);
    // Files the containers wrote may belong to other users: root (this script) removes them.
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `up --build` on a fresh clone: exit 0, every default transport ok, the files the node user's. */
async function checkFreshClone(dir: string, env: Record<string, string>): Promise<void> {
  const code = await runCompose(dir, ['up', '--build', '--exit-code-from', 'transmitter'], env);
  if (code !== 0) fail(`exit code ${code}, expected 0`);
  const { report, log } = readReport(dir);
  expectAllOk(report, log, DEFAULT_TRANSPORTS);
  // Docker made ./output (root's): the receiver ran as the image's node user and wrote as it.
  expectOwnedAndReadable(dir, 1000);
}

/** `up -d` with TRANSPORTS=all: the report at GET / on the published control port, every transport ok. */
async function checkPublishedReport(dir: string, env: Record<string, string>): Promise<void> {
  const code = await runCompose(dir, ['up', '-d', '--build'], { ...env, TRANSPORTS: 'all' });
  if (code !== 0) fail(`up -d: exit code ${code}`);
  const url = `http://127.0.0.1:${env.CONTROL_PORT}/`;
  const deadline = Date.now() + REPORT_TIMEOUT_MS;
  let page = '';
  // The live page while the run goes on (its title starts as the report's does), then the report.
  while (Date.now() < deadline && !page.includes(REPORT_DATA_ELEMENT)) {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    page = await fetchWithin(url, 5000, (response) => response.text()).catch(() => '');
  }
  if (!page.includes(REPORT_DATA_ELEMENT)) fail(`GET ${url} did not serve the report within ${REPORT_TIMEOUT_MS} ms`);
  if (!page.includes('Summary')) fail(`GET ${url} served a page without the summary`);
  // output.log is the last file the receiver writes at the end of a run.
  const logFile = path.join(dir, 'output', 'output.log');
  for (const until = Date.now() + 30_000; !existsSync(logFile) && Date.now() < until; )
    await new Promise((resolve) => setTimeout(resolve, 500));
  const { report, log } = readReport(dir);
  expectAllOk(report, log, ALL_TRANSPORTS);
}

/** The shaped override at NETWORK_RATE=200mbit: the link said in output.log, TCP's MB/s within the rate. */
async function checkShapedLink(dir: string, env: Record<string, string>): Promise<void> {
  const code = await runCompose(
    dir,
    ['-f', 'docker-compose.yml', '-f', 'docker-compose.shaped.yml', 'up', '--build', '--exit-code-from', 'transmitter'],
    {
      ...env,
      TRANSPORTS: 'tcp,redis',
      NETWORK_RATE: '200mbit',
      IMAGE_COUNT: '100',
      WINDOW: '8',
    },
  );
  if (code !== 0) fail(`exit code ${code}, expected 0`);
  const { report, log } = readReport(dir);
  expectAllOk(report, log, ['tcp', 'redis']);
  if (
    !new RegExp(
      /^Link: the compose network, each service's eth0 \(MTU \d+\) shaped on egress by tc in its /.source +
        /container: tbf rate 200mbit \(NETWORK_RATE=200mbit\)$/.source,
      'm',
    ).test(log)
  )
    fail('output.log does not say the shaped link');
  // 200 mbit/s is 25 MB/s of frames: above it the link was not shaped; far below, shaping is broken.
  const tcp = report.sections.find((s) => s.transport === 'tcp')?.throughputMBps ?? 0;
  if (!(tcp >= 0.5 * 25 && tcp <= 1.05 * 25)) fail(`TCP made ${tcp} MB/s over a 200mbit link, expected 12.5 to 26.25`);
  process.stdout.write(
    `compose-check: TCP over the shaped link: ${tcp.toFixed(1)} MB/s (${((100 * tcp) / 25).toFixed(0)} % of ` +
      `25 MB/s)\n`,
  );
}

/** RECEIVERS=2 with `--scale receiver=2`: every image at both receivers, both records written. */
async function checkTwoReceivers(dir: string, env: Record<string, string>): Promise<void> {
  const code = await runCompose(dir, ['up', '--build', '--scale', 'receiver=2', '--exit-code-from', 'transmitter'], {
    ...env,
    RECEIVERS: '2',
    TRANSPORTS: 'tcp,redis-pubsub',
  });
  if (code !== 0) fail(`exit code ${code}, expected 0`);
  const { report, log } = readReport(dir);
  expectAllOk(report, log, ['tcp', 'redis-pubsub']);
  for (const section of report.sections) {
    const per = section.fanOut?.perReceiver.map((r) => `${r.receiver}:${r.okCount}`).join(',');
    if (per !== `0:${section.imageCount},1:${section.imageCount}`)
      fail(`${section.transport}: per receiver ${per}, expected every image at both`);
  }
  if (!existsSync(path.join(dir, 'output', 'receiver-2', 'output.log')))
    fail('the second receiver wrote no output/receiver-2/output.log');
}

/** One transport made to fail in a ./output another host user owns: exit 1, the reason in output.log, files theirs. */
async function checkFailureKeepsOwner(dir: string, env: Record<string, string>): Promise<void> {
  // As a host user other than node (uid 1000) would have it: their own ./output, mode 0755.
  mkdirSync(path.join(dir, 'output'));
  chownSync(path.join(dir, 'output'), OTHER_HOST_UID, OTHER_HOST_UID);
  // The transmitter's Redis points nowhere: its section fails, the TCP section still runs.
  writeFileSync(
    path.join(dir, 'compose-check.override.yml'),
    'services:\n  transmitter:\n    environment:\n      REDIS_URL: redis://no-such-redis:6379\n',
  );
  const code = await runCompose(
    dir,
    [
      '-f',
      'docker-compose.yml',
      '-f',
      'compose-check.override.yml',
      'up',
      '--build',
      '--exit-code-from',
      'transmitter',
    ],
    {
      ...env,
      TRANSPORTS: 'tcp,redis',
      CONNECT_TIMEOUT_MS: '5000',
    },
  );
  if (code !== 1) fail(`exit code ${code}, expected 1`);
  const { report, log } = readReport(dir);
  const redis = report.transports.find((t) => t.transport === 'redis');
  const tcp = report.transports.find((t) => t.transport === 'tcp');
  if (redis?.ok !== false || !redis.failure)
    fail(`the redis section did not fail with a reason: ${JSON.stringify(redis)}`);
  if (tcp?.ok !== true) fail(`the tcp section did not pass: ${JSON.stringify(tcp)}`);
  if (!log.includes(`FAILED: ${redis.failure}`))
    fail(`output.log does not give the redis section's reason (${redis.failure})`);
  expectOwnedAndReadable(dir, OTHER_HOST_UID);
}

/** Every scenario in turn, each on a fresh clone; the first failure stops the check. */
async function main(): Promise<void> {
  await scenario(
    'up --build on a fresh clone: exit 0, every default transport ok, schema-valid results.json',
    checkFreshClone,
  );

  await scenario(
    'up -d with TRANSPORTS=all: the published control port serves the report at GET /, every transport ok',
    checkPublishedReport,
  );

  await scenario(
    'docker-compose.shaped.yml with NETWORK_RATE=200mbit: tc in each container, output.log says the link, TCP ' +
      'within the rate',
    checkShapedLink,
  );

  await scenario(
    'RECEIVERS=2 with --scale receiver=2: the transmitter finds both, every image to each, both records written',
    checkTwoReceivers,
  );

  await scenario(
    'one transport made to fail, ./output made by another host user: exit 1, the reason in output.log, files ' +
      'stay theirs',
    checkFailureKeepsOwner,
  );
}

try {
  await main();
  process.stdout.write('\ncompose-check: every scenario passed\n');
} catch (err) {
  process.stderr.write(`\ncompose-check: FAILED: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
