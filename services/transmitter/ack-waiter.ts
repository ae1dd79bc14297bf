import { ErrorCode, ItbError } from '../core/errors.js';

// How a section's send loops wait for acks (flight.ts): for a free window slot before each image once the windows are
// full, and for the last acks. With a full window a wait comes with every image, so a wait makes as little as it can:
// nothing when there is nothing to wait for, else one promise, settled from the ack that ends it (no async function
// of its own, no timer of its own: one timer serves every wait).

/**
 * Waits for acks: {@link until} resolves when `ready()` holds; rejects on a link failure, or when no ack has arrived
 * for `timeoutMs` (the clock restarts at every ack, so slow but moving transfers go on).
 */
export class AckWaiter {
  failure: Error | undefined;
  lastProgressMs = Date.now();
  /**
   * For a transport that drops images by design: after `afterMs()` of silence, `settle()` settles
   * what is outstanding as lost (true when it settled any), which counts as progress.
   */
  silence: { afterMs: () => number; settle: () => boolean } | undefined;
  // The wait in progress (one at a time): what it waits for, how long it may go without an ack, and how it ends.
  private ready: (() => boolean) | undefined;
  private timeoutMs = 0;
  private waitingFor: () => string = () => '';
  private resolveWait: (() => void) | undefined;
  private rejectWait: ((err: Error) => void) | undefined;
  // A wait's promise executor, made once.
  private readonly park = (resolve: () => void, reject: (err: Error) => void): void => {
    this.resolveWait = resolve;
    this.rejectWait = reject;
  };
  // One timer for every wait, armed for the earliest moment a wait must look again (its timeout, a silence to
  // settle) and left armed across waits, so a wait per image makes no timer.
  private timer: NodeJS.Timeout | undefined;
  private timerAtMs = Number.POSITIVE_INFINITY;
  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.timerAtMs = Number.POSITIVE_INFINITY;
    this.look();
  };

  /** An ack was processed: progress, and the wait in progress looks again. */
  notify(): void {
    this.lastProgressMs = Date.now();
    this.look();
  }

  /** A link failed: the wait in progress, and every later one, rejects with `err` (the first failure kept). */
  fail(err: Error): void {
    this.failure ??= err;
    this.look();
  }

  /**
   * Waits until `ready()` holds; `waitingFor()` words what was awaited in a timeout's error. Undefined when it holds
   * now and nothing failed: there is nothing to wait for, and nothing is made.
   */
  until(ready: () => boolean, timeoutMs: number, waitingFor: () => string): Promise<void> | undefined {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (ready()) return undefined;
    this.ready = ready;
    this.timeoutMs = timeoutMs;
    this.waitingFor = waitingFor;
    const wait = new Promise<void>(this.park);
    this.look();
    return wait;
  }

  // The wait in progress looks at where things stand: it ends (ready, a failure, a timeout), or settles a silence and
  // looks again, or arms the timer for the moment it must look next.
  private look(): void {
    const ready = this.ready;
    if (ready === undefined) return;
    for (;;) {
      if (this.failure !== undefined || ready()) {
        this.end(this.failure);
        return;
      }
      const silentMs = Date.now() - this.lastProgressMs;
      if (
        this.silence !== undefined &&
        silentMs >= Math.min(this.timeoutMs, this.silence.afterMs()) &&
        this.silence.settle()
      ) {
        this.lastProgressMs = Date.now();
        continue;
      }
      const remainingMs = this.lastProgressMs + this.timeoutMs - Date.now();
      if (remainingMs <= 0) {
        this.end(
          new ItbError(
            ErrorCode.timeout,
            `no acknowledgement for ${this.timeoutMs} ms (IMAGE_TIMEOUT_MS) while waiting for ${this.waitingFor()}`,
          ),
        );
        return;
      }
      const untilSilenceMs =
        this.silence === undefined
          ? remainingMs
          : Math.max(1, this.lastProgressMs + this.silence.afterMs() - Date.now());
      this.wakeAt(Date.now() + Math.min(remainingMs, untilSilenceMs));
      return;
    }
  }

  // Ends the wait in progress: resolved, or rejected with `failure`. Between waits the timer holds nothing open.
  private end(failure: Error | undefined): void {
    const resolve = this.resolveWait;
    const reject = this.rejectWait;
    this.ready = undefined;
    this.resolveWait = undefined;
    this.rejectWait = undefined;
    this.timer?.unref();
    if (failure === undefined) resolve?.();
    else reject?.(failure);
  }

  // Makes sure the wait looks again by `atMs`: an earlier timer still armed does it first (the wait then arms for its
  // own moment), so a timer is made only once per timeout while acks keep coming.
  private wakeAt(atMs: number): void {
    if (this.timer !== undefined && this.timerAtMs <= atMs) {
      this.timer.ref();
      return;
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAtMs = atMs;
    this.timer = setTimeout(this.onTimer, Math.max(0, atMs - Date.now()));
  }
}
