// Who gets a GET /events stream. The route is open to anyone, so a few clients must not be able
// to hold every stream for a whole run: one address keeps at most a few, and a newcomer that finds
// every stream taken is let in in place of the stream that has read least, rather than refused.
// Pure: the caller reads each stream's socket and the clock.
//
// Read least, in order: the stream backed up longest (a write refused and its socket not drained
// since: its client stopped taking what it was sent), then the one with the most bytes written and
// not yet taken by its socket. A client that stops reading at a normal event rate fills no buffer
// for hours (the kernel's take megabytes), so among the streams that keep up, the one of the
// address holding the most streams goes first (a flood pays before a lone page), then the oldest
// (a newcomer that churns evicts its own kind before a page that came after them).

/** How many GET /events streams may be open. */
export interface StreamCaps {
  /** Streams open at once in all. */
  maxStreams: number;
  /** Streams open at once from one client address. */
  maxStreamsPerAddress: number;
}

/** What the choice reads of one open stream. */
export interface StreamReading {
  /** Its client's address, as the caller keys it (an IPv4-mapped IPv6 address in its IPv4 form). */
  address: string;
  /** How long its socket has been backed up (a write refused, not drained since); 0 while it keeps up. */
  backedUpMs: number;
  /** Bytes written to the stream that its socket has not taken yet. */
  pendingBytes: number;
  /** Its place in the order streams opened: smaller is older. */
  openedOrder: number;
}

/**
 * What to do with a new stream: open it, open it once the stream at `index` is evicted, or refuse it (its address
 * holds `maxStreamsPerAddress` streams already).
 */
export type StreamAdmission = { action: 'open' } | { action: 'evict'; index: number } | { action: 'refuse' };

/** Throws a RangeError unless both caps are whole numbers of at least 1 (a per-address cap over the total is none). */
export function checkStreamCaps(caps: Readonly<StreamCaps>): void {
  for (const [name, value] of Object.entries(caps))
    if (!(Number.isInteger(value) && value >= 1)) throw new RangeError(`${name} must be a whole number of at least 1`);
}

/** Streams open per address. */
function streamsByAddress(open: readonly StreamReading[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const stream of open) counts.set(stream.address, (counts.get(stream.address) ?? 0) + 1);
  return counts;
}

/** The index in `open` of the stream that has read least (see the file's head); undefined when none is open. */
export function leastReadStream(open: readonly StreamReading[]): number | undefined {
  const counts = streamsByAddress(open);
  let chosen: number | undefined;
  for (let index = 0; index < open.length; index++) {
    if (chosen === undefined || readsLess(open[index]!, open[chosen]!, counts)) chosen = index;
  }
  return chosen;
}

/** True when `a` is to go before `b`. */
function readsLess(a: StreamReading, b: StreamReading, counts: ReadonlyMap<string, number>): boolean {
  if (a.backedUpMs !== b.backedUpMs) return a.backedUpMs > b.backedUpMs;
  if (a.pendingBytes !== b.pendingBytes) return a.pendingBytes > b.pendingBytes;
  const aCount = counts.get(a.address) ?? 0;
  const bCount = counts.get(b.address) ?? 0;
  if (aCount !== bCount) return aCount > bCount;
  return a.openedOrder < b.openedOrder;
}

/** Whether a new stream from `address` may open beside `open` under `caps`, and which stream makes room for it. */
export function admitStream(
  open: readonly StreamReading[],
  address: string,
  caps: Readonly<StreamCaps>,
): StreamAdmission {
  let fromAddress = 0;
  for (const stream of open) if (stream.address === address) fromAddress++;
  if (fromAddress >= caps.maxStreamsPerAddress) return { action: 'refuse' };
  if (open.length < caps.maxStreams) return { action: 'open' };
  const index = leastReadStream(open);
  return index === undefined ? { action: 'refuse' } : { action: 'evict', index };
}
