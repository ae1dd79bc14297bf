// The receiver's record holds each verified arrival until the transmitter's batch brings its round trip (a second at
// most): here, in a ring of typed arrays, off the hot path's allocations (recorder.ts).

/** A verified arrival waiting for its round trip. */
export interface Verified {
  oneWayNs: number;
  intact: boolean;
}

/** A round trip waiting for its verified arrival. */
export interface RoundTrip {
  rttNs: number;
  dueLagNs: number;
}

/**
 * Verified arrivals waiting for their round trips, by image: a ring of typed arrays, so holding an
 * image costs no allocation and no hashing (it is on the receiver's path for every image); a map
 * only for one whose place a later image needs while it still waits.
 */
export class AwaitingRoundTrips {
  private static readonly SIZE = 1 << 18;
  private readonly images = new Float64Array(AwaitingRoundTrips.SIZE);
  private readonly oneWayNs = new Float64Array(AwaitingRoundTrips.SIZE);
  private readonly intact = new Uint8Array(AwaitingRoundTrips.SIZE);
  private readonly overflow = new Map<number, Verified>();
  private inRing = 0;

  /** Images held. */
  get size(): number {
    return this.inRing + this.overflow.size;
  }

  /** Holds image `image` (from 1). */
  set(image: number, verified: Verified): void {
    const slot = image & (AwaitingRoundTrips.SIZE - 1);
    const previous = this.images[slot]!;
    if (previous !== 0)
      this.overflow.set(previous, { oneWayNs: this.oneWayNs[slot]!, intact: this.intact[slot] === 1 });
    else this.inRing++;
    this.images[slot] = image;
    this.oneWayNs[slot] = verified.oneWayNs;
    this.intact[slot] = verified.intact ? 1 : 0;
  }

  /** Takes image `image` out; undefined when it is not held. */
  take(image: number): Verified | undefined {
    const slot = image & (AwaitingRoundTrips.SIZE - 1);
    if (this.images[slot] === image) {
      this.images[slot] = 0;
      this.inRing--;
      return { oneWayNs: this.oneWayNs[slot]!, intact: this.intact[slot] === 1 };
    }
    const held = this.overflow.get(image);
    if (held !== undefined) this.overflow.delete(image);
    return held;
  }

  /** Every image held, taken out. */
  *drain(): Generator<[number, Verified]> {
    for (let slot = 0; slot < AwaitingRoundTrips.SIZE && this.inRing > 0; slot++) {
      const image = this.images[slot]!;
      if (image === 0) continue;
      this.images[slot] = 0;
      this.inRing--;
      yield [image, { oneWayNs: this.oneWayNs[slot]!, intact: this.intact[slot] === 1 }];
    }
    yield* this.overflow;
    this.overflow.clear();
  }
}
