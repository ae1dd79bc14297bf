import { spawn, type ChildProcess } from 'node:child_process';
import { once as onceEvent } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ErrorCode, ItbError } from '../core/errors.js';
import { stopChild } from './child-process.js';
import { freePort } from './net.js';
import { once } from './once.js';
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
    await Promise.race([onceEvent(child, 'spawn'), onceEvent(child, 'error').then(([err]) => Promise.reject(err))]);
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

/** A {@link LocalProcess} whose files (config, data, logs) are in a private temporary directory of its own. */
export interface LocalProcessInDir extends LocalProcess {
  /** The directory, removed with everything under it once the process is gone. */
  dir: string;
}

/**
 * Makes a private temporary directory (`itb-<name>-XXXXXX` in the system's), lets `prepare` write
 * its files there and say what to start, and starts it (startLocalProcess). The directory lives as
 * long as the process: close() stops the process, then removes it (safe to call twice), and a
 * failure anywhere before the process is ready removes it too.
 */
export async function startLocalProcessInTempDir(
  name: string,
  prepare: (dir: string) => Promise<LocalProcessSpec>,
): Promise<LocalProcessInDir> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `itb-${name}-`));
  const removeDir = (): Promise<void> => rm(dir, { recursive: true, force: true });
  try {
    const server = await startLocalProcess(await prepare(dir));
    return {
      port: server.port,
      dir,
      close: once(async () => {
        await server.close();
        await removeDir();
      }),
    };
  } catch (err) {
    await removeDir();
    throw err;
  }
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
