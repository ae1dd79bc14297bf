// The transmitter side's one answer to backpressure. The caller stamps a frame when the window
// admits it and pushes it here at once; the queue hands frames to the library in order, and
// while the library pushes back it holds them (references, never copies). So every wait for the
// library or the kernel is inside the waiting frame's time, and no transport delays a stamp.

/**
 * Hands one frame (header and image, or any two-part message: the zeromq receiver queues its
 * [peer, ack] sends the same way) to the library: returns undefined when the library can take the
 * next one at once, or a promise that settles when it can (a drain, a pending send resolving). A
 * rejection is the link's failure.
 */
export type WriteFrame = (header: Buffer, payload: Buffer) => Promise<void> | undefined;

/** Frames waiting for the library, in order; see the module comment. */
export class SendQueue {
  private readonly held: [Buffer, Buffer][] = [];
  private waiting = false;
  private stopped = false;

  constructor(
    private readonly write: WriteFrame,
    private readonly onError: (err: Error) => void,
  ) {}

  /** Hands the frame to the library now, or holds it until the library takes more. */
  push(header: Buffer, payload: Buffer): void {
    if (this.stopped) return;
    if (this.waiting) {
      this.held.push([header, payload]);
      return;
    }
    this.writeOne(header, payload);
  }

  /** Drops every held frame and stops writing: the link is closing or has failed. */
  stop(): void {
    this.stopped = true;
    this.held.length = 0;
  }

  private writeOne(header: Buffer, payload: Buffer): void {
    let wait: Promise<void> | undefined;
    try {
      wait = this.write(header, payload);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (wait === undefined) return;
    this.waiting = true;
    wait.then(
      () => {
        this.waiting = false;
        this.pump();
      },
      (err: unknown) => this.fail(err),
    );
  }

  private pump(): void {
    while (!this.stopped && !this.waiting && this.held.length > 0) {
      const [header, payload] = this.held.shift()!;
      this.writeOne(header, payload);
    }
  }

  private fail(err: unknown): void {
    this.stop();
    this.onError(err instanceof Error ? err : new Error(String(err)));
  }
}
