// A flood of connections once wrote one warning per closed connection: 34,130 lines (8 MB) in one run, which hide
// everything else in the log and cost the receiver the CPU it was there to measure. So such warnings go through a
// throttle: the first of a cause is written at once, the rest of that cause within the window are only counted, and
// one line stands for them when the window is over. A cause is a short fixed text (never an address), so the
// throttle holds a handful of entries.

/** One line to write: its cause, and how many events it stands for (itself included). */
export interface ThrottledLine {
  cause: string;
  count: number;
}

interface CauseWindow {
  /** When this cause's last line was written (or its first event came): no other line of it until a window after. */
  lineAtMs: number;
  /** Events of this cause since that line, not yet written. */
  held: number;
}

/**
 * At most one line per cause per `windowMs`, each with the count of events it stands for; the caller brings the
 * clock (any monotonic milliseconds) and writes the lines.
 */
export class LogThrottle {
  private readonly causes = new Map<string, CauseWindow>();

  constructor(readonly windowMs = 1000) {}

  /**
   * One event of `cause` at `nowMs`: how many events a line written now stands for (this one and those held before
   * it), or 0 when the line is held back for {@link due}.
   */
  note(cause: string, nowMs: number): number {
    const window = this.causes.get(cause);
    if (window === undefined || nowMs - window.lineAtMs >= this.windowMs) {
      const count = 1 + (window?.held ?? 0);
      this.causes.set(cause, { lineAtMs: nowMs, held: 0 });
      return count;
    }
    window.held++;
    return 0;
  }

  /** The lines held back whose window is over at `nowMs`, in their causes' first order; the caller writes each. */
  due(nowMs: number): ThrottledLine[] {
    const lines: ThrottledLine[] = [];
    for (const [cause, window] of this.causes) {
      if (nowMs - window.lineAtMs < this.windowMs) continue;
      if (window.held === 0) {
        // Quiet for a whole window: forgotten, so the next event of it is written at once.
        this.causes.delete(cause);
        continue;
      }
      lines.push({ cause, count: window.held });
      this.causes.set(cause, { lineAtMs: nowMs, held: 0 });
    }
    return lines;
  }

  /** When the next held-back line falls due, or undefined when none is held. */
  nextDueMs(): number | undefined {
    let next: number | undefined;
    for (const window of this.causes.values())
      if (window.held > 0) next = Math.min(next ?? Infinity, window.lineAtMs + this.windowMs);
    return next;
  }
}
