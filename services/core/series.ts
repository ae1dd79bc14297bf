/** A distribution of one second's times, in ms; p99 null below 100 times (MIN_SAMPLES_FOR.p99 in stats.ts). */
export interface SecondDistribution {
  minMs: number;
  p50Ms: number;
  p99Ms: number | null;
  maxMs: number;
}

/** One second of a section's measured span, by arrival on the receiver's clock. */
export interface SecondSample {
  /** Whole seconds since the section's measured span began (its first recorded image's stamp). */
  second: number;
  /** Images that arrived in this second, intact or not. */
  images: number;
  /** Bytes of the intact images among them. */
  intactBytes: number;
  /** One-way times of the intact images that arrived in it; null when none. */
  oneWay: SecondDistribution | null;
  /** Round trips (stamp -> ack processed, transmitter's clock) of the images that arrived in it; null when none. */
  rtt: SecondDistribution | null;
}
