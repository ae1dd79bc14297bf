import { imageChecksum } from '../core/checksum.js';

// Verification off the critical path. The receiver acknowledges an image as soon as the gate has
// it, then hands the bytes here; they are hashed in the event loop's check phase (setImmediate),
// after every I/O callback that was ready, so an image already waiting in a socket is stamped and
// acknowledged before the hash of the one before it. Everything queued is hashed in one go, so the
// queue never holds more than one loop turn's images.

/** One image waiting for its hash; `done` gets the verdict and the time the hash took. */
interface Job {
  payload: Buffer | readonly Buffer[];
  expected: bigint;
  done(checksumOk: boolean, hashNs: bigint): void;
}

/** Hashes received images after their acks; see the module comment. */
export class Verifier {
  private jobs: Job[] = [];
  private scheduled: NodeJS.Immediate | undefined;

  /** Queues an image for hashing; `done` is called once, with the verdict. */
  enqueue(payload: Buffer | readonly Buffer[], expected: bigint, done: Job['done']): void {
    this.jobs.push({ payload, expected, done });
    this.scheduled ??= setImmediate(() => this.flush());
  }

  /** Hashes everything queued now: a section's result waits for its last verdicts this way. */
  flush(): void {
    if (this.scheduled !== undefined) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const jobs = this.jobs;
    this.jobs = [];
    for (const job of jobs) {
      const startNs = process.hrtime.bigint();
      const checksumOk = imageChecksum(job.payload) === job.expected;
      job.done(checksumOk, process.hrtime.bigint() - startNs);
    }
  }
}
