import { imageChecksum } from '../core/wire/checksum.js';

// Verification after the ack, on the receiver's one thread. The receiver acknowledges an image as
// soon as the gate has it, then hands the bytes here; they are hashed in the event loop's check
// phase (setImmediate), after every I/O callback that was ready, so an image already waiting in a
// socket is stamped and acknowledged before the hash of the one before it. Everything queued is
// hashed in one go (a run), so the queue never holds more than one loop turn's images.
//
// What that does not avoid: bytes that arrive DURING a run wait for it to end before any callback
// reads them, so their image is stamped up to a run later; and when the thread is the bottleneck
// (a full window), every ms spent hashing is a ms the images behind it queue. The receiver reports
// both per section (the longest run, and hashing's share of the thread's busy time).
// Why not another thread: the checksum of a 533 KiB image (XXH3-64) takes 25–34 µs here, and handing it to a
// worker_thread (a copy into shared memory, since the payload is a view of socket buffers that
// cannot be transferred, plus a postMessage each way) cost this thread ~90 µs per image on this
// 2-core machine, before the worker's own CPU, taken from the transmitter's core.

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

  constructor(
    /** Told the length of every run of hashes (one flush, one or more images). */
    private readonly onRun: (runNs: bigint) => void = () => undefined,
    /** The checksum; injected only by tests that need a hash of known duration. */
    private readonly hash: (payload: Buffer | readonly Buffer[]) => bigint = imageChecksum,
  ) {}

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
    if (jobs.length === 0) return;
    const runStartNs = process.hrtime.bigint();
    for (const job of jobs) {
      const startNs = process.hrtime.bigint();
      const checksumOk = this.hash(job.payload) === job.expected;
      job.done(checksumOk, process.hrtime.bigint() - startNs);
    }
    this.onRun(process.hrtime.bigint() - runStartNs);
  }
}
