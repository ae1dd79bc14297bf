import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { ErrorCode, ItbError } from '../core/errors.js';
import { stopChild } from './child-process.js';
import { freePort } from './net.js';
import { sleep } from './waits.js';

/** A server process of this machine's, started on a free loopback port for one run or one test. */
export interface LocalProcess {
  port: number;
  /** Stops it (SIGTERM, then SIGKILL) and waits until it is gone. */
  close(): Promise<void>;
}

/** What to start: a command from PATH, its arguments for a port, and how to tell it is ready. */
export interface LocalProcessSpec {
  command: string;
  args(port: number): string[];
  /** One readiness probe; polled until it says true. */
  ready(port: number): Promise<boolean>;
  /** Its environment for a port; undefined: this process's. */
  env?(port: number): NodeJS.ProcessEnv;
  timeoutMs?: number;
}

const DEFAULT_READY_TIMEOUT_MS = 10_000;
const POLL_PAUSE_MS = 50;
const STOP_GRACE_MS = 3000;

/**
 * Starts `spec.command` on a free loopback port and waits until its probe answers. Rejects with
 * ITB_ERR_TRANSPORT when the command is not on PATH, exits, or is not ready in time.
 */
export async function startLocalProcess(spec: LocalProcessSpec): Promise<LocalProcess> {
  const port = await freePort();
  let child: ChildProcess;
  try {
    child = spawn(spec.command, spec.args(port), { stdio: ['ignore', 'ignore', 'pipe'], env: spec.env?.(port) });
    await Promise.race([once(child, 'spawn'), once(child, 'error').then(([err]) => Promise.reject(err))]);
  } catch (err) {
    throw new ItbError(ErrorCode.transport, `cannot start ${spec.command} from PATH: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const close = (): Promise<void> => stopChild(child, STOP_GRACE_MS);
  const timeoutMs = spec.timeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  while (!(await spec.ready(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await close();
      throw new ItbError(ErrorCode.transport, `${spec.command} on port ${port} was not ready within ${timeoutMs} ms`);
    }
    await sleep(POLL_PAUSE_MS);
  }
  return { port, close };
}

/**
 * True when a server on `host`:`port` answers as expected within 500 ms: it sends `hello` (if
 * any) once connected and resolves on the first bytes back, true when they start with `prefix`.
 * The readiness check of a local server (Redis: PING → +PONG; NATS greets with INFO).
 */
export function answersWith(port: number, prefix: string, hello?: string, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    if (hello !== undefined) socket.on('connect', () => socket.write(hello));
    socket.on('data', (data) => done(data.toString('latin1').startsWith(prefix)));
  });
}
