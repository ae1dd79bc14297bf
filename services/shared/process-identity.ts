import { readFile, readlink } from 'node:fs/promises';
import os from 'node:os';
import type { RunWriter } from '../core/model/run-writer.js';

// What names a process beyond its id, read from /proc (Linux): its start time, its kernel boot and its pid namespace.
// Elsewhere they are null, and a run's writer is then judged by its heartbeat alone.

/** A process's state and start time (clock ticks since boot) from its /proc/<pid>/stat; undefined when unreadable. */
async function statOf(pid: number | 'self'): Promise<{ state: string; startTicks: string } | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => undefined);
  if (text === undefined) return undefined;
  // The command, in parentheses, may hold spaces: fields are counted after its closing one (state is field 3).
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTicks = fields[19];
  return state === undefined || startTicks === undefined ? undefined : { state, startTicks };
}

let own: Promise<RunWriter> | undefined;

/** This process as a run folder's writer (read once). */
export function ownWriter(): Promise<RunWriter> {
  own ??= (async () => {
    const [stat, bootId, namespace] = await Promise.all([
      statOf('self'),
      readFile('/proc/sys/kernel/random/boot_id', 'utf8').catch(() => undefined),
      readlink('/proc/self/ns/pid').catch(() => undefined),
    ]);
    return {
      pid: process.pid,
      startTicks: stat?.startTicks ?? null,
      bootId: bootId?.trim() ?? null,
      pidNamespace: namespace ?? null,
      hostname: os.hostname(),
    };
  })();
  return own;
}

/**
 * The start ticks of live process `pid` of this process's space: null when there is none (or only its zombie: it is
 * dead, its parent has not yet reaped it); undefined when /proc cannot tell.
 */
export async function liveProcessStartTicks(pid: number): Promise<string | null | undefined> {
  if (!Number.isSafeInteger(pid) || pid <= 0) return null;
  const stat = await statOf(pid);
  if (stat !== undefined) return stat.state === 'Z' || stat.state === 'X' ? null : stat.startTicks;
  // No /proc/<pid>: gone, where /proc is there at all.
  return (await statOf('self')) === undefined ? undefined : null;
}
