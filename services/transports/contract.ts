import type { Logger } from 'pino';
import type { Ack, FrameHeader } from '../core/frame.js';

// The two-sided contract every transport implements. A transport moves opaque frames
// (a 40-byte encoded header plus the image bytes) one way and 12-byte acks the other way;
// timing, windowing, verification and bookkeeping live outside it, so every transport is
// measured by the same code.

/** Where a transport finds its peer; a transport uses the fields it needs. */
export interface TransportEndpoint {
  /** Host the transmitter dials (ignored by the receiver side). */
  host: string;
  /** Address the receiver side binds (ignored by the transmitter side). */
  bindHost: string;
  /** TCP port, for transports that have one (0 on the receiver side: pick a free one). */
  port: number;
  /** Redis connection URL, for transports that go through Redis; undefined when there is none. */
  redisUrl: string | undefined;
  /** Largest image either side accepts, in bytes: limits are raised to fit exactly this. */
  maxImageBytes: number;
}

/** One image as the receiver side hands it over. */
export interface ReceivedFrame {
  header: FrameHeader;
  /** The image bytes, whole or in the parts the library delivered (not concatenated on purpose). */
  payload: Buffer | readonly Buffer[];
  /** Receiver's `process.hrtime.bigint()` when the last byte of the image was in hand. */
  arrivalNs: bigint;
}

/** Options the transmitter side connects with. */
export interface TransmitterOptions extends TransportEndpoint {
  log: Logger;
  /** Called for every ack the receiver sends back, in the order they arrive. */
  onAck(ack: Ack): void;
  /** Called at most once when the link breaks after connect(); the run fails the section. */
  onFailure(err: Error): void;
  /** Bound on connect(): it rejects with ITB_ERR_TIMEOUT rather than waiting longer. */
  connectTimeoutMs: number;
}

/** A connected transmitter side. */
export interface TransmitterLink {
  /**
   * Hands one frame to the library. Resolves when the library has accepted it (queued, not
   * delivered: delivery is known only from the ack), and only then may the next send start:
   * the caller never has two sends pending. `header` and `payload` are not modified afterwards,
   * so they may be sent without copying.
   */
  send(header: Buffer, payload: Buffer): Promise<void>;
  /** Closes the link and releases every handle; safe to call twice. */
  close(): Promise<void>;
}

/** Options the receiver side listens with. */
export interface ReceiverOptions extends TransportEndpoint {
  log: Logger;
  /**
   * Called once per complete frame whose header decoded; returns the ack to send back. Frames
   * that fail to decode are dropped by the transport and reported through onReject.
   */
  deliver(frame: ReceivedFrame): Ack;
  /** Called for input the transport dropped (bad header, oversize frame, protocol error). */
  onReject(reason: string): void;
  /**
   * Called at most once when the listener can no longer receive anything (the broker it reads
   * from went away); the app then reports it unavailable and may listen again later. Transports
   * whose own server cannot fail that way never call it.
   */
  onFailure?(reason: string): void;
}

/** A listening receiver side. */
export interface ReceiverListener {
  /** Port actually bound (the configured one, or the one the OS picked for port 0); 0 if none. */
  port: number;
  /** Stops listening, drops connections and releases every handle; safe to call twice. */
  close(): Promise<void>;
}

/** One transport: both sides plus what the config and the report need to know about it. */
export interface Transport {
  /** Name used in TRANSPORTS and results.json. */
  name: string;
  /** Name shown in output.log. */
  label: string;
  /** Env var for its port and its default, or undefined when it needs no port (Redis). */
  port: { envVar: string; defaultPort: number } | undefined;
  /** Marked "baseline" in the output: the floor the others are compared against. */
  baseline: boolean;
  connect(options: TransmitterOptions): Promise<TransmitterLink>;
  listen(options: ReceiverOptions): Promise<ReceiverListener>;
}
