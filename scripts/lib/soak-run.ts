import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { LATEST_LINK } from '../../services/core/report/run-files.js';
import os from 'node:os';
import path from 'node:path';
import type { HealthResponse, ProgressResponse } from '../../services/core/control/control-protocol.js';
import { brokerVariables } from '../../services/core/config/config.js';
import type { HostFacts } from '../../services/core/report/report.js';
import { newAuthToken } from '../../services/shared/auth-token.js';
import { stopChild } from '../../services/shared/child-process.js';
import { SERVICE_NODE_FLAGS } from '../../services/shared/node-flags.js';
import { projectPath } from '../../services/shared/paths.js';
import { fetchWithin, sleep } from '../../services/shared/waits.js';
import { transports } from '../../services/transports/index.js';
import type { SweepChart } from './sweep-page.js';
import { freePortsEnv } from './ports.js';
import {
  soakCharts,
  soakEnv,
  soakLines,
  soakPlan,
  soakVerdict,
  vmRssBytes,
  SOAK_REQUIRED_FILES,
  type SoakFile,
  type SoakOptions,
  type SoakPlan,
  type SoakSample,
  type SoakVerdict,
} from './soak.js';

// The soak's processes: the receiver and the transmitter started as `npm start` starts them (two
// node processes, so both pids are ours to read), a fresh AUTH_TOKEN, free ports, OUTPUT_DIR in a
// fresh temporary folder; every --sample-ms both RSS from /proc and the receiver's count of
// recorded images, until the transmitter has exited and the receiver has written its files; then
// the files, the verdict (./soak.ts) and the folder removed (a 20-million-image results.json is
// gigabytes).

/** Bound on the receiver's start (listeners and control port up). */
const RECEIVER_START_MS = 30_000;
/** Time the receiver has to stop once the transmitter has exited (it writes nothing then: no run is open). */
const STOP_GRACE_MS = 10_000;
/**
 * The soak gives up when the transmitter is still running and the receiver's count has not moved
 * for this long: longer than any section's end or report the receiver builds, so only a hang hits it.
 */
const STALL_MS = 30 * 60_000;
/** Enough of a process's output to say why a run failed. */
const TAIL_CHARS = 4000;

/** Everything the soak measured: the record for results.json, its lines, its charts. */
export interface SoakResult {
  lines: string[];
  charts: SweepChart[];
  host: HostFacts | undefined;
  verdict: SoakVerdict;
  record: {
    options: SoakOptions;
    plan: SoakPlan;
    env: Record<string, string>;
    pids: { transmitter: number; receiver: number };
    seconds: number;
    samples: SoakSample[];
    verdict: SoakVerdict;
    /** Why the soak stopped the transmitter itself, when it did. */
    stopped: string | null;
    transmitterStdoutTail: string;
    transmitterStderrTail: string;
    receiverStderrTail: string;
  };
}

/** Runs the soak `options` asks for and judges it; rejects only when a process cannot be started. */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const plan = soakPlan(options.images);
  const outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-soak-'));
  // Broker URLs and passwords stay out, as in the bench's other runs; TCP needs none.
  const brokers = new Set(brokerVariables(transports));
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !brokers.has(key)));
  const ports = await freePortsEnv();
  const env = { LOG_LEVEL: 'warn', ...ports, ...soakEnv(plan) };
  const childEnv = { ...inherited, ...env, OUTPUT_DIR: outputDir, AUTH_TOKEN: newAuthToken() };
  const controlUrl = `http://127.0.0.1:${ports.CONTROL_PORT}`;
  process.stderr.write(
    `bench: soak, ` +
      plan.totalImages.toLocaleString('en-US') +
      ` images (IMAGE_COUNT=${plan.imageCount} REPEAT=${plan.repeat}) ...\n`,
  );
  const receiver = startService('receiver', childEnv);
  let transmitter: Service | undefined;
  try {
    const health = await receiverReady(controlUrl, receiver);
    const startedAt = Date.now();
    transmitter = startService('transmitter', childEnv);
    const pids = { transmitter: transmitter.child.pid!, receiver: receiver.child.pid! };
    const { samples, stopped } = await sample(
      options.sampleMs,
      startedAt,
      pids,
      controlUrl,
      { transmitter, receiver },
      outputDir,
    );
    const seconds = (Date.now() - startedAt) / 1000;
    await stopChild(receiver.child, STOP_GRACE_MS);
    const files = await outputFiles(outputDir);
    const verdict = soakVerdict(samples, files, transmitter.child.exitCode, options.fromImage);
    const facts = { plan, sampleMs: options.sampleMs, seconds, pids };
    process.stderr.write(`bench: soak ${seconds.toFixed(1)} s, ${verdict.pass ? 'PASS' : 'FAILED'}\n`);
    return {
      lines: soakLines(facts, samples, verdict),
      charts: soakCharts(facts, samples, verdict),
      host: health.host,
      verdict,
      record: {
        options,
        plan,
        env,
        pids,
        seconds,
        samples,
        verdict,
        stopped,
        transmitterStdoutTail: transmitter.stdout(),
        transmitterStderrTail: transmitter.stderr(),
        receiverStderrTail: receiver.stderr(),
      },
    };
  } finally {
    await Promise.all([
      transmitter && stopChild(transmitter.child, STOP_GRACE_MS),
      stopChild(receiver.child, STOP_GRACE_MS),
    ]);
    await rm(outputDir, { recursive: true, force: true });
  }
}

/** A service process and the tails of what it printed. */
interface Service {
  child: ChildProcess;
  exited: Promise<void>;
  stdout(): string;
  stderr(): string;
}

function startService(name: 'receiver' | 'transmitter', env: NodeJS.ProcessEnv): Service {
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, projectPath('dist', 'services', name, 'main.js')], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout = (stdout + chunk).slice(-TAIL_CHARS)));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-TAIL_CHARS)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

/** GET /health once it answers; throws when the receiver exits first or takes longer than RECEIVER_START_MS. */
async function receiverReady(controlUrl: string, receiver: Service): Promise<HealthResponse> {
  const deadline = Date.now() + RECEIVER_START_MS;
  for (;;) {
    if (receiver.child.exitCode !== null)
      throw new Error(
        `bench: soak: the receiver exited (${receiver.child.exitCode}) before it was ready; its stderr ` +
          `ends:\n${receiver.stderr()}`,
      );
    const health = await getJson<HealthResponse>(`${controlUrl}/health`, 1000);
    if (health !== undefined) return health;
    if (Date.now() > deadline)
      throw new Error(
        `bench: soak: the receiver did not answer GET /health within ${RECEIVER_START_MS} ms; its stderr ` +
          `ends:\n${receiver.stderr()}`,
      );
    await sleep(100);
  }
}

/** The JSON at `url`, or undefined when it does not answer 200 within `timeoutMs`. */
async function getJson<T>(url: string, timeoutMs: number): Promise<T | undefined> {
  try {
    return await fetchWithin(url, timeoutMs, async (response) =>
      response.ok ? ((await response.json()) as T) : undefined,
    );
  } catch {
    return undefined;
  }
}

/** A process's RSS from /proc; null once it is gone. */
async function rssOf(pid: number): Promise<number | null> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  return (status === undefined ? undefined : vmRssBytes(status)) ?? null;
}

/**
 * Samples both processes on a fixed cadence from `startedAt` until the transmitter has exited and
 * the receiver is done with the run's files (or stalls: then the transmitter is stopped and the
 * reason returned). A transmitter that gave up waiting for POST /runs/finish leaves the receiver
 * still writing: stopping it then would cut its files short, and miss its peak. The receiver's
 * answer is waited for within the sample only: a receiver busy building a report leaves the count
 * unknown, never the RSS.
 */
async function sample(
  sampleMs: number,
  startedAt: number,
  pids: { transmitter: number; receiver: number },
  controlUrl: string,
  services: { transmitter: Service; receiver: Service },
  outputDir: string,
): Promise<{ samples: SoakSample[]; stopped: string | null }> {
  const { transmitter, receiver } = services;
  const samples: SoakSample[] = [];
  let transmitterExited = false;
  void transmitter.exited.then(() => (transmitterExited = true));
  let lastImages = -1;
  let lastChangeMs = Date.now();
  let idleSamples = 0;
  for (let tick = 1; receiver.child.exitCode === null && receiver.child.signalCode === null; tick++) {
    // One wait per tick, cut short by the transmitter's exit: a run of 50,000 images must not wait a whole second.
    await Promise.race([
      sleep(Math.max(0, startedAt + tick * sampleMs - Date.now())),
      ...(transmitterExited ? [] : [transmitter.exited]),
    ]);
    const files = transmitterExited ? await filesState(outputDir) : undefined;
    const atMs = Date.now() - startedAt;
    const [transmitterRssBytes, receiverRssBytes, progress] = await Promise.all([
      rssOf(pids.transmitter),
      rssOf(pids.receiver),
      getJson<ProgressResponse>(`${controlUrl}/progress`, Math.max(10, sampleMs * 0.9)),
    ]);
    const images = progress?.recorded ?? null;
    samples.push({
      atMs,
      images,
      streaming: progress === undefined ? null : progress.inProgress && progress.recorded < progress.imageCount,
      transmitterRssBytes,
      receiverRssBytes,
    });
    // The run's files are linked: one last reading (the run's final count, which /progress keeps) and done.
    if (files?.written) break;
    // Idle: answering at once, no run open, no file half written; three samples in a row, so a
    // pause between two files is not taken for the end (nor a report that failed for one).
    idleSamples = files !== undefined && progress?.inProgress === false && !files.writing ? idleSamples + 1 : 0;
    if (idleSamples >= 3) break;
    if (images !== null && images !== lastImages) {
      lastImages = images;
      lastChangeMs = Date.now();
    } else if (Date.now() - lastChangeMs > STALL_MS) {
      await stopChild(transmitter.child, STOP_GRACE_MS);
      return { samples, stopped: `no new image for ${STALL_MS / 60_000} min: the soak stopped the transmitter` };
    }
  }
  return { samples, stopped: null };
}

/**
 * Whether the receiver has ended the run (OUTPUT_DIR's links appear once its files are whole), or is still writing its
 * run's folder.
 */
async function filesState(outputDir: string): Promise<{ written: boolean; writing: boolean }> {
  const names = await readdir(outputDir).catch(() => [] as string[]);
  return { written: names.includes(LATEST_LINK), writing: !names.includes(LATEST_LINK) };
}

/**
 * The run's files (in the folder `latest` points at): the fixed ones and every other (each section's CSV), with their
 * sizes.
 */
async function outputFiles(baseDir: string): Promise<SoakFile[]> {
  const outputDir = path.join(baseDir, LATEST_LINK);
  const names = await readdir(outputDir).catch(() => [] as string[]);
  const others = names.filter((name) => !(SOAK_REQUIRED_FILES as readonly string[]).includes(name)).sort();
  const sized = async (name: string, required: boolean): Promise<SoakFile> => ({
    name,
    required,
    bytes: await stat(path.join(outputDir, name)).then(
      (s) => s.size,
      () => null,
    ),
  });
  return Promise.all([
    ...SOAK_REQUIRED_FILES.map((name) => sized(name, true)),
    ...others.map((name) => sized(name, false)),
  ]);
}
