import { ROUND_TRIP_RECORD_VALUES, ROUND_TRIPS_PER_BATCH } from '../core/control/control-protocol.js';

// Each recorded image's round trip leaves the transmitter for its receiver's record in batches, as
// acks come, so neither side keeps a figure per image: a batch is sent when it is full or a
// second old, one at a time per receiver and in order, off the send loop's path (the POST goes
// out while images keep flowing).

/** How often a batch that is not full goes anyway, in ms: the receiver's per-image file lags by at most this. */
const SHIP_INTERVAL_MS = 1000;

/** Batches one receiver's round trips and posts them in order; a failed post is kept as the first failure. */
export class RoundTripShipper {
  private batch = new Float64Array(ROUND_TRIPS_PER_BATCH * ROUND_TRIP_RECORD_VALUES);
  private filled = 0;
  // Image records among those batched: `shipped` counts images only, as the receiver's record checks it.
  private imagesFilled = 0;
  private chain: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  /** Image records handed to post so far (commands' not counted). */
  shipped = 0;
  failure: Error | undefined;

  constructor(private readonly post: (body: Buffer) => Promise<void>) {
    this.timer = setInterval(() => this.ship(), SHIP_INTERVAL_MS).unref();
  }

  /** One image's round trip to this receiver (NaN due lag in a closed loop). */
  add(image: number, rttNs: number, dueLagNs: number): void {
    this.imagesFilled++;
    this.put(image, rttNs, dueLagNs);
  }

  /** One command's round trip, by its seq (commandSeq: above every image), in the same batches as the images'. */
  addCommand(seq: number, rttNs: number): void {
    this.put(seq, rttNs, NaN);
  }

  private put(image: number, rttNs: number, dueLagNs: number): void {
    const at = this.filled * ROUND_TRIP_RECORD_VALUES;
    this.batch[at] = image;
    this.batch[at + 1] = rttNs;
    this.batch[at + 2] = dueLagNs;
    if (++this.filled === ROUND_TRIPS_PER_BATCH) this.ship();
  }

  /** Ships what is batched and waits for every post; throws the first failure. */
  async flush(): Promise<void> {
    clearInterval(this.timer);
    this.ship();
    await this.chain;
    if (this.failure) throw this.failure;
  }

  /** Stops the timer without shipping (a section that failed). */
  close(): void {
    clearInterval(this.timer);
  }

  private ship(): void {
    if (this.filled === 0) return;
    const body = Buffer.from(
      this.batch.buffer,
      0,
      this.filled * ROUND_TRIP_RECORD_VALUES * Float64Array.BYTES_PER_ELEMENT,
    );
    this.shipped += this.imagesFilled;
    this.batch = new Float64Array(ROUND_TRIPS_PER_BATCH * ROUND_TRIP_RECORD_VALUES);
    this.filled = 0;
    this.imagesFilled = 0;
    this.chain = this.chain.then(() =>
      this.post(body).catch((err: unknown) => {
        this.failure ??= err instanceof Error ? err : new Error(String(err));
      }),
    );
  }
}
