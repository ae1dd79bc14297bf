import { Worker } from 'node:worker_threads';

// Waiting for an open-loop due time (RATE) without holding a core. Node's timers count whole milliseconds, and at 2,000
// images/s the next image is due in 0.5 ms, so the old wait spun the event loop on setImmediate for most of every
// period: TCP at RATE=2000 with 1 KB images cost the transmitter 0.53 ms of CPU per image (event loop 100 % busy) where
// the closed loop costs 0.06, billed as the transport's cost, and the spinning process, starved of CPU, fell behind.
// Here a worker thread sleeps in Atomics.wait, whose timeout is fractional, and wakes the event loop by a message
// shortly before the due time; the event loop, idle in the meantime, takes acks as they come. Only the last stretch is
// spun, at most DUE_SPIN_NS.

/**
 * The stretch before a due time spent in the event loop's next turns rather than asleep. A wake
 * from the worker arrives about 0.1 ms (0.03–0.25) after it is asked for on the 2-core build
 * machine (a thread's wake-up from its futex plus the message to the event loop), and every wake
 * costs about 0.1 ms of CPU there whatever the spin. At 2,000 due times a second, a 0.2 ms spin
 * gave a send lag of ~1 µs at p50 for 0.12–0.17 ms of CPU per due time, 0.1 ms ~30 µs for 0.09,
 * 0.05 ms ~80 µs for 0.09: 0.1 ms buys most of the precision for none of the CPU.
 */
export const DUE_SPIN_NS = 100_000n;

// CommonJS, evaluated (not a file): the same source runs under tsc's output and under vitest.
const SLEEPER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const cell = new Int32Array(new SharedArrayBuffer(4));
parentPort.on('message', (wakeNs) => {
  for (;;) {
    const waitMs = Number(wakeNs - process.hrtime.bigint()) / 1e6;
    if (waitMs <= 0) break;
    Atomics.wait(cell, 0, 0, waitMs);
  }
  parentPort.postMessage(null);
});
`;

/**
 * Resolves at due times on the monotonic clock (process.hrtime.bigint) without busy CPU, for one
 * waiter at a time. Open it before the timed path (a worker takes tens of milliseconds to start);
 * close() ends the worker and is safe to call twice.
 */
export class DueTimer {
  private wake: ((err?: Error) => void) | undefined;
  private failure: Error | undefined;

  private constructor(private readonly worker: Worker) {
    worker.on('message', () => this.settle());
    worker.on('error', (err) => this.settle(err));
    worker.on('exit', () => this.settle(new Error('the due-time worker exited')));
  }

  /** Starts the worker thread; resolves once it runs. */
  static async open(): Promise<DueTimer> {
    const worker = new Worker(SLEEPER_SOURCE, { eval: true });
    const timer = new DueTimer(worker);
    await new Promise<void>((resolve, reject) => {
      worker.once('online', resolve);
      worker.once('error', reject);
    });
    return timer;
  }

  private settle(err?: Error): void {
    if (err !== undefined) this.failure ??= err;
    const wake = this.wake;
    this.wake = undefined;
    wake?.(err);
  }

  /**
   * Resolves at `dueNs` (at once when it is past): asleep until DUE_SPIN_NS before it, then the event loop's next
   * turns.
   */
  async until(dueNs: bigint): Promise<void> {
    if (dueNs - process.hrtime.bigint() > DUE_SPIN_NS) {
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve, reject) => {
        this.wake = (err) => (err === undefined ? resolve() : reject(err));
        this.worker.postMessage(dueNs - DUE_SPIN_NS);
      });
    }
    while (process.hrtime.bigint() < dueNs) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Ends the worker; a wait still pending rejects. */
  async close(): Promise<void> {
    this.failure ??= new Error('the due timer is closed');
    await this.worker.terminate();
  }
}
