// What a section cost one side: CPU time, peak memory and event-loop utilization over the span
// from the first recorded image to the last acknowledgement. The readings are taken by the
// services (services/shared/resources.ts); this turns two readings into figures.

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
  /** Largest resident set size seen during the section (sampled, and at both ends). */
  peakRssBytes: number;
  /** Share of the span the event loop was busy, 0 to 1. */
  eventLoopUtilization: number;
}

/** The cost between two readings of one side, for `imageCount` images. */
export function sideCost(start: ResourceReading, end: ResourceReading, peakRssBytes: number, imageCount: number): SideCost {
  const cpuUserMs = (end.cpuUserMicros - start.cpuUserMicros) / 1000;
  const cpuSystemMs = (end.cpuSystemMicros - start.cpuSystemMicros) / 1000;
  const activeMs = end.eluActiveMs - start.eluActiveMs;
  const idleMs = end.eluIdleMs - start.eluIdleMs;
  const cpuMs = cpuUserMs + cpuSystemMs;
  return {
    cpuUserMs,
    cpuSystemMs,
    cpuMs,
    cpuMsPerImage: imageCount > 0 ? cpuMs / imageCount : 0,
    peakRssBytes,
    eventLoopUtilization: activeMs + idleMs > 0 ? activeMs / (activeMs + idleMs) : 0,
  };
}
