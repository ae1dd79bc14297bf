// The ceiling clients: for each transport of the table, the thinnest correct sender and receiver
// of the same library, written from its documentation, to measure what the library can do at all
// on this machine beside what the suite makes of it (npm run bench: harness overhead = 1 − ours ÷
// ceiling). Same images, same WINDOW (images sent and not yet acknowledged), the same 40-byte
// header before each image and the same 12-byte ack, on the same wire design as the transport; no
// verification, no door, no gate, no bookkeeping beyond a send stamp per image (the driver's) and
// the receiver's stamp of the latest arrival (where the span ends).

/** Bytes of the header that goes before every image, as the suite's frame header. */
export const CEILING_HEADER_BYTES = 40;
/** Bytes of every ack, as the suite's. */
export const CEILING_ACK_BYTES = 12;

/** The header of image `seq`: its seq and its length (little-endian u32s at 0 and 4), the rest zero. */
export function ceilingHeader(seq: number, imageBytes: number): Buffer {
  const header = Buffer.alloc(CEILING_HEADER_BYTES);
  header.writeUInt32LE(seq, 0);
  header.writeUInt32LE(imageBytes, 4);
  return header;
}

/** The seq a header carries. */
export function headerSeq(header: Buffer): number {
  return header.readUInt32LE(0);
}

/** The image length a header announces. */
export function headerLength(header: Buffer): number {
  return header.readUInt32LE(4);
}

/** The ack of image `seq`. */
export function ceilingAck(seq: number): Buffer {
  const ack = Buffer.alloc(CEILING_ACK_BYTES);
  ack.writeUInt32LE(seq, 0);
  return ack;
}

/** The seq an ack carries. */
export function ackSeq(ack: Buffer): number {
  return ack.readUInt32LE(0);
}

/** Where and how the receiver side listens (or subscribes). */
export interface CeilingReceiveOptions {
  /** Address to bind. */
  bindHost: string;
  /** Port to listen on; 0: any free one (a broker's transports ignore it). */
  port: number;
  /** The broker (Redis, NATS) for the transports that go through one. */
  brokerUrl: string | undefined;
  /** A name of this run's own, for broker keys, channels and subjects. */
  channel: string;
  /** Largest image: library message limits are raised to it (plus the header). */
  maxImageBytes: number;
  /**
   * Called with an image's seq the moment its last byte is in hand, before its ack goes: the run
   * stamps it there, as the suite's frame gate stamps an arrival, and its span ends at the last
   * timed one (the suite's totalMs). A library that hands over several images at once calls it
   * for each as it takes them.
   */
  arrived(seq: number): void;
  /**
   * Each image as it arrives, with its seq: the tests check that the pair moves images intact.
   * The bench passes none, and a receiver then never assembles an image its library hands over in parts.
   */
  onImage?: (seq: number, image: Buffer) => void;
}

/** A listening receiver side. */
export interface CeilingReceiver {
  /** The port the sender dials (the one bound, or the options' when a broker carries everything). */
  port: number;
  close(): Promise<void>;
}

/** Where and how the sender side connects. */
export interface CeilingConnectOptions {
  host: string;
  port: number;
  brokerUrl: string | undefined;
  channel: string;
  maxImageBytes: number;
  /** Most images sent and not yet acknowledged: what the driver keeps in flight. */
  window: number;
  /** Called once per ack, with its seq. */
  onAck(seq: number): void;
  /** Called when the link fails: the driver stops with this reason. */
  onFailure(reason: string): void;
}

/** A connected sender side. */
export interface CeilingSender {
  /** Sends one image with its header; the driver never has more than `window` unacknowledged. */
  send(seq: number, header: Buffer, image: Buffer): void;
  close(): Promise<void>;
}

/**
 * A ceiling pair. Most transports' receivers listen and their senders dial; websocket-push's are
 * the other way round (the sender's server accepts the receiver's connection): `senderListens`.
 */
export interface CeilingPair {
  /** Its transport's name in the table (services/transports/index.ts). */
  transport: string;
  /** The library calls on each side, in one line, for the bench's report. */
  how: string;
  receive(options: CeilingReceiveOptions): Promise<CeilingReceiver>;
  connect(options: CeilingConnectOptions): Promise<CeilingSender>;
  /** True when the sender side listens and the receiver side dials it (websocket-push). */
  senderListens?: boolean;
  /** True for a latest-frame key: an image written over before it was read is never acknowledged (drive.ts). */
  supersedes?: boolean;
}
