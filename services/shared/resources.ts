import { performance } from 'node:perf_hooks';
import type { ResourceReading } from '../core/model/cost.js';

/** This process's CPU and event-loop totals now. */
export function readResources(): ResourceReading {
  const cpu = process.cpuUsage();
  const elu = performance.eventLoopUtilization();
  return { cpuUserMicros: cpu.user, cpuSystemMicros: cpu.system, eluIdleMs: elu.idle, eluActiveMs: elu.active };
}

/**
 * Tracks the peak resident set size from start() to stop(): read at both ends and every
 * `intervalMs` between (an unref'd timer, a few microseconds per tick, never per image).
 */
export class RssPeakTracker {
  private peakBytes = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly intervalMs = 50) {}

  start(): void {
    this.stop();
    this.peakBytes = process.memoryUsage.rss();
    this.timer = setInterval(() => this.sample(), this.intervalMs).unref();
  }

  /** Stops sampling and returns the peak seen. */
  stop(): number {
    if (this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.sample();
    }
    return this.peakBytes;
  }

  private sample(): void {
    this.peakBytes = Math.max(this.peakBytes, process.memoryUsage.rss());
  }
}
