import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ErrorCode, ItbError, errorMessage } from '../../services/core/errors.js';
import { stopChild } from '../../services/shared/child-process.js';
import { withTimeout } from '../../services/shared/waits.js';

// refbench (../shared/refbench/ref.js) measures each library's own ceiling with the thinnest
// client; the bench runs it beside the project's runs so that ratios, not absolute figures on a
// noisy host, are compared. See its RESULTS.md.

/** Enough of ref.js's stderr for a Node stack trace or a library's complaint, short enough for a report row. */
const STDERR_TAIL_CHARS = 2000;
/** ref.js dies at once on SIGTERM; SIGKILL follows only if it does not. */
const KILL_GRACE_MS = 2000;

/** Where refbench is, or why it cannot run here and the command that would fix that. */
export type RefbenchLocation = { dir: string } | { unavailable: string };

/** Finds refbench: REFBENCH_DIR (relative to projectRoot) if set, else `<projectRoot>/../shared/refbench`. */
export function findRefbench(projectRoot: string, env: NodeJS.ProcessEnv = process.env): RefbenchLocation {
  const fromEnv = env.REFBENCH_DIR;
  const dir = fromEnv ? path.resolve(projectRoot, fromEnv) : path.resolve(projectRoot, '..', 'shared', 'refbench');
  const source = fromEnv ? `REFBENCH_DIR=${fromEnv}` : 'the default ../shared/refbench';
  if (!existsSync(path.join(dir, 'ref.js'))) {
    return { unavailable: `no ref.js in ${dir} (${source}): set REFBENCH_DIR to the folder that holds refbench's ref.js` };
  }
  // refbench is a separate install: the project's own npm ci never fills this node_modules.
  if (!existsSync(path.join(dir, 'node_modules'))) {
    return { unavailable: `refbench in ${dir} has no node_modules: run \`cd ${dir} && npm ci\`` };
  }
  return { dir };
}

/** One ref.js run: its arguments, its environment and how long it may take. */
export interface RefbenchRequest {
  /** ref.js mode: tcp, ws, ws-push, grpc, grpc-chunked, grpc-unary, zmq, zmq-push, redis-list, redis-stream, redis-pubsub, http-post. */
  mode: string;
  bytes: number;
  count: number;
  /** Most payloads unacknowledged at once. */
  window: number;
  /** Payloads sent and acknowledged, untimed, before the timed ones (REF_WARMUP). */
  warmup: number;
  /** Port of the redis-server the redis-* modes use (REF_REDIS_PORT); required for them. */
  redisPort?: number;
  /** Bound on the whole run, receiver start and ref.js's 1.2 s exit delay included. */
  timeoutMs: number;
}

/** What one ref.js run measured. */
export interface RefbenchFigures {
  MBps: number;
  msgps: number;
  /** Acknowledgement round trip, median. */
  p50Ms: number;
  p99Ms: number;
  /** CPU time of the sending process in the timed phase; null when ref.js did not report it. */
  senderCpuMs: number | null;
}

/** A refbench measurement with the configuration that produced it. */
export interface RefbenchResult extends RefbenchFigures {
  mode: string;
  bytes: number;
  count: number;
  window: number;
}

/** Output of ref.js that carries no usable measurement; the message says what is wrong. */
export class BadRefbenchOutput extends Error {}

/** The figures in ref.js's stdout, read from its last JSON line; throws BadRefbenchOutput without one. */
export function parseRefbenchLine(text: string): RefbenchFigures {
  let record: Record<string, unknown> | undefined;
  let line = '';
  // The result is printed last; anything a library logs to stdout before it is skipped.
  for (const candidate of text.split('\n').reverse()) {
    line = candidate.trim();
    record = jsonObject(line);
    if (record) break;
  }
  if (!record) {
    if (text.trim() === '') throw new BadRefbenchOutput('refbench printed nothing on stdout');
    throw new BadRefbenchOutput(`no JSON line in refbench's stdout: ${JSON.stringify(text.trim().slice(-200))}`);
  }
  const found = record;
  const figure = (key: string): number => {
    const value = found[key];
    if (typeof value === 'number' && Number.isFinite(value)) return value;
    // ref.js prints Infinity (a run too short to time) as null: that is no figure either.
    const got = value === undefined ? 'missing' : JSON.stringify(value);
    throw new BadRefbenchOutput(`refbench's "${key}" is ${got}, expected a finite number, in ${line}`);
  };
  const cpu = found.senderCpuMs;
  return {
    MBps: figure('MBps'),
    msgps: figure('msgps'),
    p50Ms: figure('p50ms'),
    p99Ms: figure('p99ms'),
    senderCpuMs: typeof cpu === 'number' && Number.isFinite(cpu) ? cpu : null,
  };
}

function jsonObject(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs ref.js once in `dir`. Rejects with ITB_ERR_TIMEOUT after killing it when it outlasts
 * `timeoutMs`, with ITB_ERR_TRANSPORT when it fails or prints no usable result, with ITB_ERR_CONFIG
 * when a redis mode has no redisPort.
 */
export async function runRefbench(dir: string, request: RefbenchRequest): Promise<RefbenchResult> {
  const { mode, bytes, count, window, warmup, redisPort, timeoutMs } = request;
  const what = `refbench ${mode} (${bytes} B × ${count}, window ${window})`;
  // Without it ref.js dials port 6399, whatever listens there, and ioredis retries until the timeout.
  if (mode.startsWith('redis') && redisPort === undefined) {
    throw new ItbError(ErrorCode.config, `${what} needs redisPort, the port of a running redis-server`);
  }
  const env: NodeJS.ProcessEnv = { ...process.env, REF_WARMUP: String(warmup) };
  if (redisPort !== undefined) env.REF_REDIS_PORT = String(redisPort);
  const child = spawn(process.execPath, [path.join(dir, 'ref.js'), mode, String(bytes), String(count), String(window)], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  // Bounded: a client that cannot connect may log a reconnect error every few ms until the timeout.
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS)));
  const stderrTail = (): string => {
    // A cut tail starts at a line, not mid-word.
    const text = (stderr.length >= STDERR_TAIL_CHARS ? `…${stderr.slice(stderr.indexOf('\n') + 1)}` : stderr).trim();
    return `stderr tail: ${text === '' ? '(empty)' : text}`;
  };

  // 'close', not 'exit': the forked receiver shares these pipes, and the result line may still be in them at 'exit'.
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  let exit: { code: number | null; signal: NodeJS.Signals | null };
  try {
    exit = await withTimeout(closed, timeoutMs, what);
  } catch (err) {
    // The receiver ref.js forked exits by itself once its parent's IPC channel closes.
    const started = child.pid !== undefined;
    if (started) await stopChild(child, KILL_GRACE_MS);
    child.stdout.destroy();
    child.stderr.destroy();
    const code = err instanceof ItbError ? err.code : ErrorCode.transport;
    throw new ItbError(code, `${errorMessage(err)}${started ? '; killed it' : ''}; ${stderrTail()}`, { cause: err });
  }
  if (exit.code !== 0) {
    throw new ItbError(ErrorCode.transport, `${what} exited with ${exit.signal ?? `code ${exit.code}`}; ${stderrTail()}`);
  }
  try {
    return { mode, bytes, count, window, ...parseRefbenchLine(stdout) };
  } catch (err) {
    throw new ItbError(ErrorCode.transport, `${what}: ${errorMessage(err)} (exit code 0); ${stderrTail()}`, { cause: err });
  }
}
