// What a user reads about each variable where they set it: .env.example's comments and the
// Kubernetes knobs' (deploy/k8s/overlays/default/knobs.env). `npm run generate` (scripts/generate.ts)
// writes those files, and compose's and the swarm stack's knob blocks, from this and the schema in
// config.ts; the values come from the schema's defaults, so no default is written down twice. A
// transport's port variable needs no entry: its comment is made from the transport's facts.

/** How one variable is shown where a user sets it. */
export interface VariableDoc {
  /** The comment above it in .env.example, line by line (without the `# `). */
  help: readonly string[];
  /**
   * The value .env.example and compose give it when that is not the schema's default as text: empty for a default
   * that must stay unset (IMAGE_COUNT clashes with DURATION) or that the program picks (LOG_LEVEL).
   */
  written?: string;
  /** A comment on its line in compose's and the stack's knob block (why it is written so). */
  composeNote?: string;
  /**
   * A port the receiver or transmitter binds: compose and the swarm stack pass it as they pass a knob, Kubernetes names
   * it in its manifests (the transports' port settings are such ports without an entry here).
   */
  isPort?: boolean;
  /** Its help goes on with every transport's name, in the table's order. */
  listsTransports?: boolean;
  /**
   * Set but empty is refused (TRANSPORTS): compose's interpolation must then be `${X-default}`, not `${X:-default}`.
   */
  emptyIsError?: boolean;
  /**
   * A knob: passed to both services by docker-compose.yml, the swarm stack and Kubernetes (knobs.env, with this
   * comment). Undefined: an address, port, secret or local-only setting, which each deployment fixes itself.
   */
  knobHelp?: readonly string[];
}

/**
 * Stands, in {@link ENV_FILE_LAYOUT}, for every transport's setting: the ports, then each broker URL and password.
 */
export const TRANSPORT_SETTINGS = 'transport settings';

/** .env.example's order: groups of variables, a blank line between groups. */
export const ENV_FILE_LAYOUT: readonly (readonly string[])[] = [
  [
    'IMAGE_COUNT',
    'DURATION',
    'IMAGE_SIZE',
    'IMAGE_PATH',
    'TRANSPORTS',
    'WINDOW',
    'CLIENTS',
    'RECEIVERS',
    'RATE',
    'WARMUP',
    'WARMUP_MIN_MS',
    'WARMUP_MAX_MS',
    'REPEAT',
    'VERIFY',
  ],
  ['RECEIVER_HOST', 'BIND_HOST', 'CONTROL_PORT', TRANSPORT_SETTINGS],
  ['NETWORK_RATE', 'NETWORK_DELAY', 'NETWORK_LOSS'],
  ['OUTPUT_DIR', 'LOG_LEVEL', 'MAX_IMAGE_SIZE', 'IMAGE_TIMEOUT_MS', 'CONNECT_TIMEOUT_MS'],
  ['AUTH_TOKEN', 'AUTH_TOKEN_FILE'],
];

/** Every variable but the transports' port settings, by name. */
export const VARIABLE_DOCS: Readonly<Record<string, VariableDoc>> = {
  IMAGE_COUNT: {
    help: ['Images recorded per transport; empty: 10. Leave it empty when DURATION is set.'],
    written: '',
    composeNote: 'Empty: 10 images, as in the code; a default here would clash with DURATION (never both).',
    knobHelp: ['Images recorded per transport; empty: 10. Leave it empty when DURATION is set.'],
  },
  DURATION: {
    help: [
      'Instead of IMAGE_COUNT, how long each section sends its recorded images: 30s, 10m, 1h30m,',
      '1500ms (whole numbers, units largest first; a bare number is refused), from 1s to 7 days (168h).',
      'With RATE, a soak at a fixed rate. Setting both DURATION and IMAGE_COUNT is an error.',
    ],
    knobHelp: [
      'Instead of IMAGE_COUNT, how long each section sends (30s, 10m, 1h30m; 1s to 168h); not with',
      "IMAGE_COUNT. Raise the Job's activeDeadlineSeconds (2 h) above DURATION x transports x REPEAT.",
    ],
  },
  IMAGE_SIZE: {
    help: [
      'Bytes per image; empty: the bundled assets/sample.png (545,792 bytes). Any other size',
      'generates a valid PNG of exactly that size.',
    ],
    knobHelp: ['Bytes per image (533KB, 4MB, 1MiB, …); empty: the bundled assets/sample.png (545,792 bytes).'],
  },
  IMAGE_PATH: {
    help: [
      'Send this file instead of a generated image (not together with IMAGE_SIZE); with docker',
      'compose, put it under images/ and write images/<file>.',
    ],
  },
  TRANSPORTS: {
    help: ['Transports to run, in this order; "all" runs every one:'],
    listsTransports: true,
    emptyIsError: true,
    composeNote: '"-", not ":-": a TRANSPORTS set but empty is refused, as by npm start, not read as the default.',
    knobHelp: ['Transports to run, in this order; "all" runs every one (websocket-push only with RECEIVERS=1).'],
  },
  WINDOW: {
    help: ['Images in flight: the next one is sent when fewer than WINDOW are unacknowledged.'],
    knobHelp: ['Images in flight: the next one is sent when fewer than WINDOW are unacknowledged.'],
  },
  CLIENTS: {
    help: [
      'Connections the transmitter opens per transport, each with its own WINDOW (1 to 1000, at most',
      'IMAGE_COUNT unless DURATION is set); the images go to whichever has room. The report adds per-client fairness.',
    ],
    knobHelp: ['Connections the transmitter opens per transport, each with its own WINDOW (1 to 1000).'],
  },
  RECEIVERS: {
    help: [
      'Receivers every image goes to (1 to 32): point-to-point transports send a copy to each;',
      'ZeroMQ PUB/SUB, Redis pub/sub and NATS one send that reaches them all. npm start starts this',
      'many; with docker compose: docker compose up --scale receiver=N (RECEIVER_HOST resolves to all).',
    ],
    knobHelp: ['Receivers every image goes to (1 to 32): must equal the receiver replicas in kustomization.yaml.'],
  },
  RATE: {
    help: [
      'Unset: a closed loop (as above). Images per second: an open loop, each image due at its time',
      'whatever the acks do; one due while WINDOW are unacknowledged is dropped at the sender and',
      'counted. Latency is then also counted from each due time (coordinated omission corrected).',
    ],
    knobHelp: ['Empty: a closed loop; images per second: an open loop, each image due at its time.'],
  },
  WARMUP: {
    help: [
      'Warm-up of each section, not recorded: auto = until the round trips are steady (at least',
      'WARMUP_MIN_MS and a few windows, at most WARMUP_MAX_MS); a number = exactly that many images;',
      '0 = none, a cold run on purpose.',
    ],
    knobHelp: ['Warm-up of each section, not recorded: auto, a number of images, or 0 for none.'],
  },
  WARMUP_MIN_MS: {
    help: ['Least time an auto warm-up takes.'],
    knobHelp: ['Least time an auto warm-up takes.'],
  },
  WARMUP_MAX_MS: {
    help: ['Most time an auto warm-up takes; a section not steady by then is marked NOT STEADY.'],
    knobHelp: ['Most time an auto warm-up takes; a section not steady by then is marked NOT STEADY.'],
  },
  REPEAT: {
    help: ['Sections per transport, interleaved (A B C, A B C, ...); the report gives the median and spread.'],
    knobHelp: ['Sections per transport, interleaved; the report gives the median and spread.'],
  },
  VERIFY: {
    help: ['false only to measure what verification costs: the receiver then skips the checksum.'],
    knobHelp: ['false only to measure what verification costs: the receiver then skips the checksum.'],
  },
  RECEIVER_HOST: { help: ['Where the transmitter finds the receiver (docker compose sets "receiver" itself).'] },
  BIND_HOST: { help: ['Address the receiver listens on (docker compose sets 0.0.0.0 itself).'] },
  CONTROL_PORT: {
    help: ["The receiver's HTTP control endpoint; docker compose publishes it on 127.0.0.1."],
    isPort: true,
  },
  REDIS_URL: {
    help: [
      'Redis both services use (redis, redis-list, redis-pubsub); empty with npm start: a private',
      'redis-server from PATH (docker compose sets redis://redis:6379 itself). Every report shows it',
      'as redis://***@host:port when it holds a user or password; better keep the password apart:',
    ],
  },
  REDIS_PASSWORD: {
    help: ["The password of REDIS_URL's server (with the user in REDIS_URL, if any): not in the URL then."],
  },
  REDIS_PASSWORD_FILE: {
    help: ['Or a file that holds it (a Docker or Kubernetes secret); not together with REDIS_PASSWORD.'],
  },
  NATS_URL: {
    help: [
      'NATS both services use; empty with npm start: a private nats-server from PATH',
      '(docker compose sets nats://nats:4222 itself). Shown as nats://***@host:port, as REDIS_URL.',
    ],
  },
  NATS_PASSWORD: {
    help: ["The password of the user in NATS_URL; with no user there, the server's token (nats-server --auth)."],
  },
  NATS_PASSWORD_FILE: { help: ['Or a file that holds it; not together with NATS_PASSWORD.'] },
  NETWORK_RATE: {
    help: [
      'A shaped link, npm start only (needs root): the transmitter then runs in a network namespace of',
      'its own, joined by a veth pair (MTU 1500), with tc on both ends. Rate each way, in tc units',
      '(e.g. 200mbit), shaped with tbf.',
    ],
  },
  NETWORK_DELAY: {
    help: ["Delay each way (e.g. 20ms), with netem: needs the kernel's sch_netem (npm start exits 2 without)."],
  },
  NETWORK_LOSS: { help: ['Packets lost each way (e.g. 0.1%), with netem, as NETWORK_DELAY.'] },
  OUTPUT_DIR: { help: ['Where the receiver writes output.log and results.json (docker compose: ./output).'] },
  LOG_LEVEL: {
    help: [
      'pino level: fatal, error, warn, info, debug (every image), trace, silent; empty: info, or',
      'warn on a terminal, where the transmitter draws progress bars.',
    ],
    written: '',
    knobHelp: ['pino level: fatal, error, warn, info, debug, trace, silent; empty: info.'],
  },
  MAX_IMAGE_SIZE: {
    help: ['The receiver refuses frames announcing more; message limits are raised to this.'],
    // The schema's default is a number of bytes; a user writes a size.
    written: '256MiB',
    knobHelp: ['The receiver refuses frames announcing more; message limits are raised to this.'],
  },
  IMAGE_TIMEOUT_MS: {
    help: ['A transport fails when no acknowledgement arrives for this long.'],
    knobHelp: ['A transport fails when no acknowledgement arrives for this long.'],
  },
  CONNECT_TIMEOUT_MS: {
    help: [
      "How long the transmitter waits for the receiver, for a receiver's listener that is down to come",
      'back before its section (a broker starting late), and for each transport to connect.',
    ],
    knobHelp: [
      'How long the transmitter waits for the receivers, and for each transport to connect; raise it',
      "when the receivers' image still has to be pulled.",
    ],
  },
  AUTH_TOKEN: {
    help: [
      'The secret both services share: control requests that change anything and every data',
      'connection must prove they hold it. npm start makes a fresh one per run when this is empty.',
      'Empty otherwise: the secret is read from AUTH_TOKEN_FILE (the receiver creates it).',
    ],
  },
  AUTH_TOKEN_FILE: {
    help: [
      'Where the secret is kept when AUTH_TOKEN is empty: the receiver creates the file with a random',
      'secret (mode 0600) if it is missing, and a transmitter reads it (docker compose shares it',
      'through a volume and sets the path itself).',
    ],
  },
};
