import { spawn } from 'node:child_process';
import { ErrorCode, ItbError, errorMessage } from '../../services/core/errors.js';
import { stopChild } from '../../services/shared/child-process.js';
import { SERVICE_NODE_FLAGS } from '../../services/shared/node-flags.js';
import { projectPath } from '../../services/shared/paths.js';
import { withTimeout } from '../../services/shared/waits.js';
import type { CeilingFigures } from '../ceiling/drive.js';

// The bench's side of a ceiling run: `node dist/scripts/ceiling/main.js` (sender, with its
// receiver as a child process), bounded in time, its one JSON line read back. See scripts/ceiling/.

/** Enough of the runner's stderr for a Node stack trace or a library's complaint, short enough for a report row. */
const STDERR_TAIL_CHARS = 2000;
/** The runner stops at once on SIGTERM; SIGKILL follows only if it does not. */
const KILL_GRACE_MS = 2000;

/** One ceiling run: which pair, its images and window, and how long it may take. */
export interface CeilingRequest {
  transport: string;
  bytes: number;
  count: number;
  window: number;
  /** Images sent and acknowledged, untimed, before the timed ones. */
  warmup: number;
  /** The broker (redis://, nats://) of a transport that goes through one. */
  brokerUrl: string | undefined;
  /** Bound on the whole run, both processes' start included. */
  timeoutMs: number;
  /** Variables added to this process's environment for both of the run's processes (a bench variant's). */
  env?: Record<string, string>;
}

/** Output of the runner that carries no usable measurement; the message says what is wrong. */
export class BadCeilingOutput extends Error {}

/**
 * The figures in the runner's stdout, from its last JSON line; throws BadCeilingOutput without one, or with the failure
 * it reports.
 */
export function parseCeilingLine(text: string): CeilingFigures {
  let record: Record<string, unknown> | undefined;
  let line = '';
  // The result is printed last; anything a library logs to stdout before it is skipped.
  for (const candidate of text.split('\n').reverse()) {
    line = candidate.trim();
    record = jsonObject(line);
    if (record) break;
  }
  if (!record) {
    if (text.trim() === '') throw new BadCeilingOutput('the ceiling runner printed nothing on stdout');
    throw new BadCeilingOutput(
      `no JSON line in the ceiling runner's stdout: ${JSON.stringify(text.trim().slice(-200))}`,
    );
  }
  const found = record;
  if (typeof found.failed === 'string') throw new BadCeilingOutput(`the ceiling run failed: ${found.failed}`);
  const figure = (key: keyof CeilingFigures, orNull = false): number => {
    const value = found[key];
    if (typeof value === 'number' && Number.isFinite(value)) return value;
    // A number here is not finite (1e999 parses as Infinity), which JSON.stringify would write as null.
    const got = value === undefined ? 'missing' : typeof value === 'number' ? String(value) : JSON.stringify(value);
    throw new BadCeilingOutput(
      `the ceiling's "${key}" is ${got}, expected a finite number${orNull ? ' or null' : ''}, in ${line}`,
    );
  };
  return {
    MBps: figure('MBps'),
    imagesPerSecond: figure('imagesPerSecond'),
    rttP50Ms: figure('rttP50Ms'),
    rttP99Ms: figure('rttP99Ms'),
    senderCpuMs: figure('senderCpuMs'),
    // Null when the run could not split the receiving side's CPU from the sending side's (one process).
    receiverCpuMs: found.receiverCpuMs === null ? null : figure('receiverCpuMs', true),
    count: figure('count'),
    // Absent from a runner that predates it, or for a pair that supersedes nothing.
    ...(found.superseded === undefined ? {} : { superseded: figure('superseded') }),
    imageBytes: figure('imageBytes'),
    window: figure('window'),
    spanMs: figure('spanMs'),
  };
}

function jsonObject(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs one ceiling pair in two processes. Rejects with ITB_ERR_TIMEOUT after killing it when it
 * outlasts `timeoutMs`, with ITB_ERR_TRANSPORT when it fails or prints no usable result.
 */
export async function runCeiling(request: CeilingRequest): Promise<CeilingFigures> {
  const { transport, bytes, count, window, warmup, brokerUrl, timeoutMs, env } = request;
  const what = `the ${transport} ceiling (${bytes} B × ${count}, window ${window})`;
  const args = [
    projectPath('dist', 'scripts', 'ceiling', 'main.js'),
    transport,
    `--bytes=${bytes}`,
    `--count=${count}`,
    `--window=${window}`,
    `--warmup=${warmup}`,
    ...(brokerUrl ? [`--broker-url=${brokerUrl}`] : []),
  ];
  // The services' Node flags (the runner passes them on to its receiver): the same GC settings as the suite's.
  // The runner passes its environment on to its receiver process, so `env` reaches both sides.
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: env === undefined ? process.env : { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS)));
  const stderrTail = (): string => {
    const text = (stderr.length >= STDERR_TAIL_CHARS ? `…${stderr.slice(stderr.indexOf('\n') + 1)}` : stderr).trim();
    return `stderr tail: ${text === '' ? '(empty)' : text}`;
  };
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  let exit: { code: number | null; signal: NodeJS.Signals | null };
  try {
    exit = await withTimeout(closed, timeoutMs, what);
  } catch (err) {
    const started = child.pid !== undefined;
    if (started) await stopChild(child, KILL_GRACE_MS);
    child.stdout.destroy();
    child.stderr.destroy();
    const code = err instanceof ItbError ? err.code : ErrorCode.transport;
    throw new ItbError(code, `${errorMessage(err)}${started ? '; killed it' : ''}; ${stderrTail()}`, { cause: err });
  }
  try {
    return parseCeilingLine(stdout);
  } catch (err) {
    throw new ItbError(
      ErrorCode.transport,
      `${what}: ${errorMessage(err)} (exit ${exit.signal ?? exit.code}); ${stderrTail()}`,
      { cause: err },
    );
  }
}
