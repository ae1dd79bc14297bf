// Who writes a run's folder while the run is open, and when a run left open is abandoned: its receiver died (SIGKILL,
// out of memory) and no one will end it. A receiver finishes such a run as soon as it can tell, and never one whose
// writer may still be alive. A process id means something only within one kernel boot and one pid namespace (a
// container has its own, new each time it starts), and an id can be reused, so the writer names all three and its
// start time: a writer of this process's own space whose id no longer names that same process is gone at once. One
// that cannot be looked at is gone once the folder's heartbeat (the writer touches its file every 2 s) is older than a
// limit: a short one for a writer of this host name and boot in another pid namespace (this container before it was
// restarted), a long one for any other (another host or container sharing OUTPUT_DIR). Pure: what is seen of
// processes and files is given to it.

/** A run folder's writer, as it names itself in the folder. */
export interface RunWriter {
  pid: number;
  /** The process's start, in clock ticks since boot (/proc/<pid>/stat): with the pid, it names one process. */
  startTicks: string | null;
  /** The kernel's boot (/proc/sys/kernel/random/boot_id); null where unknown. */
  bootId: string | null;
  /** The pid namespace its pid is in (`pid:[<inode>]`, /proc/self/ns/pid); null where unknown. */
  pidNamespace: string | null;
  hostname: string;
}

/** How old a writer's heartbeat may grow before the writer is taken for gone, by what is known of it. */
export interface HeartbeatLimits {
  /** This host name and boot, another pid namespace: most likely this very container, restarted. */
  restartedMs: number;
  /** Any other writer that cannot be looked at. */
  elsewhereMs: number;
}

/** What a receiver sees of a run folder's writer now. */
export interface WriterSighting {
  writer: RunWriter;
  /** This process, as a writer. */
  self: RunWriter;
  /**
   * The start ticks of the live process that has the writer's pid in this process's space: null when there is none (or
   * a zombie); undefined when not looked at (another space, or no /proc).
   */
  processNowStartTicks: string | null | undefined;
  /** Since the writer last touched its file (its heartbeat). */
  quietMs: number;
  limits: HeartbeatLimits;
}

/** True when `writer`'s pid is of this process's space (the same boot and pid namespace): it can be looked at. */
export function sameProcessSpace(writer: RunWriter, self: RunWriter): boolean {
  return (
    writer.bootId !== null &&
    writer.pidNamespace !== null &&
    writer.bootId === self.bootId &&
    writer.pidNamespace === self.pidNamespace
  );
}

/** Why the run's writer is gone (its run abandoned), or undefined while it may be alive. */
export function writerGone(seen: WriterSighting): string | undefined {
  const { writer, self, processNowStartTicks, quietMs, limits } = seen;
  const where = `process ${writer.pid} on ${writer.hostname}`;
  if (sameProcessSpace(writer, self)) {
    // This process: alive by definition (whether it still writes there is for it to know, not a sweep).
    if (writer.pid === self.pid && writer.startTicks === self.startTicks) return undefined;
    if (processNowStartTicks === null) return `its receiver, ${where}, is gone`;
    if (processNowStartTicks !== undefined && writer.startTicks !== null)
      return processNowStartTicks === writer.startTicks
        ? undefined
        : `its receiver, ${where}, is gone (that id names another process now)`;
  }
  const restarted =
    writer.bootId !== null &&
    writer.bootId === self.bootId &&
    writer.hostname === self.hostname &&
    writer.pidNamespace !== self.pidNamespace;
  if (quietMs > (restarted ? limits.restartedMs : limits.elsewhereMs))
    return `its receiver, ${where}, has not touched it for ${Math.round(quietMs / 1000)} s`;
  return undefined;
}

/** The stopReason of a run finished after its receiver died: `why` says how that was known. */
export function abandonedRunReason(why: string): string {
  return `the receiver stopped before the run ended (${why}); completed by the next receiver on its OUTPUT_DIR`;
}

/** A run folder's name before its random part: the run's start (UTC), as `20261129T101500Z`. */
export function runFolderStamp(startedAt: string): string {
  return startedAt.replace(/[-:]/g, '').replace(/\.\d+/, '');
}

/** A writer file's content as a RunWriter; one that cannot be read names no process, and is judged by its heartbeat. */
export function parseRunWriter(text: string): RunWriter {
  let parsed: Partial<Record<keyof RunWriter, unknown>> = {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null) parsed = value;
  } catch {
    // Judged by its heartbeat.
  }
  const textOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  return {
    pid: typeof parsed.pid === 'number' && Number.isSafeInteger(parsed.pid) ? parsed.pid : 0,
    startTicks: textOrNull(parsed.startTicks),
    bootId: textOrNull(parsed.bootId),
    pidNamespace: textOrNull(parsed.pidNamespace),
    hostname: textOrNull(parsed.hostname) ?? 'an unknown host',
  };
}
