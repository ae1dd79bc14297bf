import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** Sends SIGTERM, then SIGKILL after `graceMs`, and resolves once the child has exited. */
export async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
