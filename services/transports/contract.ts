import type { Logger } from 'pino';
import type { SectionCredential } from '../core/wire/auth.js';
import type { TransportSetting } from '../core/config/config.js';
import type { BrokerReading } from '../core/model/cost.js';
import type { BrokerStamp } from '../core/model/broker-split.js';
import type { Ack, FrameHeader } from '../core/wire/frame.js';
import type { PartHasher, PartsChecksum } from '../core/wire/checksum.js';
import type { CommandLaneTrait } from '../core/model/command-lane.js';

// The two-sided contract every transport implements. A transport moves opaque frames (a 40-byte
// encoded header plus the image bytes) one way and 12-byte acks the other way. The rules that
// make transports comparable are not the transport's to choose, so they live outside it or in
// the shared kit (./kit/) every transport uses:
// - the transmitter stamps an image when the window admits it and hands it over at once: any
//   wait for library or kernel backpressure happens inside the link, inside that image's time;
// - the receiver stamps an image's arrival when the frame gate takes it (the moment the last byte
//   is in hand), before any hashing of it; a byte-stream transport sums a large image's parts as it
//   reads them (ReceiverOptions.partHasher) and hashes only the last part after the stamp; every
//   other image is hashed by the receiver after its ack, on the same thread, as soon as the
//   callback that delivered it returns (services/receiver/verifier.ts says what that costs);
// - what a receiver does with bad input and with a delivery that throws is the gate's one policy;
// - who gets in is the door's one policy (the receiver's; ./kit/door.ts is a listener's side): a
//   connection proves it belongs to the open section before the receiver holds any of its payload,
//   and a listener keeps a bounded number of connections, each closed when it falls silent.

/** Where a transport finds its peer; a transport uses the fields its setting gives it. */
export interface TransportEndpoint {
  /** Host the transmitter dials (ignored by the receiver side). */
  host: string;
  /** Address the receiver side binds (ignored by the transmitter side). */
  bindHost: string;
  /** The transport's port, when its setting is a port (0 on the receiver side: pick a free one); 0 otherwise. */
  port: number;
  /**
   * The transport's URL (the broker it goes through), when its setting is a URL; undefined otherwise. May hold a user
   * and password: shown only through redactUrl().
   */
  url: string | undefined;
  /**
   * The transport's socket file, when its setting is a socket (SOCKET_DIR and the transport's file name): the receiver
   * binds it, the transmitter connects to it; undefined otherwise.
   */
  socketPath?: string | undefined;
  /**
   * The broker's password given apart from the URL (REDIS_PASSWORD, NATS_PASSWORD or their _FILE); undefined: none, or
   * in the URL.
   */
  password?: string | undefined;
  /** Largest image either side accepts, in bytes: limits are raised to fit exactly this. */
  maxImageBytes: number;
}

/** One image as the receiver side hands it over. */
export interface ReceivedFrame {
  header: FrameHeader;
  /** The image bytes, whole or in the parts the library delivered (not concatenated on purpose). */
  payload: Buffer | readonly Buffer[];
  /**
   * Receiver's `process.hrtime.bigint()` when the whole image was in hand: when the frame gate took it, or earlier when
   * the transport held it first (kit/gate.ts).
   */
  arrivalNs: bigint;
  /**
   * The broker's own stamp of the message, for a broker that stamps one (JetStream, a Redis stream entry's ID), read
   * from the message as it came: the receiver splits the one-way time at it (core/model/broker-split.ts).
   */
  brokerStamp?: BrokerStamp;
  /**
   * The payload's checksum, summed by the transport part by part as it read them (the last part after the stamp);
   * undefined: the receiver hashes the payload itself.
   */
  partsChecksum?: PartsChecksum;
}

/** Options the transmitter side connects with. */
export interface TransmitterOptions extends TransportEndpoint {
  log: Logger;
  /** Called for every ack the receiver sends back, as soon as the library hands it over. */
  onAck(ack: Ack): void;
  /** Called at most once, when the link breaks after connect() and before close(); the run fails the section. */
  onFailure(err: Error): void;
  /**
   * Bound on connect(): refused or unanswered attempts are retried until it is over, then
   * connect() rejects with ITB_ERR_TIMEOUT naming the last problem.
   */
  connectTimeoutMs: number;
  /** The section's credential: every connection presents it before its first frame. */
  credential: SectionCredential;
  /** Size of every image of this section: a transport whose broker caps messages checks it before sending anything. */
  imageBytes: number;
  /**
   * The section's WINDOW: most images the caller keeps unacknowledged (a transport with several connections sizes its
   * pool by it).
   */
  window: number;
  /**
   * The section's CLIENTS: links the caller opens at once, this one among them (a shared channel must keep each frame
   * whole); undefined: one.
   */
  clients?: number;
  /**
   * RECEIVERS > 1, a point-to-point transport: which receiver this link's copies go to (a broker
   * transport names that receiver's keys by it); undefined: the first or only one.
   */
  receiverIndex?: number;
  /**
   * RECEIVERS > 1, a one-send transport whose receivers each bind a port (ZeroMQ PUB/SUB): every
   * receiver's address, in receiver order; undefined: `host` and `port` alone.
   */
  peers?: readonly { host: string; port: number }[];
  /**
   * COMMAND_RATE is set and this link carries the commands: open what sendCommand needs at connect (a transport whose
   * link has no sendCommand ignores it); undefined: no command lane on this link.
   */
  commandLane?: boolean;
}

/** A connected transmitter side. */
export interface TransmitterLink {
  /**
   * Hands over one frame whose header is already stamped, and returns at once. Frames leave in
   * the order given. When the library pushes back (a socket over its high-water mark, one pending
   * send at a time), the link holds the frame, uncopied, and passes it on as soon as the library
   * takes it: the wait is inside this frame's time and never delays the caller's next stamp. The
   * caller keeps at most WINDOW frames unacknowledged, which bounds what the link holds. Problems
   * are reported through onFailure. `header` and `payload` are never modified afterwards, so the
   * link may send them without copying.
   */
  send(header: Buffer, payload: Buffer): void;
  /**
   * Hands over one command (COMMAND_RATE: a small frame whose seq is a command's) on a lane of its own beside the
   * images, as send() does otherwise; only a transport that has such a lane on the same connection (a second HTTP/2
   * stream) implements it. Undefined: commands go through send(), between images, in the order given.
   */
  sendCommand?(header: Buffer, payload: Buffer): void;
  /** Closes the link, drops what it still holds and releases every handle; safe to call twice. */
  close(): Promise<void>;
}

/** Options the receiver side listens with. */
export interface ReceiverOptions extends TransportEndpoint {
  log: Logger;
  /**
   * Takes one complete frame whose header decoded and whose length matched, and returns the ack to
   * send back at once. Called only through the frame gate (./kit/gate.ts); must not block: the
   * receiver verifies the image after the ack is on its way (or at once, from its partsChecksum).
   */
  deliver(frame: ReceivedFrame): Ack;
  /**
   * Called for input the transport dropped (bad header, wrong length, oversize, protocol error, a delivery that threw).
   */
  onReject(reason: string): void;
  /**
   * Called at most once when the listener can no longer receive anything (the broker it reads
   * from went away); the app then reports it unavailable and may listen again later. Transports
   * whose own server cannot fail that way never call it.
   */
  onFailure?(reason: string): void;
  /** Decides which connections may carry frames; every listener asks it before holding any payload. */
  door: Door;
  /** A connection with nothing crossing it either way for this long is closed (IMAGE_TIMEOUT_MS). */
  idleTimeoutMs: number;
  /**
   * Makes a hasher for one connection of a transport that reads an image in parts (a byte stream), to sum each part
   * while it is in cache and hand the sum over with the image (ReceivedFrame.partsChecksum). Undefined: sum nothing
   * (VERIFY=false, or the receiver hashes every image itself); a transport that gets images whole ignores it.
   */
  partHasher?(): PartHasher;
}

/** A listener's doorkeeper: the receiver decides who gets in; a listener asks (./kit/door.ts: what it keeps). */
export interface Door {
  /**
   * Checks the credential a connection presented in text form (undefined: it presented none).
   * Returns a pass when the connection belongs to the open section, on this transport, and the
   * section has room for it; the listener releases the pass when the connection closes, and
   * `drop` closes the connection when the section ends. Undefined when refused: the refusal is
   * counted and reported with `from`, and the listener closes the connection.
   */
  admit(presented: string | undefined, from: string, drop: () => void): DoorPass | undefined;
  /** Counts and reports a connection the listener refused on its own (over its connection cap, fell silent). */
  refuse(from: string, reason: string): void;
  /**
   * Connections the open section admits on this listener (CLIENTS × its link's); 0 when the open section is another
   * transport's or none is.
   */
  sectionConnections(): number;
}

/** An admitted connection's place in its section. */
export interface DoorPass {
  release(): void;
}

/** What a listener learns when a section of its transport opens. */
export interface SectionOpening {
  credential: SectionCredential;
  /** The section's WINDOW: the transmitter never has more images unacknowledged. */
  window: number;
  /**
   * Address the section's control request came from: the transmitter's host as this receiver
   * reaches it, for a transport whose receiver dials the transmitter (websocket-push).
   */
  transmitterHost: string;
  /**
   * RECEIVERS > 1: this receiver's place among them, from 0 (a broker transport's point-to-point keys are named by it).
   */
  receiverIndex?: number;
}

/** A listening receiver side. */
export interface ReceiverListener {
  /** Port actually bound (the configured one, or the one the OS picked for port 0); 0 if none. */
  port: number;
  /**
   * For a transport that goes through a broker: the broker's totals now, so its cost can be reported as a third side.
   */
  readBroker?(): Promise<BrokerReading>;
  /**
   * For a listener that reads from places named per section (Redis keys): prepares them before the
   * transmitter is told to connect. Listeners whose connections prove themselves never need it.
   */
  openSection?(section: SectionOpening): Promise<void>;
  /** Releases what openSection() prepared; the section is over. */
  closeSection?(): Promise<void>;
  /** Stops listening, drops connections and releases every handle; safe to call twice. */
  close(): Promise<void>;
}

/** A server a transport goes through, started on this machine for a run or a test. */
export interface LocalServer {
  /** Value for the transport's URL setting. */
  url: string;
  /** Stops the server and waits until it is gone. */
  close(): Promise<void>;
}

/** How a transport behaves, as the run, the door and the reports must know it. */
export interface TransportTraits {
  /** Marked "baseline" in the output: the floor the others are compared against. */
  baseline: boolean;
  /**
   * 'one send': one link's send reaches every receiver of the section (a broker's pub/sub), and
   * every receiver's acks come back on it, each naming its receiver. Undefined: a link per
   * receiver, each image sent as a copy to each.
   */
  fanOut?: 'one send';
  /**
   * Set for a transport that may drop images by design (pub/sub at a high-water mark), and says
   * when. Its images arrive in order or not at all, so an ack for a later image settles every
   * earlier unacknowledged one as lost, and the window moves on; the receiver's record counts
   * them exactly. Never set for a transport that must deliver everything.
   */
  dropsImages?: string;
  /**
   * Set for a transport that keeps only the latest image (a key written over), and says how. One
   * writer's images reach it in order, so an ack for a later image settles every earlier
   * unacknowledged one as superseded: written over before it was read. Superseded images free
   * their window slot, are counted apart from the delivered and the lost, and never fail the
   * section; they take no part in MB/s or images/s. Needs CLIENTS = 1 (maxClients says so).
   */
  supersedesImages?: string;
  /**
   * How the transport carries COMMAND_RATE's commands beside its images, or why it cannot; undefined: through send(),
   * between images on the link's connection, each frame written whole (DEFAULT_COMMAND_LANE).
   */
  commandLane?: CommandLaneTrait;
  /**
   * How arrivals are stamped when the library can only hand over several frames at once (one
   * stamp per hand-over); undefined when it hands over one frame at a time. output.log prints it.
   */
  batchedArrivals?: string;
  /**
   * True when the receiver dials the transmitter (websocket-push): the port setting is then the
   * transmitter's, and the receiver takes no connections on it.
   */
  receiverDials?: boolean;
  /** Most CLIENTS the transport can run, and why; undefined: any number up to MAX_CLIENTS. */
  maxClients?: { clients: number; why: string };
  /** Most RECEIVERS the transport can run, and why; undefined: any number up to MAX_RECEIVERS. */
  maxReceivers?: { receivers: number; why: string };
  /**
   * Connections (or calls) one link holds open at once, given the section's WINDOW: how many the
   * door admits per section. Undefined: one.
   */
  connectionsPerLink?(window: number): number;
}

/** What a transport is built on: every report names it with its versions. */
export interface TransportLibrary {
  /** npm packages the transport is built on: every report names them with their versions. */
  packages: readonly string[];
  /**
   * Versions of native libraries underneath, as the package reports them (libzmq), named in every report too; reading
   * them loads the library.
   */
  nativeVersions?(): Readonly<Record<string, string>>;
}

/** How a transport is configured and deployed: config, `npm start`, compose and the tests read it. */
export interface TransportDeployment {
  /** In the run TRANSPORTS gives when unset; every transport runs with TRANSPORTS=all. */
  defaultRun: boolean;
  setting: TransportSetting;
  /** The service in docker-compose.yml this transport goes through (its broker), when it has one. */
  composeService?: string;
  /**
   * For a transport whose setting is a URL: how `npm start` and the tests get a server of their own
   * when the URL is not set (started on a free loopback port, stopped afterwards).
   */
  localServer?: {
    command: string /** `host`: the address it binds and its URL names (127.0.0.1 by default). */;
    start(host?: string): Promise<LocalServer>;
  };
}

/** A transport in one line of Markdown each: its libraries, how an image travels, how its ack comes back. */
export interface TransportSummary {
  libraries: string;
  image: string;
  ack: string;
}

/** One transport: both sides plus what config, runner, reports, compose, bench and tests need to know. */
export interface Transport {
  /** Name used in TRANSPORTS and results.json. */
  name: string;
  /** Name shown in output.log. */
  label: string;
  /** What docs/transports.md's table says of it (`npm run generate` writes the table). */
  summary: TransportSummary;
  traits: TransportTraits;
  library: TransportLibrary;
  deployment: TransportDeployment;
  connect(options: TransmitterOptions): Promise<TransmitterLink>;
  listen(options: ReceiverOptions): Promise<ReceiverListener>;
}
