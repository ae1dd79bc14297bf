// The capacity part's search for the highest rate a transport sustains: from a start rate, doubling while probes pass
// (up to a cap) or halving while they fail (down to a floor), then bisecting between the highest rate that passed and
// the lowest that failed until the two are within a set share of each other. Pure: the next rate is a function of the
// probes so far, so the bench can interleave several searches probe by probe and the tests can drive one with a table.

/** Where a search starts, how far it may go each way, and when it stops. */
export interface SearchBounds {
  /** The first rate probed (frames per second). */
  startPerSecond: number;
  /** The lowest rate probed: a search that fails here reports the transport below it. */
  floorPerSecond: number;
  /** The highest rate probed: a search that passes here stops, reporting the transport at least this fast. */
  capPerSecond: number;
  /**
   * Bisection stops once the lowest failed rate is within this share above the highest passed one (0.125: within
   * 12.5 %, three bisections from a doubling's bracket).
   */
  resolution: number;
}

/** One probe of a search: the rate tried and whether the transport sustained it. */
export interface SearchProbe {
  ratePerSecond: number;
  sustained: boolean;
}

/** Where a finished (or unfinished) search stands. */
export interface SearchOutcome {
  /** The highest rate that passed; null when none did. */
  sustainedPerSecond: number | null;
  /** The lowest rate that failed; null when none did. */
  failedPerSecond: number | null;
  /** Failed at the floor: the transport sustains less than floorPerSecond. */
  belowFloor: boolean;
  /** Passed at the cap: the transport sustains at least capPerSecond, maybe more. */
  atCap: boolean;
}

/** The highest passed and lowest failed rates of `probes` (every probe lies between the two, so they never cross). */
export function searchOutcome(bounds: SearchBounds, probes: readonly SearchProbe[]): SearchOutcome {
  const passed = probes.filter((p) => p.sustained).map((p) => p.ratePerSecond);
  const failed = probes.filter((p) => !p.sustained).map((p) => p.ratePerSecond);
  const sustainedPerSecond = passed.length === 0 ? null : Math.max(...passed);
  const failedPerSecond = failed.length === 0 ? null : Math.min(...failed);
  return {
    sustainedPerSecond,
    failedPerSecond,
    belowFloor: sustainedPerSecond === null && failedPerSecond !== null && failedPerSecond <= bounds.floorPerSecond,
    atCap: failedPerSecond === null && sustainedPerSecond !== null && sustainedPerSecond >= bounds.capPerSecond,
  };
}

/** The next rate to probe after `probes`, or null when the search is over. */
export function nextRate(bounds: SearchBounds, probes: readonly SearchProbe[]): number | null {
  const { sustainedPerSecond: low, failedPerSecond: high, belowFloor, atCap } = searchOutcome(bounds, probes);
  if (belowFloor || atCap) return null;
  if (low === null && high === null) return bounds.startPerSecond;
  if (low === null) return Math.max(bounds.floorPerSecond, high! / 2);
  if (high === null) return Math.min(bounds.capPerSecond, low * 2);
  if (high - low <= bounds.resolution * low) return null;
  // Whole frames per second: a tenth of a frame per second is far below what one probe can tell apart.
  const middle = Math.round((low + high) / 2);
  return middle > low && middle < high ? middle : null;
}

/** Runs a whole search with `probe` answering each rate at once: its probes in their order, and its outcome. */
export function searchRate(
  bounds: SearchBounds,
  probe: (ratePerSecond: number) => boolean,
): { probes: SearchProbe[]; outcome: SearchOutcome } {
  const probes: SearchProbe[] = [];
  for (let rate = nextRate(bounds, probes); rate !== null; rate = nextRate(bounds, probes))
    probes.push({ ratePerSecond: rate, sustained: probe(rate) });
  return { probes, outcome: searchOutcome(bounds, probes) };
}
