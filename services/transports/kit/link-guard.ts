import { ErrorCode, ItbError } from '../../core/errors.js';
import type { Ack } from '../../core/wire/frame.js';
import type { TransmitterLink } from '../contract.js';
import type { SendQueue } from './send-queue.js';

// The contract's rules for a link's end, kept in one place: a failure is reported at most once,
// never after close() began; once the link failed or is closing nothing more is sent and no ack
// is reported (a library that reconnects by itself must not carry on behind the run's back); and
// close() runs once however often it is called.

/** One link's failure-and-close state; see the module comment. */
export class LinkGuard {
  private failure: Error | undefined;
  private closing: Promise<void> | undefined;
  private queue: SendQueue | undefined;
  private commands: SendQueue | undefined;

  constructor(
    private readonly onFailure: (err: Error) => void,
    /** What the link is, for the messages it words ("TCP link to 127.0.0.1:9000"). */
    readonly what: string,
  ) {}

  /** True once the link failed or close() began: nothing more may be sent or reported. */
  get ended(): boolean {
    return this.failure !== undefined || this.closing !== undefined;
  }

  /** True once close() began. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** Reports the link's failure and stops its sends, unless it already ended. */
  fail(err: Error): void {
    if (this.ended) return;
    this.failure = err;
    this.queue?.stop();
    this.commands?.stop();
    this.onFailure(err);
  }

  /** Reports a transport-level failure worded from `reason`. */
  failWith(reason: string, cause?: unknown): void {
    if (this.ended) return;
    this.fail(new ItbError(ErrorCode.transport, `${this.what}: ${reason}`, { cause }));
  }

  /** Passes an ack on, unless the link already ended. */
  ack(onAck: (ack: Ack) => void, ack: Ack): void {
    if (!this.ended) onAck(ack);
  }

  /**
   * The link over `queue`: send() feeds it until the link ends; close() stops it and runs `release` once. With
   * `openCommands` (a lane of the link's own for COMMAND_RATE), sendCommand() feeds the queue it opens at the first
   * command, the same way: opened later, it never sits idle through the warm-up, where a receiver closes what falls
   * silent for IMAGE_TIMEOUT_MS.
   */
  link(queue: SendQueue, release: () => Promise<void>, openCommands?: () => SendQueue): TransmitterLink {
    this.queue = queue;
    const link: TransmitterLink = {
      send: (header, payload) => {
        if (!this.ended) queue.push(header, payload);
      },
      close: () => {
        this.closing ??= (async () => {
          queue.stop();
          this.commands?.stop();
          await release();
        })();
        return this.closing;
      },
    };
    if (openCommands !== undefined)
      link.sendCommand = (header, payload) => {
        if (this.ended) return;
        this.commands ??= openCommands();
        this.commands.push(header, payload);
      };
    return link;
  }
}
