// Clock offset between transmitter and receiver, for runs across hosts where the two monotonic
// clocks have different origins. Cristian's method: the transmitter notes its clock before and
// after asking the receiver for its clock; the sample with the shortest round trip bounds the
// error best, by half that round trip.

/** One ping-pong exchange: transmitter clock at send and at reply, receiver clock in between. */
export interface ClockSample {
  transmitterSentNs: bigint;
  receiverNs: bigint;
  transmitterReceivedNs: bigint;
}

/** Receiver clock − transmitter clock, with the bound on its error. */
export interface ClockOffset {
  offsetNs: number;
  /** Half the round trip of the sample used: the true offset lies within ± this. */
  uncertaintyNs: number;
  roundTripNs: number;
  samples: number;
}

/** Estimates the offset from the exchange with the lowest round trip; undefined without samples. */
export function estimateClockOffset(samples: readonly ClockSample[]): ClockOffset | undefined {
  let best: ClockSample | undefined;
  let bestRoundTrip = 0n;
  for (const sample of samples) {
    const roundTrip = sample.transmitterReceivedNs - sample.transmitterSentNs;
    if (roundTrip < 0n) continue;
    if (best === undefined || roundTrip < bestRoundTrip) {
      best = sample;
      bestRoundTrip = roundTrip;
    }
  }
  if (best === undefined) return undefined;
  // The receiver read its clock somewhere within the round trip: assume the middle.
  const midpointNs = best.transmitterSentNs + bestRoundTrip / 2n;
  return {
    offsetNs: Number(best.receiverNs - midpointNs),
    uncertaintyNs: Number(bestRoundTrip) / 2,
    roundTripNs: Number(bestRoundTrip),
    samples: samples.length,
  };
}

/**
 * Bound on the clock error of a one-way time whose send stamp was moved by `before`, the offset
 * estimated at the section's start: that estimate's own bound, or, with `after` estimated again at
 * its end, also how far the true offset may have drifted from `before` by then. A linear drift
 * keeps every moment in between within the larger of the two ends.
 */
export function oneWayClockErrorNs(before: ClockOffset, after: ClockOffset | null): number {
  if (after === null) return before.uncertaintyNs;
  return Math.max(before.uncertaintyNs, Math.abs(after.offsetNs - before.offsetNs) + after.uncertaintyNs);
}

/** The clock offset estimated at the start of a section, and whether times were corrected by it. */
export interface SectionClock extends ClockOffset {
  /**
   * True when transmitter and receiver run on different kernels (different clocks), so every
   * send time was moved onto the receiver's clock by offsetNs. On one kernel the clock is the
   * same and the estimate is only reported, never applied: it would add its own error.
   */
  applied: boolean;
}
