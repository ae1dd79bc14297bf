import type { NetworkShaping } from './link.js';

// What a configuration is: the transports' deployment descriptors, the frozen Config every part reads (parsed in
// config.ts), and the issue a bad variable is reported with.

/**
 * The one setting that says where a transport's peer is: a port of the receiver's, or the URL of a broker.
 * `nextPorts`: ports after this one the transport binds too (zeromq-pubsub's acks: 1). `description`: what binds the
 * port, for the README's table and .env.example's comment, when "<label> listener" says less (what it carries, the
 * next ports it binds): `HTTP listener (raw image bodies)`.
 */
export type TransportSetting =
  | { kind: 'port'; envVar: string; defaultPort: number; nextPorts?: number; description?: string }
  | { kind: 'url'; envVar: string; schemes: readonly string[]; example: string }
  | {
      /** A socket file `fileName` in the directory `envVar` names, which both services share (same host only). */
      kind: 'socket';
      envVar: string;
      fileName: string;
    };

/** What the config needs to know about a transport: its name and its setting. */
export interface TransportSpec {
  name: string;
  traits: {
    /**
     * Most CLIENTS the transport can run (websocket-push: 1, its receiver dials one connection back); undefined:
     * MAX_CLIENTS.
     */
    maxClients?: { clients: number; why: string };
    /** Most RECEIVERS the transport can run (websocket-push: 1); undefined: MAX_RECEIVERS. */
    maxReceivers?: { receivers: number; why: string };
  };
  deployment: {
    /** In the run TRANSPORTS gives when unset. */
    defaultRun: boolean;
    setting: TransportSetting;
  };
}

/** One bad variable: its name, the value found, and what is allowed. */
export interface ConfigIssue {
  variable: string;
  value: string | undefined;
  allowed: string;
}

/** Levels LOG_LEVEL accepts (pino's). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The validated configuration both services run with. */
export interface Config {
  /**
   * IMAGE_COUNT: recorded images per section; when durationMs is set, IMAGE_COUNT is unset and this is its default,
   * unused.
   */
  imageCount: number;
  /**
   * DURATION: each section sends its recorded images for this long instead of imageCount (under
   * RATE, a soak at a fixed rate); undefined: a count of images, the default.
   */
  durationMs: number | undefined;
  /** Requested image size; undefined means the bundled asset as it is. */
  imageSizeBytes: number | undefined;
  imagePath: string | undefined;
  transports: readonly string[];
  window: number;
  /**
   * RATE: images per second on an open-loop schedule, whatever the acks do; undefined: a closed
   * loop (the next image goes when the window has room). Under RATE, WINDOW bounds the images in
   * flight: one due while WINDOW are unacknowledged waits for a slot and goes late (nothing is dropped), its wait
   * counted in its age from the due time.
   */
  ratePerSecond: number | undefined;
  /**
   * Under RATE: DEADLINE_MS (default one frame interval, 1000 ÷ RATE), the age past which a frame is late, and
   * DEADLINE_MISS_PERCENT ÷ 100 (default 1 %), the share of frames that may miss it; undefined in a closed loop.
   */
  deadline: { deadlineMs: number; allowedLateShare: number } | undefined;
  /**
   * COMMAND_RATE: commands per second sent beside each section's images (and alone before them), timed and reported
   * apart from the images; undefined: no command lane, the default.
   */
  commandRatePerSecond: number | undefined;
  /** COMMAND_SIZE: bytes per command. */
  commandSizeBytes: number;
  /**
   * CLIENTS: connections the transmitter opens per section, each with its own WINDOW; the section's images are dealt to
   * whichever has room.
   */
  clients: number;
  /** RECEIVERS: receivers every image goes to (point-to-point transports send a copy to each, pub/sub ones fan out). */
  receivers: number;
  /**
   * Each receiver's control address when `npm start` runs several on this machine (ITB_RECEIVERS,
   * which it sets); undefined: RECEIVER_HOST names them all (every address it resolves to, as
   * compose's --scale gives), on CONTROL_PORT.
   */
  receiverAddresses: readonly { host: string; controlPort: number }[] | undefined;
  /** NETWORK_RATE, NETWORK_DELAY, NETWORK_LOSS: how `npm start` shapes the link (each undefined: not). */
  network: NetworkShaping;
  /**
   * The link between the two sides, in words, for every report: as `npm start` (or the compose
   * override) applied it (ITB_LINK, which they set), else loopback or the network to RECEIVER_HOST.
   */
  link: string;
  /** 'auto': each section warms up until its round trips are steady; a number: exactly that many warm-up images. */
  warmup: number | 'auto';
  /** Least and most time an automatic warm-up takes. */
  warmupMinMs: number;
  warmupMaxMs: number;
  /** Sections per transport, interleaved across transports. */
  repeat: number;
  /** Whether the receiver hashes every image; off only to measure what verification costs. */
  verify: boolean;
  /**
   * PROFILE: each side takes a V8 CPU profile of each section, which lands in the run's folder (the transmitter's
   * through the control port); off by default, as profiling slows what it measures.
   */
  profile: boolean;
  receiverHost: string;
  bindHost: string;
  controlPort: number;
  /** Port of every transport whose setting is a port, by transport name. */
  ports: Readonly<Record<string, number>>;
  /** Socket file of every transport whose setting is a socket (SOCKET_DIR and its file name), by transport name. */
  socketPaths: Readonly<Record<string, string>>;
  /**
   * URL of every transport whose setting is a URL, by transport name; undefined when unset. May hold a user and
   * password: reports show it through redactUrl().
   */
  urls: Readonly<Record<string, string | undefined>>;
  /**
   * Password of the broker of every transport whose setting is a URL, by transport name, from its
   * <NAME>_PASSWORD or <NAME>_PASSWORD_FILE (REDIS_PASSWORD for REDIS_URL); undefined: none apart
   * from the URL. Never reported.
   */
  brokerPasswords: Readonly<Record<string, string | undefined>>;
  outputDir: string;
  logLevel: (typeof LOG_LEVELS)[number];
  maxImageBytes: number;
  imageTimeoutMs: number;
  connectTimeoutMs: number;
  /** The secret transmitter and receiver share; undefined: it is in the file at authTokenFile. Never reported. */
  authToken: string | undefined;
  /**
   * Where the secret is when AUTH_TOKEN is unset: the receiver creates the file if it is missing, the transmitter reads
   * it.
   */
  authTokenFile: string;
}
