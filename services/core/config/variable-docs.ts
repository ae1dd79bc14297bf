import { SAMPLE_ASSET_BYTES } from '../model/png.js';

// What a user reads about each variable where they set it or looks it up: .env.example's comments,
// the Kubernetes knobs' (deploy/k8s/overlays/default/knobs.env) and the README's Configuration table.
// `npm run generate` (scripts/generate.ts) writes those, and compose's and the swarm stack's knob
// blocks, from this and the schema in config.ts; the values come from the schema's defaults, so no
// default is written down twice. A transport's port variable needs no entry: its comment and its
// README row are made from the transport's facts (its port setting's `description`).

/** How one variable is shown where a user sets it. */
export interface VariableDoc {
  /** Its text in the README's Configuration table (Markdown), in parts joined by a space. */
  meaning: readonly string[];
  /**
   * The README table's default when the schema's cannot say it (a default the program picks, or the bundled asset);
   * undefined: the value .env.example gives it, else the schema's, in backticks, or "unset".
   */
  shownDefault?: string;
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
 * Stands, in {@link ENV_FILE_LAYOUT} and {@link README_TABLE_LAYOUT}, for every transport's setting: the ports, then
 * each broker URL and password.
 */
export const TRANSPORT_SETTINGS = 'transport settings';

// The groups both orders below are made of, so each name is written once.
const WORKLOAD_VARIABLES = [
  'IMAGE_COUNT',
  'DURATION',
  'IMAGE_SIZE',
  'IMAGE_PATH',
  'TRANSPORTS',
  'WINDOW',
  'CLIENTS',
  'RECEIVERS',
  'RATE',
  'DEADLINE_MS',
  'DEADLINE_MISS_PERCENT',
  'COMMAND_RATE',
  'COMMAND_SIZE',
  'WARMUP',
  'WARMUP_MIN_MS',
  'WARMUP_MAX_MS',
];
const ADDRESS_VARIABLES = ['RECEIVER_HOST', 'BIND_HOST', 'CONTROL_PORT'];
const NETWORK_VARIABLES = ['NETWORK_RATE', 'NETWORK_DELAY', 'NETWORK_LOSS'];
const SERVICE_VARIABLES = ['OUTPUT_DIR', 'LOG_LEVEL', 'MAX_IMAGE_SIZE', 'IMAGE_TIMEOUT_MS', 'CONNECT_TIMEOUT_MS'];
const AUTH_VARIABLES = ['AUTH_TOKEN', 'AUTH_TOKEN_FILE'];

/** .env.example's order: groups of variables, a blank line between groups. */
export const ENV_FILE_LAYOUT: readonly (readonly string[])[] = [
  [...WORKLOAD_VARIABLES, 'REPEAT', 'VERIFY', 'PROFILE'],
  [...ADDRESS_VARIABLES, TRANSPORT_SETTINGS],
  NETWORK_VARIABLES,
  SERVICE_VARIABLES,
  AUTH_VARIABLES,
];

/**
 * Stands, in TRANSPORTS' meaning, for "all thirteen in table order: `websocket`, …": the count in words and every
 * name, from the transport table.
 */
export const ALL_TRANSPORTS = '{all transports}';

/**
 * Stand, in CLIENTS' and RECEIVERS' meanings, for the transports whose traits cap that variable, with their caps ("1
 * with `websocket-push`, `zeromq-pair`"), from the transport table.
 */
export const CAPPED_CLIENTS = '{capped clients}';
/** See CAPPED_CLIENTS. */
export const CAPPED_RECEIVERS = '{capped receivers}';

/** A variable the services do not read but docker-compose.yml does, as the README's table shows it. */
export interface ComposeOnlyDoc {
  meaning: readonly string[];
  shownDefault: string;
}

/** The compose-only variables of the README's table, by name. */
export const COMPOSE_ONLY_DOCS: Readonly<Record<string, ComposeOnlyDoc>> = {
  CONTROL_PORTS: {
    meaning: [
      "docker compose only: the host ports on 127.0.0.1 the receiver's control port is published on, one per",
      'replica (`--scale receiver=N`)',
    ],
    // docker-compose.yml's own default: CONTROL_PORT's and the next ones, one per receiver up to MAX_RECEIVERS.
    shownDefault: '`8080-8111`',
  },
};

/** The README's Configuration table's order: every variable of .env.example, and the compose-only ones. */
export const README_TABLE_LAYOUT: readonly string[] = [
  ...WORKLOAD_VARIABLES,
  'VERIFY',
  'PROFILE',
  ...NETWORK_VARIABLES,
  'REPEAT',
  ...ADDRESS_VARIABLES,
  ...Object.keys(COMPOSE_ONLY_DOCS),
  TRANSPORT_SETTINGS,
  ...SERVICE_VARIABLES,
  ...AUTH_VARIABLES,
];

/** Every variable but the transports' port settings, by name. */
export const VARIABLE_DOCS: Readonly<Record<string, VariableDoc>> = {
  IMAGE_COUNT: {
    meaning: [
      'images recorded per transport (1 to 1,000,000,000; nothing is held per image, the disk takes about',
      '70 bytes each)',
    ],
    help: ['Images recorded per transport; empty: 10. Leave it empty when DURATION is set.'],
    written: '',
    composeNote: 'Empty: 10 images, as in the code; a default here would clash with DURATION (never both).',
    knobHelp: ['Images recorded per transport; empty: 10. Leave it empty when DURATION is set.'],
  },
  DURATION: {
    meaning: [
      'instead of `IMAGE_COUNT`, how long each section sends its recorded images: `30s`, `10m`, `1h30m`,',
      '`2m30s`, `1500ms` (whole numbers with `h`, `m`, `s`, `ms`, largest first; a bare number is refused:',
      'it needs units), from `1s` (the figures are per second) to 7 days (`168h`); with `RATE`, a soak at a',
      'fixed rate. Setting it and `IMAGE_COUNT` both is an error naming the two (leave `IMAGE_COUNT` empty,',
      'as `.env.example` does)',
    ],
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
    shownDefault: `the asset, ${SAMPLE_ASSET_BYTES.toLocaleString('en-US')} B`,
    meaning: ['bytes per image; any other size generates a PNG of exactly that size (at least 84 B)'],
    help: [
      'Bytes per image; empty: the bundled assets/sample.png (545,792 bytes). Any other size',
      'generates a valid PNG of exactly that size.',
    ],
    knobHelp: ['Bytes per image (533KB, 4MB, 1MiB, …); empty: the bundled assets/sample.png (545,792 bytes).'],
  },
  IMAGE_PATH: {
    meaning: [
      'send this file instead (any format); not together with `IMAGE_SIZE`; with Docker, a file under',
      '`images/`',
    ],
    help: [
      'Send this file instead of a generated image (not together with IMAGE_SIZE); with docker',
      'compose, put it under images/ and write images/<file>.',
    ],
  },
  TRANSPORTS: {
    meaning: [
      'which transports, in this order; `all` runs {all transports}. Set but empty, or with an empty entry',
      '(`TRANSPORTS=`, `,`, `websocket,`), is an error, not the default: an empty entry is most often a',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: compose's interpolation, shown as the user writes it.
      'name deleted by mistake; compose and the swarm stack pass it on as set (`${TRANSPORTS-…}`), so they',
      'refuse it too',
    ],
    help: ['Transports to run, in this order; "all" runs every one:'],
    listsTransports: true,
    emptyIsError: true,
    composeNote: '"-", not ":-": a TRANSPORTS set but empty is refused, as by npm start, not read as the default.',
    knobHelp: ['Transports to run, in this order; "all" runs every one (websocket-push only with RECEIVERS=1).'],
  },
  WINDOW: {
    meaning: [
      'images stamped and not yet acknowledged, on every transport alike (1 to 1024); see [What is',
      'measured](docs/measurement.md)',
    ],
    help: ['Images in flight: the next one is sent when fewer than WINDOW are unacknowledged.'],
    knobHelp: ['Images in flight: the next one is sent when fewer than WINDOW are unacknowledged.'],
  },
  CLIENTS: {
    meaning: [
      'connections the transmitter opens per transport (1 to 1000, at most `IMAGE_COUNT` unless `DURATION`',
      "is set), each with its own `WINDOW`; the section's images go to whichever has room, and the report",
      "adds each client's throughput (see [What is measured](docs/measurement.md)). At most",
      `${CAPPED_CLIENTS}: a run asking for more is refused at start with the transport's reason`,
    ],
    help: [
      'Connections the transmitter opens per transport, each with its own WINDOW (1 to 1000, at most',
      'IMAGE_COUNT unless DURATION is set); the images go to whichever has room. The report adds per-client fairness.',
    ],
    knobHelp: ['Connections the transmitter opens per transport, each with its own WINDOW (1 to 1000).'],
  },
  RECEIVERS: {
    meaning: [
      'receivers every image goes to (1 to 32): a copy each over point-to-point transports, one send that',
      'reaches all over ZeroMQ PUB/SUB, Redis pub/sub and NATS; `npm start` starts that many, and under',
      'compose add `--scale receiver=N` (see Several receivers in [What is measured](docs/measurement.md)).',
      `At most ${CAPPED_RECEIVERS}: a run asking for more is refused at start with the transport's reason`,
    ],
    help: [
      'Receivers every image goes to (1 to 32): point-to-point transports send a copy to each;',
      'ZeroMQ PUB/SUB, Redis pub/sub and NATS one send that reaches them all. npm start starts this',
      'many; with docker compose: docker compose up --scale receiver=N (RECEIVER_HOST resolves to all).',
    ],
    knobHelp: ['Receivers every image goes to (1 to 32): must equal the receiver replicas in kustomization.yaml.'],
  },
  RATE: {
    meaning: [
      'unset: a closed loop (the next image goes when the window has room). Images per second (above 0, at',
      'most 1,000,000, fractions allowed): an open loop, see [What is measured](docs/measurement.md);',
      '`WINDOW` then bounds the images in flight: a frame due while it is full waits for a slot and goes',
      "late (nothing is dropped), and the headline is each frame's age from its due time",
    ],
    help: [
      'Unset: a closed loop (as above). Images per second: an open loop, each image due at its time',
      'whatever the acks do; one due while WINDOW are unacknowledged waits for a slot and goes late',
      '(nothing is dropped). The headline is then the age of each frame at arrival, counted from its',
      'due time (coordinated omission corrected); the time on the link is beside it.',
    ],
    knobHelp: ['Empty: a closed loop; images per second: an open loop, each image due at its time.'],
  },
  DEADLINE_MS: {
    meaning: [
      'with `RATE` only: a frame older than this at arrival, counted from its due time, missed its deadline',
      '(milliseconds, fractions allowed); unset: one frame interval, 1000 ÷ `RATE`',
    ],
    help: [
      'With RATE only: a frame older than this many ms at arrival (from its due time) is late.',
      'Unset: one frame interval (1000 / RATE).',
    ],
    knobHelp: ['Empty: one frame interval; ms after its due time past which a frame is late (RATE only).'],
  },
  DEADLINE_MISS_PERCENT: {
    meaning: [
      'with `RATE` only: the percentage of frames that may miss `DEADLINE_MS` (late, or never delivered',
      "intact) before a section's verdict says it missed its deadline (0 to 100); unset: 1",
    ],
    help: [
      'With RATE only: the % of frames that may miss DEADLINE_MS (late or not delivered) before',
      "the section's verdict says it missed its deadline (0 to 100). Unset: 1.",
    ],
    knobHelp: ['Empty: 1; % of frames that may miss DEADLINE_MS before the verdict says so (RATE only).'],
  },
  COMMAND_RATE: {
    meaning: [
      'unset: no command lane. Commands per second (above 0, at most 10,000): small frames sent on the same',
      "transport beside each section's images, and alone before them, each acknowledged and timed like an",
      'image but reported apart (one-way and round trip, alone and beside the images), never in MB/s; see',
      '[The command lane](docs/measurement.md#the-command-lane). Not with `RECEIVERS` above 1',
    ],
    help: [
      "Unset: no command lane. Commands per second: small frames sent beside each section's images on",
      'the same transport (and alone before them), timed and reported apart from the images.',
    ],
    knobHelp: ['Empty: no command lane; commands per second sent beside the images, timed apart.'],
  },
  COMMAND_SIZE: {
    meaning: ['bytes per command (1 B to 64 KiB)'],
    help: ['Bytes per command (1 B to 64 KiB).'],
    written: '64B',
    knobHelp: ['Bytes per command (1 B to 64 KiB).'],
  },
  WARMUP: {
    meaning: [
      'the warm-up of each section, on its connection, not recorded: `auto` until the round trips are',
      'steady (see Warm-up in [What is measured](docs/measurement.md)), a number for exactly that many',
      'images (0 to 100,000), `0` for none (a cold run on purpose)',
    ],
    help: [
      'Warm-up of each section, not recorded: auto = until the round trips are steady (at least',
      'WARMUP_MIN_MS and a few windows, at most WARMUP_MAX_MS); a number = exactly that many images;',
      '0 = none, a cold run on purpose.',
    ],
    knobHelp: ['Warm-up of each section, not recorded: auto, a number of images, or 0 for none.'],
  },
  WARMUP_MIN_MS: {
    meaning: ['an `auto` warm-up lasts at least this long (0 to 600,000)'],
    help: ['Least time an auto warm-up takes.'],
    knobHelp: ['Least time an auto warm-up takes.'],
  },
  WARMUP_MAX_MS: {
    meaning: [
      'an `auto` warm-up lasts at most this long; a section that is not steady by then is marked `NOT',
      'STEADY` (1 to 3,600,000)',
    ],
    help: ['Most time an auto warm-up takes; a section not steady by then is marked NOT STEADY.'],
    knobHelp: ['Most time an auto warm-up takes; a section not steady by then is marked NOT STEADY.'],
  },
  REPEAT: {
    meaning: [
      'sections per transport (1 to 100), interleaved with the order rotated (A B C, B C A, C A B, …); the',
      'report gives the median completed section and the spread',
    ],
    help: ['Sections per transport, interleaved (A B C, A B C, ...); the report gives the median and spread.'],
    knobHelp: ['Sections per transport, interleaved; the report gives the median and spread.'],
  },
  VERIFY: {
    meaning: [
      "`false` skips the receiver's checksum, only to measure what verification costs (output.log then says",
      'NOT VERIFIED)',
    ],
    help: ['false only to measure what verification costs: the receiver then skips the checksum.'],
    knobHelp: ['false only to measure what verification costs: the receiver then skips the checksum.'],
  },
  PROFILE: {
    meaning: [
      "`1`: each side takes a V8 CPU profile of each section, from its start to its end, into the run's folder",
      '(`profiles/tcp-receiver.cpuprofile`, `profiles/tcp-transmitter.cpuprofile`, `-repeat2` in the name with',
      '`REPEAT` above 1); the transmitter sends its own, gzipped, to the receiver over the control port (at most 64',
      'MiB gzipped). output.log names them under each section; they open in Chrome DevTools or speedscope, and',
      '`node dist/scripts/tools/profile-summary.js <file>` sums them up. Profiling slows what it measures: a run',
      'for figures leaves it `0`. Set on both sides: each profiles itself',
    ],
    help: [
      "1: a V8 CPU profile of each section on each side, in the run folder's profiles/ (the transmitter's",
      'sent gzipped over the control port); output.log names them. It slows what it measures.',
    ],
    written: '0',
    knobHelp: ["1: a V8 CPU profile of each section on each side, in the run folder's profiles/; slows the run."],
  },
  RECEIVER_HOST: {
    meaning: ['where the transmitter finds the receiver'],
    help: ['Where the transmitter finds the receiver (docker compose sets "receiver" itself).'],
  },
  BIND_HOST: {
    meaning: ['address the receiver listens on (`0.0.0.0` in a container)'],
    help: ['Address the receiver listens on (docker compose sets 0.0.0.0 itself).'],
  },
  CONTROL_PORT: {
    meaning: ["the receiver's HTTP control endpoint (`GET /health`)"],
    help: ["The receiver's HTTP control endpoint; docker compose publishes it on 127.0.0.1."],
    isPort: true,
  },
  SOCKET_DIR: {
    meaning: [
      "directory of the same-host transports' socket files (unix: `unix.sock`, zeromq-ipc: `zeromq-ipc.sock`),",
      'which both services must share: the receiver creates it 0700 if missing and refuses one others can write',
    ],
    help: [
      "Directory of the same-host transports' socket files (unix, zeromq-ipc); both services must",
      'see the same one (docker compose mounts a volume only the two share at /app/sockets). The',
      'receiver creates it 0700 when missing and refuses one that is not its own or others can write.',
    ],
  },
  REDIS_URL: {
    meaning: [
      '`redis://host:port` of the Redis both sides use (redis, redis-list, redis-pubsub, redis-kv); shown as',
      '`redis://***@host:port` in every output when it holds a user or password',
    ],
    help: [
      'Redis both services use (redis, redis-list, redis-pubsub, redis-kv); empty with npm start: a private',
      'redis-server from PATH (docker compose sets redis://redis:6379 itself). Every report shows it',
      'as redis://***@host:port when it holds a user or password; better keep the password apart:',
    ],
  },
  REDIS_PASSWORD: {
    meaning: [
      "the password of `REDIS_URL`'s server (its user, if any, in the URL); prefer it to a password in the",
      'URL (setting both is refused); see [Broker passwords](docs/security.md#broker-passwords)',
    ],
    help: ["The password of REDIS_URL's server (with the user in REDIS_URL, if any): not in the URL then."],
  },
  REDIS_PASSWORD_FILE: {
    meaning: [
      'instead of `REDIS_PASSWORD`, a file that holds it (trailing newlines dropped; a regular file of at',
      'most 64 KiB); not together with it',
    ],
    help: ['Or a file that holds it (a Docker or Kubernetes secret); not together with REDIS_PASSWORD.'],
  },
  MQTT_URL: {
    meaning: ['`mqtt://host:port` of the MQTT broker (MQTT 5) both sides use; shown as `REDIS_URL` is'],
    help: [
      'The MQTT broker (MQTT 5) both services use; empty with npm start: a private mosquitto from PATH',
      '(docker compose sets mqtt://mqtt:1883 itself). Shown as mqtt://***@host:port, as REDIS_URL.',
    ],
  },
  MQTT_PASSWORD: {
    meaning: ["the password of the user in `MQTT_URL` (the broker's own user, e.g. Mosquitto's password_file)"],
    help: ["The password of the user in MQTT_URL (the broker's own user): not in the URL then."],
  },
  MQTT_PASSWORD_FILE: {
    meaning: ['instead of `MQTT_PASSWORD`, a file that holds it'],
    help: ['Or a file that holds it; not together with MQTT_PASSWORD.'],
  },
  NATS_URL: {
    meaning: ['`nats://host:port` of the NATS server both sides use; shown as `REDIS_URL` is'],
    help: [
      'NATS both services use; empty with npm start: a private nats-server from PATH',
      '(docker compose sets nats://nats:4222 itself). Shown as nats://***@host:port, as REDIS_URL.',
    ],
  },
  NATS_PASSWORD: {
    meaning: ["the password of the user in `NATS_URL`; with no user there, the server's token"],
    help: ["The password of the user in NATS_URL; with no user there, the server's token (nats-server --auth)."],
  },
  NATS_PASSWORD_FILE: {
    meaning: ['instead of `NATS_PASSWORD`, a file that holds it'],
    help: ['Or a file that holds it; not together with NATS_PASSWORD.'],
  },
  AMQP_URL: {
    meaning: [
      '`amqp://user@host:port/vhost` of the RabbitMQ both sides use (amqp); shown as `REDIS_URL` is, the',
      'password apart in `AMQP_PASSWORD`',
    ],
    help: [
      'RabbitMQ both services use (amqp); empty with npm start: a private rabbitmq-server from PATH',
      '(docker compose sets amqp://rabbitmq:5672 itself). The user goes in the URL (guest when none),',
      'the password in AMQP_PASSWORD. Shown as amqp://***@host:port, as REDIS_URL.',
    ],
  },
  AMQP_PASSWORD: {
    meaning: ["the password of the user in `AMQP_URL` (RabbitMQ's; guest's when the URL names none)"],
    help: ['The password of the user in AMQP_URL: not in the URL then.'],
  },
  AMQP_PASSWORD_FILE: {
    meaning: ['instead of `AMQP_PASSWORD`, a file that holds it'],
    help: ['Or a file that holds it; not together with AMQP_PASSWORD.'],
  },
  NETWORK_RATE: {
    meaning: [
      "`npm start` only, as root: shape the link to this rate each way, in tc's units (`200mbit`; 8kbit to",
      '100gbit); see [Shaped links](docs/clusters.md#shaped-links)',
    ],
    help: [
      'A shaped link, npm start only (needs root): the transmitter then runs in a network namespace of',
      'its own, joined by a veth pair (MTU 1500), with tc on both ends. Rate each way, in tc units',
      '(e.g. 200mbit), shaped with tbf.',
    ],
  },
  NETWORK_DELAY: {
    meaning: [
      'as `NETWORK_RATE`, a delay each way (`20ms`; us, ms or s, at most 60s), with netem: needs the',
      "kernel's `sch_netem`. Without it, `npm run bench -- delay` puts a delaying relay of its own in front of",
      'grpc, grpc-connect, websocket and tcp: at 2 ms each way each paid the delay once per 533 KiB image',
      '(1.8–1.9 ms added), where a grpc-js server as shipped, with its 64 KiB HTTP/2 window, paid 51 ms, a',
      'round trip per 64 KiB; both gRPC receivers here open their windows',
      '([Shaped links](docs/clusters.md#shaped-links))',
    ],
    help: ["Delay each way (e.g. 20ms), with netem: needs the kernel's sch_netem (npm start exits 2 without)."],
  },
  NETWORK_LOSS: {
    meaning: ['as `NETWORK_DELAY`, a share of packets lost each way (`0.1%`)'],
    help: ['Packets lost each way (e.g. 0.1%), with netem, as NETWORK_DELAY.'],
  },
  OUTPUT_DIR: {
    meaning: [
      'where the receiver writes `output.log` and `results.json`. Checked at start without creating',
      'anything: every level that exists must be a directory, and the deepest one writable and on a file',
      "system of files; procfs, sysfs, cgroup and the kernel's other pseudo file systems are refused by",
      'name (`/proc/x: /proc, the deepest part that exists, is on procfs …`); one that other users may write',
      'without the sticky bit (0777) is refused, as any local user could plant a link in it. Created, one level',
      'at a time (mode 0775), only once the whole configuration is accepted',
    ],
    help: ['Where the receiver writes output.log and results.json (docker compose: ./output).'],
  },
  LOG_LEVEL: {
    shownDefault: '`info` (`warn` on a terminal)',
    meaning: [
      'pino level: `fatal` … `trace`, or `silent`; `debug` logs every image. Unset on a terminal, only',
      'warnings are logged so the progress bars stay readable. On a terminal each entry is one line (`WARN',
      '(receiver): redis: …`), printed above the bars; anywhere else (pipe, file, CI, container) JSON lines',
      'on stderr',
    ],
    help: [
      'pino level: fatal, error, warn, info, debug (every image), trace, silent; empty: info, or',
      'warn on a terminal, where the transmitter draws progress bars.',
    ],
    written: '',
    knobHelp: ['pino level: fatal, error, warn, info, debug, trace, silent; empty: info.'],
  },
  MAX_IMAGE_SIZE: {
    meaning: [
      'the receiver refuses frames announcing more; message limits are raised to exactly this (1 B to 2.0',
      "GiB, 2,146,435,071 bytes: gRPC's limits are signed 32-bit)",
    ],
    help: ['The receiver refuses frames announcing more; message limits are raised to this.'],
    // The schema's default is a number of bytes; a user writes a size.
    written: '256MiB',
    knobHelp: ['The receiver refuses frames announcing more; message limits are raised to this.'],
  },
  IMAGE_TIMEOUT_MS: {
    meaning: ['a transport fails when no acknowledgement arrives for this long'],
    help: ['A transport fails when no acknowledgement arrives for this long.'],
    knobHelp: ['A transport fails when no acknowledgement arrives for this long.'],
  },
  CONNECT_TIMEOUT_MS: {
    meaning: [
      "how long the transmitter waits for the receiver, for a receiver's listener that is down to come back",
      'before its section, and for each transport to connect (refused attempts are retried until then, on',
      'every transport)',
    ],
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
    meaning: [
      'the secret both services share (16 to 256 characters from `A-Z a-z 0-9 . _ ~ + / -`, e.g. `openssl',
      'rand -base64 32`); see [Who gets in](docs/security.md). `npm start` makes a fresh one per run when',
      'it is unset',
    ],
    help: [
      'The secret both services share: control requests that change anything and every data',
      'connection must prove they hold it. npm start makes a fresh one per run when this is empty.',
      'Empty otherwise: the secret is read from AUTH_TOKEN_FILE (the receiver creates it).',
    ],
  },
  AUTH_TOKEN_FILE: {
    meaning: [
      'where the secret is kept when `AUTH_TOKEN` is unset: the receiver creates the file with a random',
      'secret (mode 0600) if it is missing, a transmitter reads it; compose sets `/app/auth/token` on a',
      "volume only the two services mount. Never a link, and private to the service's user (see [Who gets",
      'in](docs/security.md))',
    ],
    help: [
      'Where the secret is kept when AUTH_TOKEN is empty: the receiver creates the file with a random',
      'secret (mode 0600) if it is missing, and a transmitter reads it (docker compose shares it',
      'through a volume and sets the path itself).',
    ],
  },
};
