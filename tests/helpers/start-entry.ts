import { spawn, type ChildProcess } from 'node:child_process';
import { brokerVariables } from '../../services/core/config/config.js';
import { projectPath } from '../../services/shared/paths.js';
import { transports } from '../../services/transports/index.js';

/** npm start's built entry (`npm test` builds dist/ first, its pretest step). */
export const START_ENTRY = projectPath('dist', 'scripts', 'start.js');

/** What an `npm start` entry printed, and how it ended. */
export interface StartResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** npm start's entry as a child of the test, in `outputDir` (its OUTPUT_DIR too), with what it printed so far. */
export function spawnStart(
  outputDir: string,
  env: Record<string, string>,
): { child: ChildProcess; stdout(): string; stderr(): string } {
  // No broker URL or password from the caller's shell: npm start must start its own servers (Redis, NATS).
  const brokers = new Set(brokerVariables(transports));
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !brokers.has(name)));
  const child = spawn(process.execPath, [START_ENTRY], {
    cwd: outputDir,
    env: { ...inherited, OUTPUT_DIR: outputDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return { child, stdout: () => stdout, stderr: () => stderr };
}

/** npm start's entry run to its end in `outputDir`; rejects (the child killed) after `timeoutMs`. */
export function runStart(outputDir: string, env: Record<string, string>, timeoutMs = 90_000): Promise<StartResult> {
  return new Promise((resolve, reject) => {
    const { child, stdout, stderr } = spawnStart(outputDir, env);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`npm start entry did not finish in ${timeoutMs} ms; stderr:\n${stderr()}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: stdout(), stderr: stderr() });
    });
  });
}
