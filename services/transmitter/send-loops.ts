import { OpenLoopSchedule } from '../core/model/schedule.js';
import { nsBetween, nsToMs } from '../core/model/stats.js';
import {
  warmupDecision,
  type SteadinessReading,
  type WarmupDecision,
  type WarmupOutcome,
} from '../core/model/warmup.js';
import type { TransmitterLink } from '../transports/contract.js';
import type { DueTimer } from './due-timer.js';
import type { AckWaiter, Flight, SectionProgress } from './flight.js';
import { ErrorCode, ItbError } from '../core/errors.js';

// The timed path: the loops that stamp and send a section's images. Everything they need comes in
// a SendPath, taken apart into locals before the loop, so each image costs what it did inline; and each
// image makes nothing of its own here (the closures a wait needs, and the list of images admitted at once,
// are made once a phase), only what the flight's stamp and the wire need.

/** The images a turn of a send loop stamped, in order, before any goes to its links: kept for the whole phase. */
class AdmittedImages {
  readonly clients: number[] = [];
  readonly headers: Buffer[] = [];
  count = 0;

  /** Adds one stamped image: its client and encoded header. */
  add(client: number, header: Buffer): void {
    this.clients[this.count] = client;
    this.headers[this.count++] = header;
  }

  /** Hands every image admitted to its client's links, in order (a copy each), and starts the list over. */
  send(links: readonly (readonly TransmitterLink[])[], imageBytes: Buffer): number {
    const sent = this.count;
    for (let index = 0; index < sent; index++) {
      const clientLinks = links[this.clients[index]!]!;
      const header = this.headers[index]!;
      for (let link = 0; link < clientLinks.length; link++) clientLinks[link]!.send(header, imageBytes);
    }
    this.count = 0;
    return sent;
  }
}

/** A section's sending side once its links are connected: what every send loop sends over and waits on. */
export interface SendPath {
  /** Each client's links: one per receiver, or one for all when the transport's one send reaches them all. */
  links: readonly (readonly TransmitterLink[])[];
  flight: Flight;
  waiter: AckWaiter;
  /** The image every send hands over: the same buffer each time. */
  imageBytes: Buffer;
  /** IMAGE_TIMEOUT_MS: the longest wait for a free slot or for the last acks. */
  imageTimeoutMs: number;
}

/**
 * Sends seqs from `from` on while `more(seq)` holds, and returns the seq after the last one sent.
 * Every image some window admits (its client has fewer than WINDOW stamped and unacknowledged) is
 * stamped at once, clients taking turns, and only then are they handed to their links (its
 * client's link to each receiver: a copy each), in order: a library's synchronous work on one
 * image (a masked copy, an encode) is inside that image's time and the ones after it, never
 * between a free slot and its stamp. Then waits for every receiver's ack.
 */
export async function sendPhase(
  path: SendPath,
  from: number,
  more: (seq: number) => boolean,
  progress?: SectionProgress,
): Promise<number> {
  const { links, flight, waiter, imageBytes, imageTimeoutMs } = path;
  const admitted = new AdmittedImages();
  let seq = from;
  const hasRoom = (): boolean => flight.hasRoom();
  const waitingFor = (): string => `a free slot in a window before image seq ${seq}`;
  while (more(seq)) {
    // With room already (and no failure) there is nothing to wait for: no wait is made.
    const wait = waiter.until(hasRoom, imageTimeoutMs, waitingFor);
    if (wait !== undefined) await wait;
    // more() is asked only when a window has room (a warm-up judges steadiness there).
    for (let client = flight.clientWithRoom(); client !== undefined && more(seq); client = flight.clientWithRoom())
      admitted.add(client, flight.stamp(seq++, client));
    const sent = admitted.send(links, imageBytes);
    if (progress) progress.sent += sent;
  }
  const sent = seq;
  await waiter.until(
    () => flight.completed >= sent,
    imageTimeoutMs,
    () => `${sent - flight.completed} outstanding acknowledgements`,
  );
  return sent;
}

/**
 * Open loop (RATE): recorded image i is due at schedule.dueNs(i) whatever the acks do. Every
 * image due is stamped and handed over at once by the next client whose window has room; when
 * every window is full, the images due wait, in order, for slots, and go late (wrk2's choice):
 * stamp − due is kept per image, so the wait is in the send lag and in every time from due,
 * and a transport that cannot keep up shows it in its tail instead of in a count of images
 * dropped beside percentiles that left them out. The queue is only seq numbers (every image is
 * the same buffer) and WINDOW still bounds what is in flight. Then waits for every ack.
 */
export async function openLoopPhase(
  path: SendPath,
  from: number,
  ratePerSecond: number,
  progress: SectionProgress,
  within: () => boolean,
  dueTimer: DueTimer | undefined,
): Promise<void> {
  const { links, flight, waiter, imageBytes, imageTimeoutMs } = path;
  const { plan } = flight;
  const timer = dueTimer;
  if (timer === undefined) throw new ItbError(ErrorCode.internal, 'open loop without a due timer');
  const schedule = new OpenLoopSchedule(ratePerSecond, process.hrtime.bigint());
  const admitted = new AdmittedImages();
  let firstStampNs: bigint | undefined;
  let lastStampNs: bigint | undefined;
  let index = 0;
  const hasRoom = (): boolean => flight.hasRoom();
  const waitingFor = (): string =>
    `a free slot in a window for image seq ${from + index}, due ` +
    nsToMs(process.hrtime.bigint() - schedule.dueNs(index)).toFixed(3) +
    ` ms ago`;
  while (index < plan.imageCount && within()) {
    if (waiter.failure) throw waiter.failure;
    const due = Math.min(plan.imageCount, schedule.dueCount(process.hrtime.bigint()));
    while (index < due) {
      const client = flight.clientWithRoom();
      if (client === undefined) break;
      admitted.add(client, flight.stamp(from + index, client, schedule, index));
      firstStampNs ??= flight.lastStampNs;
      lastStampNs = flight.lastStampNs;
      index++;
    }
    progress.sent += admitted.send(links, imageBytes);
    if (index >= plan.imageCount || !within()) break;
    // Behind the schedule: the next image is due already and waits for a slot; else for its due time.
    if (index < due) {
      const wait = waiter.until(hasRoom, imageTimeoutMs, waitingFor);
      if (wait !== undefined) await wait;
    } else await timer.until(schedule.dueNs(index));
  }
  // Sends per second over the first stamp to the last (as achievedRate does), without a time per image.
  flight.achievedRatePerSecond =
    index < 2 || firstStampNs === undefined || lastStampNs === undefined || lastStampNs === firstStampNs
      ? null
      : ((index - 1) * 1e9) / Number(lastStampNs - firstStampNs);
  await waiter.until(
    () => flight.completed >= flight.stamped,
    imageTimeoutMs,
    () => `${flight.stamped - flight.completed} outstanding acknowledgements`,
  );
}

/**
 * The warm-up images: a fixed number, or until their round trips are steady (or a cap).
 */
export async function warmUp(path: SendPath): Promise<WarmupOutcome> {
  const { flight } = path;
  const startNs = process.hrtime.bigint();
  let decision = 'more' as WarmupDecision;
  // The medians as judged when the warm-up stopped, before the window's last acks came in.
  let reading: SteadinessReading | undefined;
  // Asked before every warm-up image: one progress object, brought up to date each time.
  const progress = { elapsedMs: 0, stampedImages: 0, ackedImages: 0 };
  const more = (seq: number): boolean => {
    progress.elapsedMs = nsBetween(startNs, process.hrtime.bigint()) / 1e6;
    progress.stampedImages = seq;
    progress.ackedImages = flight.acked;
    decision = warmupDecision(flight.plan.warmup, progress, flight.steadiness);
    if (decision !== 'more') reading = flight.steadiness?.reading();
    return decision === 'more';
  };
  const images = await sendPhase(path, 0, more);
  return {
    images,
    ms: images === 0 ? 0 : nsToMs(process.hrtime.bigint() - startNs),
    steady: decision === 'steady' ? true : decision === 'not steady' ? false : null,
    mediansMs: reading === undefined ? null : reading.mediansNs.map((ns) => ns / 1e6),
  };
}
