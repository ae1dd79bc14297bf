import { type LiveEventData, type LiveEventName, mergeSeconds } from './live-events.js';

// The receiver's memory of a run's events for GET /events: a late or reconnecting client gets what
// it missed from here, and nothing twice. Every event but `second` is kept (a few per section); the
// seconds are kept whole while recent and merged pairwise as they age, so a day-long run holds a
// constant number of them. Pure: ids and contents come from the calls, no clock.
//
// Ids are sequential from 1 over the receiver's life (a run's first event continues from the last
// run's end), so a Last-Event-ID from an earlier run never hides part of the current one. A merged
// `second` goes out under the id of the newest event it absorbed and remembers the oldest
// (`firstId`); since(n) returns the events whose oldest id is after n. A client whose Last-Event-ID
// falls inside a merged span therefore gets what follows that span and not the span again: it
// misses the rest of those aged seconds rather than counting any second twice.

/** One event as stored and sent. */
export interface LiveEvent<N extends LiveEventName = LiveEventName> {
  /** Its SSE id: for a merged `second`, the newest id it absorbed. */
  id: number;
  /** The oldest id it absorbed: `id` unless merged. */
  firstId: number;
  event: N;
  data: LiveEventData[N];
}

/** How many `second` events the history keeps (see {@link LiveEventHistory}). */
export interface HistoryLimits {
  /** `second` events kept in all; beyond it the oldest are merged. */
  maxStoredSeconds: number;
  /** The most recent `second` events, never merged. */
  recentSeconds: number;
}

/**
 * 1,000 seconds stored (about 350 kB of JSON): the last 5 minutes whole, the rest of a day-long
 * section in buckets of about two minutes.
 */
export const DEFAULT_HISTORY_LIMITS: Readonly<HistoryLimits> = Object.freeze({
  maxStoredSeconds: 1000,
  recentSeconds: 300,
});

/** One event as text/event-stream: its id, name and JSON data (JSON.stringify writes no raw newline). */
export function sseMessage(event: LiveEvent): string {
  return `id: ${event.id}\nevent: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** A Last-Event-ID as a number; undefined when absent or not a whole number (treated as a first connection). */
export function parseLastEventId(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,15}$/.test(text.trim())) return undefined;
  return Number(text.trim());
}

/**
 * The events of the current run (the last one once it ended), in id order. Bound: every non-`second` event (1 `run`,
 * 2 per section, 1 `run-end`) and at most max(maxStoredSeconds, recentSeconds + sections) `second` events: a merge
 * joins two neighbours of one section, so only a section with a single aged second cannot give one.
 */
export class LiveEventHistory {
  private events: LiveEvent[] = [];
  private nextId = 1;
  private seconds = 0;

  constructor(private readonly limits: Readonly<HistoryLimits> = DEFAULT_HISTORY_LIMITS) {
    if (!(limits.recentSeconds >= 1 && limits.maxStoredSeconds > limits.recentSeconds))
      throw new RangeError('history limits need 1 <= recentSeconds < maxStoredSeconds');
  }

  /** Events stored now. */
  get size(): number {
    return this.events.length;
  }

  /** `second` events stored now. */
  get storedSeconds(): number {
    return this.seconds;
  }

  /** The newest id given; 0 before any. */
  get lastId(): number {
    return this.nextId - 1;
  }

  /** True when the stored run has ended (its last event is `run-end`). */
  get ended(): boolean {
    return this.events.at(-1)?.event === 'run-end';
  }

  /** True before the first run's first event. */
  get empty(): boolean {
    return this.events.length === 0;
  }

  /** Stores the next event and returns it; a `run` starts a new run's history (ids go on). */
  append<N extends LiveEventName>(event: N, data: LiveEventData[N]): LiveEvent<N> {
    if (event === 'run') {
      this.events = [];
      this.seconds = 0;
    }
    const id = this.nextId++;
    const stored: LiveEvent<N> = { id, firstId: id, event, data };
    this.events.push(stored);
    if (event === 'second') {
      this.seconds++;
      if (this.seconds > this.limits.maxStoredSeconds) this.mergeAged();
    }
    return stored;
  }

  /** What a client whose last event was `lastEventId` (undefined: none) has not had, in order. */
  since(lastEventId: number | undefined): LiveEvent[] {
    if (lastEventId === undefined) return [...this.events];
    // Ids only grow along the list: the first one after lastEventId, found by halving.
    let low = 0;
    let high = this.events.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.events[middle]!.firstId > lastEventId) high = middle;
      else low = middle + 1;
    }
    return this.events.slice(low);
  }

  // Merges neighbouring `second`s of one section, both older than the recent ones, whose merged span
  // is the shortest (the oldest first): aged seconds coarsen evenly, 2 s, 4 s... A batch of merges at
  // a time (an eighth of the aged seconds), each pass one walk of the list, so the cost per second
  // stays a fraction of a walk.
  private mergeAged(): void {
    const { maxStoredSeconds, recentSeconds } = this.limits;
    const target = maxStoredSeconds + 1 - Math.max(1, Math.floor((maxStoredSeconds - recentSeconds) / 8));
    while (this.seconds > target) {
      const end = this.agedEnd();
      let shortest = Number.POSITIVE_INFINITY;
      for (let at = 0; at + 1 < end; at++)
        shortest = Math.min(shortest, spanOf(this.events[at]!, this.events[at + 1]!));
      if (shortest === Number.POSITIVE_INFINITY) return;
      const kept: LiveEvent[] = [];
      for (let at = 0; at < this.events.length; at++) {
        const older = this.events[at]!;
        const newer = this.events[at + 1];
        if (this.seconds > target && at + 1 < end && newer !== undefined && spanOf(older, newer) === shortest) {
          const a = older as LiveEvent<'second'>;
          const b = newer as LiveEvent<'second'>;
          kept.push({ id: b.id, firstId: a.firstId, event: 'second', data: mergeSeconds(a.data, b.data) });
          this.seconds--;
          at++;
        } else kept.push(older);
      }
      this.events = kept;
    }
  }

  // The index of the oldest of the recent `second`s: the ones before it may merge.
  private agedEnd(): number {
    let recent = 0;
    let end = this.events.length;
    while (end > 0 && recent < this.limits.recentSeconds) {
      end--;
      if (this.events[end]!.event === 'second') recent++;
    }
    return end;
  }
}

/** The span two neighbouring events would cover merged; infinite unless both are `second`s of one section. */
function spanOf(older: LiveEvent, newer: LiveEvent): number {
  if (older.event !== 'second' || newer.event !== 'second') return Number.POSITIVE_INFINITY;
  const a = older.data as LiveEventData['second'];
  const b = newer.data as LiveEventData['second'];
  return a.sectionId === b.sectionId ? b.second + b.seconds - a.second : Number.POSITIVE_INFINITY;
}
