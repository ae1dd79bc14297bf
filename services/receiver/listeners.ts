import type { Logger } from 'pino';
import type { Config } from '../core/config/config.js';
import type { ListenerStatus } from '../core/control/control-protocol.js';
import type { BrokerReading } from '../core/model/cost.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import type { Ack } from '../core/wire/frame.js';
import { ImagePartHasher } from '../core/wire/checksum.js';
import type { ReceivedFrame, ReceiverListener, SectionOpening } from '../transports/contract.js';
import { transportByName } from '../transports/index.js';
import type { Doorkeeper } from './door.js';

/** Where every listener delivers: its frames, the inputs it rejected, its failure (the receiver's run session). */
export interface FrameSink {
  /** Records a frame and returns its ack at once: called on every frame's path, so it never waits. */
  deliver(frame: ReceivedFrame): Ack;
  /** An input that was not a frame (malformed, too large) was rejected by `transport`'s listener. */
  onReject(transport: string, reason: string): void;
  /**
   * A listener that was up can no longer receive anything (its broker dropped it): the open section of its transport
   * fails with `reason`.
   */
  onFailure(transport: string, reason: string): void;
}

/** Pause between attempts to start a listener that is down. */
const RETRY_INTERVAL_MS = 5000;

/** A listener's error while its first attempt is under way. */
const STARTING = 'still starting: its first attempt to listen is under way';

/**
 * The receiver's listeners, one per configured transport. One that fails to start, or fails later
 * (its broker went away), is reported unavailable with the reason and started again in the
 * background every few seconds, so a Redis that comes back is used again without a restart.
 */
export class Listeners {
  private readonly open = new Map<string, ReceiverListener>();
  private readonly statuses: Record<string, ListenerStatus> = {};
  /** The transports whose listener's first attempt has not ended. */
  private readonly starting = new Set<string>();
  private readonly retries = new Map<string, NodeJS.Timeout>();
  private closed = false;

  constructor(
    private readonly config: Readonly<Config>,
    private readonly log: Logger,
    private readonly doorkeeper: Doorkeeper,
  ) {}

  /**
   * Starts every configured listener at once, delivering into `sink` (retries too); failures are recorded, not thrown.
   * Each binds its own port or socket file, or connects to its broker, so none waits for another: with brokers down,
   * the slowest first attempt (a broker's connect bound) is the whole wait, not their sum. Until its first attempt
   * ends, a listener is reported not ready and retrying, and named by {@link waitingFor}.
   */
  async startAll(sink: FrameSink): Promise<void> {
    for (const name of this.config.transports) {
      this.starting.add(name);
      this.statuses[name] = { ready: false, port: this.config.ports[name] ?? 0, error: STARTING, retrying: true };
    }
    await Promise.all(
      this.config.transports.map((name) => this.start(name, sink).finally(() => this.starting.delete(name))),
    );
  }

  /** The transports whose listener is still on its first attempt, in TRANSPORTS order. */
  waitingFor(): string[] {
    return this.config.transports.filter((name) => this.starting.has(name));
  }

  /** Every listener's state, by transport name. */
  status(): Record<string, ListenerStatus> {
    return { ...this.statuses };
  }

  /** The broker a transport's listener goes through, read now; undefined when it has none or is not listening. */
  readBroker(name: string): Promise<BrokerReading> | undefined {
    return this.open.get(name)?.readBroker?.();
  }

  /** Lets a transport's listener prepare for a section of its own (a listener that needs nothing is done at once). */
  async openSection(name: string, section: SectionOpening): Promise<void> {
    await this.open.get(name)?.openSection?.(section);
  }

  /** Lets a transport's listener release what it prepared for the section that ended. */
  async closeSection(name: string): Promise<void> {
    await this.open.get(name)?.closeSection?.();
  }

  /** Closes every listener and stops the retries. */
  async closeAll(): Promise<void> {
    this.closed = true;
    for (const timer of this.retries.values()) clearTimeout(timer);
    this.retries.clear();
    const closing = [...this.open.values()].map((l) => l.close());
    this.open.clear();
    await Promise.all(closing);
  }

  private async start(name: string, sink: FrameSink): Promise<void> {
    const transport = transportByName(name);
    const port = this.config.ports[name] ?? 0;
    await this.open.get(name)?.close();
    this.open.delete(name);
    try {
      const listener = await transport.listen({
        host: this.config.receiverHost,
        bindHost: this.config.bindHost,
        port,
        url: this.config.urls[name],
        socketPath: this.config.socketPaths[name],
        password: this.config.brokerPasswords[name],
        maxImageBytes: this.config.maxImageBytes,
        door: this.doorkeeper.door(name),
        idleTimeoutMs: this.config.imageTimeoutMs,
        // A byte stream sums a large image's parts as it reads them, in cache; nothing is summed with VERIFY=false.
        ...(this.config.verify ? { partHasher: () => new ImagePartHasher() } : {}),
        log: this.log.child({ transport: name }),
        deliver: (frame) => sink.deliver(frame),
        onReject: (reason) => sink.onReject(name, reason),
        onFailure: (reason) => {
          this.statuses[name] = {
            ready: false,
            port: this.statuses[name]?.port ?? port,
            error: reason,
            retrying: true,
          };
          this.log.error({ transport: name, reason }, 'listener failed; trying to listen again in the background');
          sink.onFailure(name, reason);
          this.retryLater(name, sink);
        },
      });
      if (this.closed) {
        // A background retry that finished after closeAll(): nothing may stay open.
        await listener.close();
        return;
      }
      this.open.set(name, listener);
      this.statuses[name] = { ready: true, port: listener.port, error: null, retrying: false };
      this.log.info({ transport: name, port: listener.port }, 'listening');
    } catch (err) {
      // A missing setting (REDIS_URL, NATS_URL) stays missing: no retry.
      const retrying = !(err instanceof ItbError && err.code === ErrorCode.config);
      this.statuses[name] = { ready: false, port, error: errorMessage(err), retrying };
      if (!retrying) {
        this.log.error(
          { transport: name, err: errorMessage(err) },
          'listener cannot start; its sections will be reported as failed',
        );
        return;
      }
      this.log.error(
        { transport: name, err: errorMessage(err) },
        'listener failed to start; its section will be reported as failed until a retry succeeds',
      );
      this.retryLater(name, sink);
    }
  }

  private retryLater(name: string, sink: FrameSink): void {
    if (this.closed || this.retries.has(name)) return;
    const timer = setTimeout(() => {
      this.retries.delete(name);
      if (!this.closed && !this.statuses[name]?.ready) void this.start(name, sink);
    }, RETRY_INTERVAL_MS);
    timer.unref();
    this.retries.set(name, timer);
  }
}
