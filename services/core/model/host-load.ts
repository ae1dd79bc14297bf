import type { SectionClock } from './clock.js';
import type { SectionCost } from './cost.js';

// How busy the receiver's host was over a section's measured span (from just before the first
// recorded stamp to the last recorded image's ack, the span of every cost figure), from two
// readings of its kernel's counters: /proc/stat's CPU times and the 1-minute load average. What
// they say is whether something besides the run took CPU from it (other processes, or a
// hypervisor that ran another guest), which moves every time the run measures: when two runs
// disagree, these are the first figures to compare. The readings are taken by
// services/shared/host-load-reading.ts; this turns them into figures and applies the warning rule.

/**
 * Linux's USER_HZ: /proc/stat counts CPU time in these ticks per second. It is 100 on every architecture Linux builds
 * for user space, whatever the kernel's own HZ.
 */
export const PROC_STAT_TICKS_PER_SECOND = 100;

/**
 * Steal and time the kernel never accounted, together, from this share of the host's CPU time up: the hypervisor ran
 * something else while this guest's clock ran on, so the times measured meanwhile hold waits no transport caused. It
 * is five times what this project's VM reads idle (under 1 %), and with one twentieth of the time not running, more
 * images than a p99's one in a hundred can meet a stolen slice.
 */
export const STOLEN_WARNING_SHARE = 0.05;

/**
 * Other processes' CPU from this many cores up (averaged over the span): they ran on the CPUs the run's processes
 * wanted, so an image could wait for a core. A quarter core is four times the most this project's VM read idle (0.02
 * to 0.06 over 3 s) and five times the tick-sampled busy time's error over a second (about 0.05), and a fourth of one
 * competing CPU-bound process.
 */
export const OTHER_PROCESSES_WARNING_CORES = 0.25;

/**
 * Spans shorter than this give no steal or other-processes warning: the counters move in 10 ms ticks, so over 200 ms
 * on two CPUs one tick is 2.5 % of the time.
 */
export const MIN_HOST_LOAD_SPAN_MS = 1000;

/** The "cpu" line of /proc/stat: every CPU's time since boot, summed, by what it was spent on, in ticks. */
export interface ProcStatCpuTicks {
  user: number;
  nice: number;
  system: number;
  idle: number;
  iowait: number;
  irq: number;
  softirq: number;
  /** Time the hypervisor ran something else while this guest's CPU was ready to run. */
  steal: number;
}

/** What the receiver reads of /proc/stat: the CPU time totals and the number of CPUs they are over. */
export interface ProcStat {
  cpu: ProcStatCpuTicks;
  /** Online CPUs (its cpuN lines): the cores the load average and the totals are over. */
  cpus: number;
}

/** One reading of the host's load; a figure is null where this system does not give it (no /proc off Linux). */
export interface HostLoadReading {
  /** When it was taken, on a monotonic clock, ms. */
  atMs: number;
  loadAverage1m: number | null;
  stat: ProcStat | null;
  /** The host's CPUs: /proc/stat's count, or the system's where there is no /proc; null when unknown. */
  cores: number | null;
}

/** How busy the receiver's host was over one section's measured span (SectionResult.hostLoad). */
export interface HostLoad {
  /**
   * True when the transmitter ran on this host too (one kernel), so its CPU is among the host's; false when it ran on
   * another host, whose load is not measured; null when unknown (no clock estimate).
   */
  transmitterOnHost: boolean | null;
  /** The host's CPUs (online, as /proc/stat counts them). */
  cores: number | null;
  /** The 1-minute load average (runnable and uninterruptible tasks, this run's own included) at each end. */
  loadAverage1mStart: number | null;
  loadAverage1mEnd: number | null;
  /** The time between the two /proc/stat readings, ms; null without /proc. */
  spanMs: number | null;
  /** Share of the CPUs' time (cores × span) busy on this host: every process and the kernel's interrupts, 0 to 1. */
  hostBusyShare: number | null;
  /** Share of the CPUs' time the hypervisor reported as stolen (steal), 0 to 1. */
  stealShare: number | null;
  /**
   * Share of the CPUs' time the kernel accounted to nothing, 0 to 1: ticks lost while the hypervisor did not run this
   * guest, on one that does not report steal (this project's 2-core VM reads under 0.5 % idle, up to 11 % busy).
   */
  unaccountedShare: number | null;
  /**
   * CPU of processes other than this run's (the receiver, the transmitter on this host, the broker), averaged over the
   * span, in cores; null when one of the run's own was not measured on this host (a broker without a CPU figure, a
   * transmitter's failed section, other receivers) or without /proc.
   */
  otherProcessesCores: number | null;
}

/** One figure of a section's host load past its limit: what moved the section's times. */
export interface HostBusySign {
  figure: 'stolen' | 'otherProcesses' | 'loadAverage';
  value: number;
  limit: number;
}

const CPU_COLUMNS = ['user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq', 'steal'] as const;

/** Ticks by column, each from `of` (given the column's name and its place on the "cpu" line). */
function byColumn(of: (column: keyof ProcStatCpuTicks, index: number) => number): ProcStatCpuTicks {
  return {
    user: of('user', 0),
    nice: of('nice', 1),
    system: of('system', 2),
    idle: of('idle', 3),
    iowait: of('iowait', 4),
    irq: of('irq', 5),
    softirq: of('softirq', 6),
    steal: of('steal', 7),
  };
}

/**
 * The CPU totals of /proc/stat's text; null when it has no "cpu" line with the eight columns up to steal (Linux before
 * 2.6.11) or none of them is a count.
 */
export function parseProcStat(text: string): ProcStat | null {
  let cpu: ProcStatCpuTicks | null = null;
  let cpus = 0;
  for (const line of text.split('\n')) {
    if (/^cpu\d+ /.test(line)) cpus++;
    else if (line.startsWith('cpu ')) {
      // guest and guest_nice, after steal, are already inside user and nice.
      const values = line.slice(4).trim().split(/\s+/).slice(0, CPU_COLUMNS.length).map(Number);
      if (values.length < CPU_COLUMNS.length || !values.every((v) => Number.isSafeInteger(v) && v >= 0)) return null;
      cpu = byColumn((_, i) => values[i]!);
    }
  }
  return cpu === null || cpus === 0 ? null : { cpu, cpus };
}

/** Whether the transmitter of `plan` ran on the receiver's host: one kernel is one clock, not applied. */
export function transmitterOnHostOf(plan: { clock: SectionClock | null }): boolean | null {
  return plan.clock === null ? null : !plan.clock.applied;
}

/**
 * CPU ms of this run's own processes on the receiver's host over the span, from the section's cost: the receiver, the
 * transmitter when on this host, the broker when the transport has one. Null when one of them is on this host but
 * unmeasured, or other receivers (RECEIVERS > 1) may be, whose cost this receiver does not have. A broker measured on
 * another host (a remote REDIS_URL) is subtracted too: the others' figure then reads low, never a false warning.
 */
export function ownCpuMsOnHost(
  cost: SectionCost,
  run: { transmitterOnHost: boolean | null; throughBroker: boolean; receivers: number },
): number | null {
  if (cost.receiver === null || run.receivers > 1 || run.transmitterOnHost === null) return null;
  let cpuMs = cost.receiver.cpuMs;
  if (run.transmitterOnHost) {
    if (cost.transmitter === null) return null;
    cpuMs += cost.transmitter.cpuMs;
  }
  if (run.throughBroker) {
    if (cost.broker === null) return null;
    cpuMs += cost.broker.cpuMs;
  }
  return cpuMs;
}

/**
 * The host's load between two readings, with this run's own CPU over the same span (`ownCpuMs`, null when not known:
 * see {@link ownCpuMsOnHost}).
 */
export function hostLoadBetween(
  start: HostLoadReading,
  end: HostLoadReading,
  ownCpuMs: number | null,
  transmitterOnHost: boolean | null,
): HostLoad {
  const cores = end.cores ?? start.cores;
  const spanMs = end.atMs - start.atMs;
  const [from, to] = [start.stat, end.stat];
  const delta = from !== null && to !== null && cores !== null && spanMs > 0 ? tickDeltas(from.cpu, to.cpu) : null;
  const capacityTicks = cores === null ? 0 : (cores * spanMs * PROC_STAT_TICKS_PER_SECOND) / 1000;
  const share = (ticks: number): number => Math.min(1, Math.max(0, ticks / capacityTicks));
  const processTicks = delta === null ? 0 : delta.user + delta.nice + delta.system;
  const accountedTicks = delta === null ? 0 : CPU_COLUMNS.reduce((sum, name) => sum + delta[name], 0);
  return {
    transmitterOnHost,
    cores,
    loadAverage1mStart: start.loadAverage1m,
    loadAverage1mEnd: end.loadAverage1m,
    spanMs: delta === null ? null : spanMs,
    hostBusyShare: delta === null ? null : share(processTicks + delta.irq + delta.softirq),
    stealShare: delta === null ? null : share(delta.steal),
    unaccountedShare: delta === null ? null : share(capacityTicks - accountedTicks),
    otherProcessesCores:
      delta === null || ownCpuMs === null
        ? null
        : Math.max(0, (processTicks * 1000) / PROC_STAT_TICKS_PER_SECOND - ownCpuMs) / spanMs,
  };
}

/** Each counter's growth from `start` to `end`; null when one went back (not one boot's counters). */
function tickDeltas(start: ProcStatCpuTicks, end: ProcStatCpuTicks): ProcStatCpuTicks | null {
  const delta = byColumn((name) => end[name] - start[name]);
  return CPU_COLUMNS.every((name) => delta[name] >= 0) ? delta : null;
}

/** The share of the CPUs' time taken from this guest: steal and unaccounted time; null when neither is known. */
export function stolenShare(load: Pick<HostLoad, 'stealShare' | 'unaccountedShare'>): number | null {
  if (load.stealShare === null && load.unaccountedShare === null) return null;
  return (load.stealShare ?? 0) + (load.unaccountedShare ?? 0);
}

/** The larger of a section's two load averages; null when neither was read. */
export function peakLoadAverage1m(load: Pick<HostLoad, 'loadAverage1mStart' | 'loadAverage1mEnd'>): number | null {
  const values = [load.loadAverage1mStart, load.loadAverage1mEnd].filter((v): v is number => v !== null);
  return values.length === 0 ? null : Math.max(...values);
}

/**
 * What in a section's host load says the host was busy enough to move its times. Over a span of at least {@link
 * MIN_HOST_LOAD_SPAN_MS}: CPU time stolen (steal + unaccounted) from {@link STOLEN_WARNING_SHARE}, other processes
 * from {@link OTHER_PROCESSES_WARNING_CORES}. Where the other processes cannot be told apart (or the span is short),
 * a 1-minute load average over the core count instead: more tasks wanted a CPU than there were, though this run's own
 * count among them.
 */
export function hostBusySigns(load: HostLoad): HostBusySign[] {
  const signs: HostBusySign[] = [];
  const long = load.spanMs !== null && load.spanMs >= MIN_HOST_LOAD_SPAN_MS;
  const stolen = stolenShare(load);
  if (long && stolen !== null && stolen >= STOLEN_WARNING_SHARE)
    signs.push({ figure: 'stolen', value: stolen, limit: STOLEN_WARNING_SHARE });
  const others = long ? load.otherProcessesCores : null;
  if (others !== null && others >= OTHER_PROCESSES_WARNING_CORES)
    signs.push({ figure: 'otherProcesses', value: others, limit: OTHER_PROCESSES_WARNING_CORES });
  const load1m = peakLoadAverage1m(load);
  if (others === null && load1m !== null && load.cores !== null && load1m > load.cores)
    signs.push({ figure: 'loadAverage', value: load1m, limit: load.cores });
  return signs;
}

/**
 * A section's host load from its readings at both ends of its measured span, its cost and its plan (`throughBroker`:
 * its transport goes through a broker); null without a start reading (it never measured).
 */
export function sectionHostLoad(
  start: HostLoadReading | undefined,
  end: HostLoadReading,
  section: { cost: SectionCost; clock: SectionClock | null; receivers: number },
  throughBroker: boolean,
): HostLoad | null {
  if (start === undefined) return null;
  const transmitterOnHost = transmitterOnHostOf(section);
  const ownCpuMs = ownCpuMsOnHost(section.cost, { transmitterOnHost, throughBroker, receivers: section.receivers });
  return hostLoadBetween(start, end, ownCpuMs, transmitterOnHost);
}
