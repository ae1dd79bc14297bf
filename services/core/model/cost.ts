// What a section cost each side: CPU time, peak memory and event-loop utilization over the same
// span on every side, from the first recorded image to the last acknowledgement. The readings are
// taken by the services (services/shared/resources.ts) and, for a broker, by the transport from
// the broker itself; this turns two readings into figures.

/** One side's readings at one moment. */
export interface ResourceReading {
  /** process.cpuUsage(), microseconds. */
  cpuUserMicros: number;
  cpuSystemMicros: number;
  /** performance.eventLoopUtilization() totals, milliseconds. */
  eluIdleMs: number;
  eluActiveMs: number;
}

/** One side's cost of one section. */
export interface SideCost {
  cpuUserMs: number;
  cpuSystemMs: number;
  /** User + system. */
  cpuMs: number;
  cpuMsPerImage: number;
  /**
   * Largest resident set size seen during the section (sampled, and at both ends; a broker: the larger of its two
   * readings).
   */
  peakRssBytes: number;
  /** Share of the span the event loop was busy, 0 to 1; null for a broker (not a Node process). */
  eventLoopUtilization: number | null;
}

/** A broker's own totals at one moment, as it reports them (Redis: INFO cpu and memory). */
export interface BrokerReading {
  cpuUserMicros: number;
  cpuSystemMicros: number;
  rssBytes: number;
}

/** CPU figures between two readings of CPU totals in microseconds, for `imageCount` images. */
function cpuBetween(
  start: { cpuUserMicros: number; cpuSystemMicros: number },
  end: { cpuUserMicros: number; cpuSystemMicros: number },
  imageCount: number,
) {
  const cpuUserMs = (end.cpuUserMicros - start.cpuUserMicros) / 1000;
  const cpuSystemMs = (end.cpuSystemMicros - start.cpuSystemMicros) / 1000;
  const cpuMs = cpuUserMs + cpuSystemMs;
  return { cpuUserMs, cpuSystemMs, cpuMs, cpuMsPerImage: imageCount > 0 ? cpuMs / imageCount : 0 };
}

/** The cost between two readings of one side, for `imageCount` images. */
export function sideCost(
  start: ResourceReading,
  end: ResourceReading,
  peakRssBytes: number,
  imageCount: number,
): SideCost {
  const activeMs = end.eluActiveMs - start.eluActiveMs;
  const idleMs = end.eluIdleMs - start.eluIdleMs;
  return {
    ...cpuBetween(start, end, imageCount),
    peakRssBytes,
    eventLoopUtilization: activeMs + idleMs > 0 ? activeMs / (activeMs + idleMs) : 0,
  };
}

/**
 * The share of the event loop's busy time between two readings that `partMs` of work done on the
 * loop in that span took (the receiver's hashing), 0 to 1; null when the loop was never busy.
 * Capped at 1: the two are timed by different clocks (the part by hrtime, the loop by libuv), so
 * a part that filled the span can read a hair above it.
 */
export function busyShare(partMs: number, start: ResourceReading, end: ResourceReading): number | null {
  const activeMs = end.eluActiveMs - start.eluActiveMs;
  return activeMs > 0 ? Math.min(1, partMs / activeMs) : null;
}

/** A broker's cost between two of its readings, for `imageCount` images. */
export function brokerCost(start: BrokerReading, end: BrokerReading, imageCount: number): SideCost {
  return {
    ...cpuBetween(start, end, imageCount),
    peakRssBytes: Math.max(start.rssBytes, end.rssBytes),
    eventLoopUtilization: null,
  };
}

/** Each side's cost of the section; null for a side that could not measure (section failed early, or no broker). */
export interface SectionCost {
  transmitter: SideCost | null;
  receiver: SideCost | null;
  /** The broker the transport goes through: Redis from its own counters, another on this host from /proc. */
  broker: SideCost | null;
}
