import { imageChecksum } from '../core/wire/checksum.js';

// Verification on the receiver's one thread, the stamp always first. A byte-stream transport (tcp,
// unix) sums a large image's parts as it reads them, each while the kernel's copy is in cache, and
// hashes the last part after the gate's stamp (kit/stream.ts, kit/gate.ts): the session records
// that verdict at once and nothing comes here. Every other image is acknowledged as soon as the gate
// has it and queued here; the queue is hashed in one go (a run) as soon as the callback that
// delivered it returns (a microtask): after its stamp and its ack, after every other image the same
// callback handed over (all stamped first), and before the next I/O callback can read anything
// else, while the bytes the library has just written are still in cache.
//
// Why not later, as it used to be (setImmediate: after every I/O callback that was ready): one run
// held every image of a loop turn, so a stamp could wait behind several images' hashes; now a stamp
// waits behind at most the hashes of the images one callback delivered (one image, for a large
// one) or one part's (a byte stream). It was also meant to find the bytes still in cache, but that
// did not show here: the median hash after the ack was already 28–46 µs for 533 KiB (the 0.10 ms
// mean was a tail of hashes preempted on two busy cores), and hashing sooner did not lower it
// (docs/measurement.md, Verification). The receiver reports per section the longest run and
// hashing's share of the thread's busy time.
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
  private scheduled = false;

  constructor(
    /** Told the length of every run of hashes (one flush, one or more images). */
    private readonly onRun: (runNs: bigint) => void = () => undefined,
    /** The checksum; injected only by tests that need a hash of known duration. */
    private readonly hash: (payload: Buffer | readonly Buffer[]) => bigint = imageChecksum,
  ) {}

  /** Queues an image for hashing once the current callback returns; `done` is called once, with the verdict. */
  enqueue(payload: Buffer | readonly Buffer[], expected: bigint, done: Job['done']): void {
    this.jobs.push({ payload, expected, done });
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  /** Hashes everything queued now: a section's result waits for its last verdicts this way. */
  flush(): void {
    // A microtask still queued after an early flush finds nothing, or only what came since: hashed as a run of its own.
    this.scheduled = false;
    const jobs = this.jobs;
    if (jobs.length === 0) return;
    this.jobs = [];
    const runStartNs = process.hrtime.bigint();
    for (const job of jobs) {
      const startNs = process.hrtime.bigint();
      const checksumOk = this.hash(job.payload) === job.expected;
      job.done(checksumOk, process.hrtime.bigint() - startNs);
    }
    this.onRun(process.hrtime.bigint() - runStartNs);
  }
}
