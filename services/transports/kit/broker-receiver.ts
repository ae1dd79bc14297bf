import { once } from '../../shared/once.js';
import type { ReceiverListener, ReceiverOptions, SectionOpening } from '../contract.js';

// Every broker transport's receiver (amqp, mqtt, nats, nats-jetstream and the Redis ones) has one
// skeleton, written here once. It reads from places named per section: openSection() ends the
// section still open, if any, then prepares the new one before the transmitter is told to
// connect; closeSection() takes it out, so that nothing more is read into it, and lets go of it.
// It fails at most once, when the broker drops it, and never while it closes itself: its own close
// ends the very connections whose end would otherwise read as a failure. close() takes the open
// section out first too. A transport gives only its library's calls (BrokerSectionCalls) and
// says when the broker dropped it (fail).

/** How a broker receiver words its one failure: "lost its connection to <server> at <shown>". */
export interface BrokerReceiverNames {
  /** The transport, first word of the log line ("nats-jetstream"). */
  transport: string;
  /** The broker as the failure names it ("RabbitMQ", "NATS JetStream", "Redis"). */
  server: string;
  /** The broker's URL as every message shows it (BrokerAddress.shown). */
  shown: string;
}

/** What one broker transport's receiver does through its library; BrokerReceiver does the rest. */
export interface BrokerSectionCalls<Section> {
  /** Prepares the opening section on the broker (declares, subscribes, creates) and returns it: it is then open. */
  open(opening: SectionOpening): Promise<Section>;
  /**
   * Starts reading the section open() returned, once it is the open one (a subscription whose first message may come
   * in the same chunk as its reply, a reader to move onto it); when it throws, the section is not open. Undefined:
   * open() started it.
   */
  start?(section: Section): Promise<void>;
  /**
   * Lets what is already on its way in be read before the section ends: it is still the open one meanwhile (pub/sub's
   * UNSUBSCRIBE, whose reply follows every message sent before it). Undefined: the section is taken out at once.
   */
  drain?(section: Section): Promise<void>;
  /** Stops reading a section that ended and releases what open() made (unsubscribes, deletes its queue or keys). */
  end(section: Section): Promise<void>;
  /** Lets go of the broker as the listener closes; `open` is the section still open then, if any. */
  close(open: Section | undefined): Promise<void>;
}

/** A broker receiver's open section and its one failure; listener() makes the ReceiverListener around them. */
export class BrokerReceiver<Section> {
  private closingItself = false;
  private failedOnce = false;
  private open: Section | undefined;

  constructor(
    private readonly options: Pick<ReceiverOptions, 'log' | 'onFailure'>,
    private readonly names: BrokerReceiverNames,
  ) {}

  /** The open section; undefined between sections, when nothing is read. */
  get section(): Section | undefined {
    return this.open;
  }

  /** True once close() began: what ends from then on is the listener's own doing. */
  get closing(): boolean {
    return this.closingItself;
  }

  /** True once the listener is closing or has failed: the broker is no longer read. */
  get stopped(): boolean {
    return this.closingItself || this.failedOnce;
  }

  /**
   * Reports, once and never while closing, that the broker dropped the receiver; `reason` is what the library said of
   * it (none: the connection's end says it all). Bound, so that it can be handed to a library as it is.
   */
  readonly fail = (reason?: string): void => {
    if (!this.claimFailure()) return;
    const { server, shown } = this.names;
    this.report(`lost its connection to ${server} at ${shown}${reason === undefined ? '' : `: ${reason}`}`);
  };

  /** Takes the one failure for a caller that words it later (report()); false when closing or already failed. */
  claimFailure(): boolean {
    if (this.stopped) return false;
    this.failedOnce = true;
    return true;
  }

  /** Reports `failure`, whole, unless the listener is closing by now: no more images will arrive. */
  report(failure: string): void {
    if (this.closingItself) return;
    const { transport, server, shown } = this.names;
    this.options.log.error(
      { url: shown, reason: failure },
      `${transport}: receiver can no longer read from ${server}; no more images will arrive`,
    );
    this.options.onFailure?.(failure);
  }

  /** The listener: sections opened and ended through `calls`; `extra` adds the broker's reading. */
  listener(calls: BrokerSectionCalls<Section>, extra: Pick<ReceiverListener, 'readBroker'>): ReceiverListener {
    const endSection = async (): Promise<void> => {
      const ended = this.open;
      if (ended === undefined) return;
      if (calls.drain !== undefined) await calls.drain(ended);
      if (this.open === ended) this.open = undefined;
      await calls.end(ended);
    };
    return {
      port: 0,
      ...extra,
      openSection: async (opening: SectionOpening) => {
        await endSection();
        const section = await calls.open(opening);
        this.open = section;
        if (calls.start === undefined) return;
        try {
          await calls.start(section);
        } catch (err) {
          if (this.open === section) this.open = undefined;
          throw err;
        }
      },
      closeSection: endSection,
      close: once(async () => {
        this.closingItself = true;
        const open = this.open;
        this.open = undefined;
        await calls.close(open);
      }),
    };
  }
}
