import net from 'node:net';
import { boundPort } from '../../services/shared/net.js';

// A TCP relay on loopback that delays each direction by a set time: the link delay NETWORK_DELAY gives through
// sch_netem, for kernels without it (issue 34). Every chunk read from one side is written to the other at its arrival
// plus the delay, in order; an end (FIN) is forwarded after the delay too, so half-closes cross as they would a link;
// an error on either side resets both. Each direction's queue is bounded: past maxQueuedBytes (counting what the far
// socket has not yet handed to the kernel) the reading side is paused, and resumed below half of it.
//
// Timers: setTimeout fires up to a millisecond late (libuv's clock is in whole ms), so a chunk is first waited for
// with setTimeout until SPIN_MARGIN_NS before its due time, then with setImmediate checks of the monotonic clock:
// it leaves within about a tenth of a millisecond of its due time, and the CPU is busy only in that last stretch.

/** How long before a chunk's due time the wait turns from setTimeout to setImmediate checks. */
const SPIN_MARGIN_NS = 1_500_000n;
/** Default bound on each direction's queue. */
export const DEFAULT_MAX_QUEUED_BYTES = 64 * 1024 * 1024;

/** What a relay is set up with. */
export interface DelayRelayOptions {
  /** Address to listen on: 127.0.0.1 unless given. */
  listenHost?: string;
  /** Port to listen on; 0 or unset: a free one. */
  listenPort?: number;
  targetHost: string;
  targetPort: number;
  /** Added to each direction on its own (a round trip gains twice this); 0 relays at once. */
  delayMs: number;
  /** Queued bytes in one direction past which its reading side is paused; DEFAULT_MAX_QUEUED_BYTES unless given. */
  maxQueuedBytes?: number;
}

/** What one direction of a relay measured over all its connections. */
export interface DirectionStats {
  chunks: number;
  bytes: number;
  /** Largest lateness of a chunk: the time it left minus its due time (arrival + delay), in ms; 0 with no chunk. */
  maxLatenessMs: number;
  /** Most bytes waiting at once in one connection's direction (its queue plus the far socket's unwritten buffer). */
  peakQueuedBytes: number;
  /** Times the reading side was paused because the queue was over its bound. */
  pauses: number;
}

/** A relay's figures: toTarget carries what the accepting side sent, toClient what the target answered. */
export interface DelayRelayStats {
  connections: number;
  toTarget: DirectionStats;
  toClient: DirectionStats;
}

/** A running relay. */
export interface DelayRelay {
  host: string;
  port: number;
  /** A copy of what it measured so far. */
  stats(): DelayRelayStats;
  /** Stops listening and destroys every open connection; safe to call twice. */
  close(): Promise<void>;
}

const emptyStats = (): DirectionStats => ({ chunks: 0, bytes: 0, maxLatenessMs: 0, peakQueuedBytes: 0, pauses: 0 });

/** One queued item: a chunk, or the end of the stream (null), and when it is due (process.hrtime.bigint()). */
interface Queued {
  chunk: Buffer | null;
  dueNs: bigint;
}

/** One direction of one connection: reads `from`, writes `to` after the delay. */
class Direction {
  private readonly queue: Queued[] = [];
  private head = 0;
  private queuedBytes = 0;
  private paused = false;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private stopped = false;

  constructor(
    private readonly from: net.Socket,
    private readonly to: net.Socket,
    private readonly delayNs: bigint,
    private readonly maxQueuedBytes: number,
    private readonly stats: DirectionStats,
  ) {
    from.on('data', (chunk: Buffer) => this.push(chunk));
    from.on('end', () => this.push(null));
    to.on('drain', () => this.resumeIfBelow());
  }

  /** Drops whatever waits and every pending wake-up. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.queue.length = 0;
    this.head = 0;
  }

  private waiting(): number {
    return this.queuedBytes + this.to.writableLength;
  }

  private push(chunk: Buffer | null): void {
    if (this.stopped) return;
    this.queue.push({ chunk, dueNs: process.hrtime.bigint() + this.delayNs });
    if (chunk !== null) this.queuedBytes += chunk.length;
    this.stats.peakQueuedBytes = Math.max(this.stats.peakQueuedBytes, this.waiting());
    if (!this.paused && this.waiting() > this.maxQueuedBytes) {
      this.paused = true;
      this.stats.pauses++;
      this.from.pause();
    }
    // Only the head has a wake-up pending; one that is pending already covers this chunk, which is due after it.
    if (this.queue.length - this.head === 1) this.flush();
  }

  /** Writes every chunk now due, then waits for the next. */
  private flush(): void {
    this.timer = undefined;
    this.immediate = undefined;
    if (this.stopped) return;
    const now = process.hrtime.bigint();
    while (this.head < this.queue.length) {
      const item = this.queue[this.head]!;
      if (item.dueNs > now) break;
      this.head++;
      if (item.chunk === null) {
        this.to.end();
        continue;
      }
      this.queuedBytes -= item.chunk.length;
      this.to.write(item.chunk);
      this.stats.chunks++;
      this.stats.bytes += item.chunk.length;
      this.stats.maxLatenessMs = Math.max(this.stats.maxLatenessMs, Number(now - item.dueNs) / 1e6);
    }
    // The consumed front is dropped in bulk, not one shift() per chunk.
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head > 1024) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.resumeIfBelow();
    const next = this.queue[this.head];
    if (next === undefined) return;
    const remainingNs = next.dueNs - now;
    if (remainingNs > SPIN_MARGIN_NS)
      this.timer = setTimeout(() => this.flush(), Number(remainingNs - SPIN_MARGIN_NS) / 1e6);
    else this.immediate = setImmediate(() => this.flush());
  }

  private resumeIfBelow(): void {
    if (this.paused && !this.stopped && this.waiting() < this.maxQueuedBytes / 2) {
      this.paused = false;
      this.from.resume();
    }
  }
}

/** Starts a relay listening on `listenHost:listenPort` that dials `targetHost:targetPort` for each connection. */
export async function startDelayRelay(options: DelayRelayOptions): Promise<DelayRelay> {
  if (!Number.isFinite(options.delayMs) || options.delayMs < 0)
    throw new RangeError(`delayMs: expected a finite number of at least 0, got ${options.delayMs}`);
  const delayNs = BigInt(Math.round(options.delayMs * 1e6));
  const maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
  const figures: DelayRelayStats = { connections: 0, toTarget: emptyStats(), toClient: emptyStats() };
  const pairs = new Set<() => void>();
  const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    figures.connections++;
    const target = net.connect({
      host: options.targetHost,
      port: options.targetPort,
      allowHalfOpen: true,
      noDelay: true,
    });
    const directions = [
      new Direction(client, target, delayNs, maxQueuedBytes, figures.toTarget),
      new Direction(target, client, delayNs, maxQueuedBytes, figures.toClient),
    ];
    let destroyed = false;
    // An error on one side resets the other (it sees ECONNRESET, as across a link): nothing more crosses.
    const destroyPair = (): void => {
      if (destroyed) return;
      destroyed = true;
      pairs.delete(destroyPair);
      for (const direction of directions) direction.stop();
      for (const socket of [client, target]) if (!socket.destroyed) socket.resetAndDestroy();
    };
    pairs.add(destroyPair);
    client.on('error', destroyPair);
    target.on('error', destroyPair);
    // A side that closed before both ends crossed (destroyed, not ended) takes the pair with it; one that closed after
    // its FIN and ours is done, and so is its partner once its own ends cross.
    const onClose = (socket: net.Socket, other: net.Socket) => () => {
      if (!socket.readableEnded || !socket.writableFinished) destroyPair();
      else if (other.readableEnded && other.writableFinished) pairs.delete(destroyPair);
    };
    client.on('close', onClose(client, target));
    target.on('close', onClose(target, client));
  });
  const host = options.listenHost ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listenPort ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  let closing: Promise<void> | undefined;
  return {
    host,
    port: boundPort(server.address()),
    stats: () => ({
      connections: figures.connections,
      toTarget: { ...figures.toTarget },
      toClient: { ...figures.toClient },
    }),
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const destroy of [...pairs]) destroy();
      });
      return closing;
    },
  };
}
