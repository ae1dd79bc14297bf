// The receiver's record holds each verified arrival until the transmitter's batch brings its round trip (a second at
// most): here, in columns of typed arrays by image, so holding one makes no object on the path every image takes
// (recorder.ts). The columns double when a batch's worth no longer fits (never per image); an image still waiting
// when a later one needs its place (a round trip that never came) moves to a map of its own.

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

/** Places the columns start with: a batch at a modest rate; they double as the rate asks. */
const INITIAL_SLOTS = 1024;

/** Verified arrivals waiting for their round trips, by image: see the module comment. */
export class AwaitingRoundTrips {
  // The image (from 1) in each place; 0: free.
  private images = new Float64Array(INITIAL_SLOTS);
  private oneWayNs = new Float64Array(INITIAL_SLOTS);
  private intact = new Uint8Array(INITIAL_SLOTS);
  private readonly displaced = new Map<number, Verified>();
  private inColumns = 0;
  /** The image {@link take} took last: its one-way time and whether it was intact. */
  takenOneWayNs = 0;
  takenIntact = false;

  /** Images held. */
  get size(): number {
    return this.inColumns + this.displaced.size;
  }

  /** Holds image `image` (from 1). */
  set(image: number, oneWayNs: number, intact: boolean): void {
    let slot = image & (this.images.length - 1);
    const previous = this.images[slot]!;
    if (previous !== 0 && previous !== image) {
      // Half full: the flow outgrew the columns. Else the one there waits for a round trip that may never come.
      if (this.inColumns * 2 >= this.images.length) {
        this.grow();
        slot = image & (this.images.length - 1);
      }
      const there = this.images[slot]!;
      if (there !== 0) {
        this.displaced.set(there, { oneWayNs: this.oneWayNs[slot]!, intact: this.intact[slot] === 1 });
        this.images[slot] = 0;
        this.inColumns--;
      }
    }
    if (this.images[slot] === 0) this.inColumns++;
    this.images[slot] = image;
    this.oneWayNs[slot] = oneWayNs;
    this.intact[slot] = intact ? 1 : 0;
  }

  /** Takes image `image` out into the `taken…` fields; false when it is not held. */
  take(image: number): boolean {
    const slot = image & (this.images.length - 1);
    if (this.images[slot] === image) {
      this.images[slot] = 0;
      this.inColumns--;
      this.takenOneWayNs = this.oneWayNs[slot]!;
      this.takenIntact = this.intact[slot] === 1;
      return true;
    }
    const held = this.displaced.size === 0 ? undefined : this.displaced.get(image);
    if (held === undefined) return false;
    this.displaced.delete(image);
    this.takenOneWayNs = held.oneWayNs;
    this.takenIntact = held.intact;
    return true;
  }

  /** The images held, ascending (read once, at the section's end, to take each out). */
  imagesHeld(): number[] {
    const images: number[] = [...this.displaced.keys()];
    for (let slot = 0; slot < this.images.length && images.length < this.size; slot++)
      if (this.images[slot] !== 0) images.push(this.images[slot]!);
    return images.sort((a, b) => a - b);
  }

  // Twice the places, each image moved to its new one (one whose new place is taken waits in the map).
  private grow(): void {
    const { images, oneWayNs, intact } = this;
    const slots = images.length * 2;
    this.images = new Float64Array(slots);
    this.oneWayNs = new Float64Array(slots);
    this.intact = new Uint8Array(slots);
    this.inColumns = 0;
    for (let from = 0; from < images.length; from++) {
      const image = images[from]!;
      if (image !== 0) this.set(image, oneWayNs[from]!, intact[from] === 1);
    }
  }
}
