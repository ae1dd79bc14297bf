import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stopChild } from '../../services/shared/child-process.js';
import { SERVICE_NODE_FLAGS } from '../../services/shared/node-flags.js';
import { projectPath } from '../../services/shared/paths.js';

/** A service started from dist/ as a real process, with what it printed so far. */
export interface ServiceProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal) once the process has exited. */
  exited: Promise<number | null>;
  /** Resolves when stderr has a line matching `pattern`; rejects after `timeoutMs`. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

/**
 * Where services started by the tests keep the shared secret when a test gives no AUTH_TOKEN: one
 * file for this test process, outside the repository, so a receiver and a transmitter started
 * separately find the same secret as they would side by side in a project folder.
 */
export const TEST_AUTH_TOKEN_FILE = path.join(os.tmpdir(), `itb-test-auth-token-${process.pid}`);

/**
 * Starts `node dist/services/<name>/main.js` (or `npm start`'s `dist/scripts/start.js`) with `env`
 * over a clean environment; `prefix` is a command that runs it (e.g. in namespaces of its own).
 */
export function startService(
  name: 'receiver' | 'transmitter' | 'start',
  env: Record<string, string>,
  prefix: readonly string[] = [],
): ServiceProcess {
  const entry =
    name === 'start' ? projectPath('dist', 'scripts', 'start.js') : projectPath('dist', 'services', name, 'main.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run "npm run build" first (npm test does)`);
  // The services run with the flags npm start and the image give them; npm start's own entry needs none.
  const command = [...prefix, process.execPath, ...(name === 'start' ? [] : SERVICE_NODE_FLAGS), entry];
  const child = spawn(command[0]!, command.slice(1), {
    env: { PATH: process.env.PATH ?? '', AUTH_TOKEN_FILE: TEST_AUTH_TOKEN_FILE, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitForLog(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(err)) {
        if (Date.now() > deadline)
          throw new Error(`${name} never logged ${pattern} within ${timeoutMs} ms; stderr:\n${err.slice(-3000)}`);
        if (child.exitCode !== null)
          throw new Error(`${name} exited (${child.exitCode}) before logging ${pattern}; stderr:\n${err.slice(-3000)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

export { freePortsEnv } from '../../scripts/lib/ports.js';

/** Resolves with the exit code, or rejects when the process takes longer than `timeoutMs` (then killed). */
export async function exitWithin(service: ServiceProcess, timeoutMs: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void stopChild(service.child, 100);
      reject(new Error(`still running after ${timeoutMs} ms; stderr:\n${service.stderr().slice(-3000)}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([service.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A receiver process started with `env`, once it logged that it is ready. */
export async function startReadyReceiver(env: Record<string, string>): Promise<ServiceProcess> {
  const receiver = startService('receiver', env);
  await receiver.waitForLog(/receiver ready/);
  return receiver;
}

/**
 * Sends SIGTERM and waits up to 10 s for the process to go (killed after that); nothing for a service never started.
 */
export async function stopService(service: ServiceProcess | undefined): Promise<void> {
  if (service === undefined) return;
  service.child.kill('SIGTERM');
  await exitWithin(service, 10_000).catch(() => undefined);
}
