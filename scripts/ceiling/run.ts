import { withTimeout } from '../../services/shared/waits.js';
import type {
  CeilingPair,
  CeilingReceiveOptions,
  CeilingReceiver,
} from '../../services/transports/ceiling-contract.js';
import { drive, type CeilingFigures, type DriveOptions, type DrivenLink, type ReceiverReport } from './drive.js';

// One ceiling run's two sides and their order: the receiver listens (or subscribes) first and the
// sender dials it, or, for a pair whose sender listens (websocket-push), both start together and
// the receiver dials in. The bench runs the two sides in two processes (./main.ts); the tests in
// one (runInProcess), which is where onImage can see every image.

/** Everything one run needs besides the pair. */
export interface CeilingRunOptions extends DriveOptions {
  host: string;
  /** The port the listening side binds: pick a free one (both sides must know it before they start). */
  port: number;
  brokerUrl: string | undefined;
  channel: string;
  /** Bound on starting each side (listening, dialling, subscribing). */
  startTimeoutMs: number;
}

/** The receiver side's stamp of the latest timed arrival (what the run's span ends at), and its CPU since the first. */
export interface ArrivalClock {
  /** Stamps image `seq`'s arrival now; warm-up images (seq below `warmup`) are not timed. */
  arrived(seq: number): void;
  /** The stamp of the latest timed arrival so far; undefined before the first. */
  lastArrivalNs(): bigint | undefined;
  /** This process's CPU (user + system) since the first timed arrival, in ms; null before it. */
  cpuMsSinceFirstArrival(): number | null;
}

/** A clock for a run whose first `warmup` images are untimed. */
export function arrivalClock(warmup: number): ArrivalClock {
  let lastNs: bigint | undefined;
  // Read once, at the first timed arrival (whichever seq it is: a transport may reorder), and not per image: it is a
  // system call. The span it starts is the suite receiver's cost span: first recorded image to the reading.
  let cpuStart: NodeJS.CpuUsage | undefined;
  return {
    arrived(seq) {
      if (seq < warmup) return;
      cpuStart ??= process.cpuUsage();
      lastNs = process.hrtime.bigint();
    },
    lastArrivalNs: () => lastNs,
    cpuMsSinceFirstArrival() {
      if (cpuStart === undefined) return null;
      const cpu = process.cpuUsage(cpuStart);
      return (cpu.user + cpu.system) / 1000;
    },
  };
}

/** The receiver side's options for a run, its arrivals stamped on `clock`. */
export function receiveOptions(
  run: Pick<CeilingRunOptions, 'host' | 'port' | 'brokerUrl' | 'channel' | 'image'>,
  clock: ArrivalClock,
  onImage?: CeilingReceiveOptions['onImage'],
): CeilingReceiveOptions {
  return {
    bindHost: run.host,
    port: run.port,
    brokerUrl: run.brokerUrl,
    channel: run.channel,
    maxImageBytes: run.image.length,
    arrived: clock.arrived,
    ...(onImage ? { onImage } : {}),
  };
}

/**
 * Connects the sender side and drives it, asking `receiverReport` (the receiver's clock, wherever it runs) for the
 * span's end and the receiver's CPU; closes it whatever happens.
 */
export async function runSender(
  pair: CeilingPair,
  run: CeilingRunOptions,
  receiverReport: DrivenLink['receiverReport'],
): Promise<CeilingFigures> {
  const link: DrivenLink = { sender: undefined!, acked: () => {}, failed: () => {}, receiverReport };
  link.sender = await withTimeout(
    pair.connect({
      host: run.host,
      port: run.port,
      brokerUrl: run.brokerUrl,
      channel: run.channel,
      maxImageBytes: run.image.length,
      window: run.window,
      onAck: (seq) => link.acked(seq),
      onFailure: (reason) => link.failed(reason),
    }),
    run.startTimeoutMs,
    `${pair.transport} ceiling: the sender did not connect`,
  );
  try {
    return await drive(link, { ...run, supersedes: pair.supersedes === true });
  } finally {
    await link.sender.close().catch(() => undefined);
  }
}

/**
 * Both sides in this process: the figures, with every image the receiver took handed to onImage; receiverCpuMs is null,
 * as one process's CPU cannot be split between its two sides.
 */
export async function runInProcess(
  pair: CeilingPair,
  run: CeilingRunOptions,
  onImage?: CeilingReceiveOptions['onImage'],
): Promise<CeilingFigures> {
  const clock = arrivalClock(run.warmup);
  const receiverOptions = receiveOptions(run, clock, onImage);
  const receiverReport = async (): Promise<ReceiverReport> => ({
    lastArrivalNs: clock.lastArrivalNs(),
    receiverCpuMs: null,
  });
  if (pair.senderListens) {
    // The sender's server must be up for the receiver to dial it: both start together.
    let receiver: CeilingReceiver | undefined;
    const receiving = withTimeout(
      pair.receive(receiverOptions),
      run.startTimeoutMs,
      `${pair.transport} ceiling: the receiver did not start`,
    ).then((r) => (receiver = r));
    try {
      const [figures] = await Promise.all([runSender(pair, run, receiverReport), receiving]);
      return figures;
    } finally {
      await receiving.catch(() => undefined);
      await receiver?.close();
    }
  }
  const receiver = await withTimeout(
    pair.receive(receiverOptions),
    run.startTimeoutMs,
    `${pair.transport} ceiling: the receiver did not start`,
  );
  try {
    return await runSender(pair, { ...run, port: receiver.port }, receiverReport);
  } finally {
    await receiver.close();
  }
}
