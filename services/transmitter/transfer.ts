import type { Logger } from 'pino';
import type { SectionCredential } from '../core/wire/auth.js';
import { sideCost, type SideCost } from '../core/model/cost.js';
import { errorMessage } from '../core/errors.js';
import type { SectionPlan, TransmitterColdStart } from '../core/model/section.js';
import { nsToMs } from '../core/model/stats.js';
import type { WarmupOutcome } from '../core/model/warmup.js';
import { readResources, RssPeakTracker } from '../shared/resources.js';
import type { TransmitterLink, Transport } from '../transports/contract.js';
import type { DueTimer } from './due-timer.js';
import { AckWaiter, Flight, type SectionProgress } from './flight.js';
import { closeLinks, commandLink, connectLinks, type LinkSettings } from './links.js';
import type { Peer } from './peers.js';
import { RoundTripShipper } from './round-trips.js';
import { CommandSender, commandsNotRun, type CommandSettings } from './command-lane.js';
import { aloneCommandCount, commandLaneOf, type TransmitterCommands } from '../core/model/command-lane.js';
import { openLoopPhase, sendPhase, warmUp, type SendPath } from './send-loops.js';

/** What every section's transfer is set up with, the same for the whole run. */
export interface TransferSettings {
  links: LinkSettings;
  /** The image every send hands over. */
  imageBytes: Buffer;
  /** Its checksum, which every frame carries. */
  imageChecksum: bigint;
  /** IMAGE_TIMEOUT_MS. */
  imageTimeoutMs: number;
  /** Under RATE, one for the whole run, started before the first section (never on the timed path). */
  dueTimer: DueTimer | undefined;
  /** COMMAND_RATE's lane; undefined: none. */
  commands: CommandSettings | undefined;
  log: Logger;
}

const nullableMs = (ns: number | null): number | null => (ns === null ? null : ns / 1e6);

/** What one section's sends and acks produced on the transmitter's side. */
export interface TransferOutcome {
  failure: string | null;
  cost: SideCost | null;
  coldStart: TransmitterColdStart;
  /** Round trips posted to each receiver, by its place. */
  roundTripsShipped: number[];
  /** The section's flight: the caller reads its figures, then destroys it. */
  flight: Flight;
  /** The warm-up's outcome; undefined when it never ended. */
  warmedUp: WarmupOutcome | undefined;
  /** The command lane's figures (COMMAND_RATE); null without a lane. */
  commands: TransmitterCommands | null;
}

/**
 * Warm-up, then the recorded images with the transmitter's resources measured from the first
 * recorded stamp to the last recorded ack.
 */
export async function transfer(
  settings: TransferSettings,
  transport: Transport,
  plan: SectionPlan,
  credential: SectionCredential,
  progress: SectionProgress,
  peers: readonly Peer[],
): Promise<TransferOutcome> {
  const { log } = settings;
  const waiter = new AckWaiter();
  const flight = new Flight(
    plan,
    { sizeBytes: settings.imageBytes.length, checksum: settings.imageChecksum },
    progress,
    waiter,
    new RssPeakTracker(),
    transport.traits.dropsImages !== undefined,
    transport.traits.supersedesImages !== undefined,
  );
  // Each recorded round trip leaves for its receiver's record in batches as acks come: none is kept here.
  const shippers = peers.map((peer) => new RoundTripShipper((body) => peer.control.roundTrips(plan.sectionId, body)));
  let links: TransmitterLink[][] = [];
  let cost: SideCost | null = null;
  let connectMs: number | null = null;
  let warmedUp: WarmupOutcome | undefined;
  const lane = commandLaneOf(transport.traits);
  const commandSettings = settings.commands;
  let sender: CommandSender | undefined;
  const commands = (): TransmitterCommands | null =>
    commandSettings === undefined
      ? null
      : 'unavailable' in lane
        ? commandsNotRun(commandSettings, lane.unavailable)
        : (sender?.figures() ?? commandsNotRun(commandSettings, 'the section failed before its commands'));
  const coldStart = (): TransmitterColdStart => ({ connectMs, firstImageRttMs: nullableMs(flight.firstImageRttNs) });
  const shipped = (): number[] => shippers.map((shipper) => shipper.shipped);
  // The outcome as things stand, with `failure`: the same whether the section ended well or not.
  const ended = (failure: string | null): TransferOutcome => ({
    failure,
    cost,
    coldStart: coldStart(),
    roundTripsShipped: shipped(),
    flight,
    warmedUp,
    commands: commands(),
  });
  try {
    const connectStartNs = process.hrtime.bigint();
    const laneRuns = commandSettings !== undefined && 'how' in lane;
    links = await connectLinks(
      settings.links,
      transport,
      plan,
      credential,
      flight,
      waiter,
      peers,
      laneRuns ? { onAck: (ack) => sender?.onAck(ack) } : undefined,
    );
    connectMs = nsToMs(process.hrtime.bigint() - connectStartNs);
    waiter.notify();
    const path: SendPath = {
      links,
      flight,
      waiter,
      imageBytes: settings.imageBytes,
      imageTimeoutMs: settings.imageTimeoutMs,
    };
    warmedUp = await warmUp(path);
    if (warmedUp.steady === false)
      log.warn(
        {
          transport: transport.name,
          warmupMs: Math.round(warmedUp.ms),
          warmupImages: warmedUp.images,
          mediansMs: warmedUp.mediansMs,
        },
        'round trips not steady when the warm-up reached its cap (WARMUP_MAX_MS): the section is marked not steady',
      );
    const outcome = warmedUp;
    if (commandSettings !== undefined && 'how' in lane) {
      // Commands go on the first client's link to the first (only) receiver, alone first. A control round trip
      // first: the receiver answers it only after hashing the warm-up's last images, so they are not in the way.
      sender = new CommandSender(commandLink(links)!, plan.sectionId, commandSettings, (seq, rttNs) =>
        shippers[0]?.addCommand(seq, rttNs),
      );
      await peers[0]!.control.clockSample();
      await sender.alone(aloneCommandCount(commandSettings.ratePerSecond), settings.imageTimeoutMs);
    }
    await Promise.all(peers.map((peer) => peer.control.startMeasuring(plan.sectionId, outcome)));
    const from = warmedUp.images;
    flight.startRecording(from, (receiver, imageNumber, rttNs, dueLagNs) =>
      shippers[receiver]?.add(imageNumber, rttNs, dueLagNs),
    );
    waiter.notify();
    flight.rss.start();
    const start = readResources();
    progress.startedAtMs = Date.now();
    // DURATION: recorded images go until it is over (the last ones' acks still come in).
    const deadlineNs =
      plan.durationMs == null ? undefined : process.hrtime.bigint() + BigInt(plan.durationMs) * 1_000_000n;
    const within = (): boolean => deadlineNs === undefined || process.hrtime.bigint() < deadlineNs;
    sender?.startBeside();
    if (plan.ratePerSecond === null)
      await sendPhase(path, from, (seq) => seq < from + plan.imageCount && within(), progress);
    else await openLoopPhase(path, from, plan.ratePerSecond, progress, within, settings.dueTimer);
    // Beside the images means while any is in flight: the lane stops with the last image's ack.
    await sender?.endBeside(settings.imageTimeoutMs);
    const end = flight.end ?? { reading: readResources(), peakRssBytes: flight.rss.stop() };
    cost = sideCost(start, end.reading, end.peakRssBytes, flight.recordedStamped);
    await Promise.all(shippers.map((shipper) => shipper.flush()));
    // Never silent: the receiver's record has the exact count of images that did not arrive.
    const lost = flight.lostAmongRecorded();
    const failure =
      lost > 0
        ? `${transport.label} dropped images, as it may by design (${transport.traits.dropsImages}): ${lost} never ` +
          `acknowledged`
        : null;
    if (lost > 0) log.warn({ transport: transport.name, unacknowledged: lost }, 'images dropped by the transport');
    const superseded = flight.supersededAmongRecorded();
    if (superseded > 0)
      log.info(
        { transport: transport.name, superseded },
        'images written over before the receiver read them (superseded, as the transport declares)',
      );
    return ended(failure);
  } catch (err) {
    // What was batched still goes: the receiver's record of a failed section keeps every round trip it can.
    await Promise.all(shippers.map((shipper) => shipper.flush().catch(() => undefined)));
    return ended(errorMessage(err));
  } finally {
    sender?.destroy();
    for (const shipper of shippers) shipper.close();
    flight.rss.stop();
    await closeLinks(transport, links.flat(), log);
  }
}
