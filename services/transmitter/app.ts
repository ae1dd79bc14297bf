import { randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { sectionCredential, type SectionCredential } from '../core/wire/auth.js';
import { imageChecksum } from '../core/wire/checksum.js';
import { estimateClockOffset, type ClockOffset, type ClockSample } from '../core/model/clock.js';
import { MAX_IMAGE_COUNT, publicConfig, type Config } from '../core/config/config.js';
import {
  failedSectionEnd,
  type HealthResponse,
  type RunAnnouncement,
  type RunOutcome,
} from '../core/wire/control-protocol.js';
import { sideCost, type SideCost } from '../core/model/cost.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { buildRunReport, renderSummary } from '../core/report/report.js';
import {
  fanOutOf,
  type SectionClock,
  type SectionPlan,
  type SectionResult,
  type TransmitterColdStart,
} from '../core/model/section.js';
import { acknowledgedOnlyResult, SectionRecorder } from '../core/model/recorder.js';
import { OpenLoopSchedule } from '../core/model/schedule.js';
import { exerciseSharedPaths } from '../core/model/prewarm.js';
import { nsToMs } from '../core/model/stats.js';
import {
  warmupDecision,
  warmupPlan,
  type SteadinessReading,
  type WarmupDecision,
  type WarmupOutcome,
} from '../core/model/warmup.js';
import { transmitterAuthToken } from '../shared/auth-token.js';
import { hostFacts } from '../shared/host.js';
import { readResources, RssPeakTracker } from '../shared/resources.js';
import type { TransmitterLink, Transport } from '../transports/contract.js';
import { transportByName } from '../transports/index.js';
import { ControlClient } from './control-client.js';
import { DueTimer } from './due-timer.js';
import { AckWaiter, Flight, type SectionProgress } from './flight.js';
import { receiverAddresses } from './peers.js';
import { RoundTripShipper } from './round-trips.js';

export type { SectionProgress } from './flight.js';

/** Round trips per clock-offset estimate (after one that opens the socket): the lowest is kept. */
const CLOCK_SAMPLES = 8;

/** The image a run sends, loaded before the run (never inside the timed path). */
export interface RunImage {
  bytes: Buffer;
  description: string;
}

/** Told when each section starts and ends; see {@link SectionProgress} for what happens between. */
export interface RunObserver {
  sectionStarted(progress: SectionProgress): void;
  sectionEnded(progress: SectionProgress, result: SectionResult): void;
}

/** A transmitter: runs every configured transport's section in turn against one receiver. */
export interface TransmitterApp {
  run(): Promise<RunOutcome>;
}

const nullableMs = (ns: number | null): number | null => (ns === null ? null : ns / 1e6);

/** A receiver of the run as the transmitter reaches it: its place (0 first), its address, control client and health. */
interface Peer {
  index: number;
  host: string;
  control: ControlClient;
  health: HealthResponse;
}

/** What one section's sends and acks produced on the transmitter's side. */
interface TransferOutcome {
  failure: string | null;
  cost: SideCost | null;
  coldStart: TransmitterColdStart;
  /** Round trips posted to each receiver, by its place. */
  roundTripsShipped: number[];
}

/**
 * The transports of repeat `repeat` (from 1) in run order: TRANSPORTS rotated by one place per
 * repeat (A B C, B C A, C A B, …), so no transport always follows the same neighbour.
 */
function rotatedOrder(names: readonly string[], repeat: number): string[] {
  const shift = (repeat - 1) % Math.max(1, names.length);
  return [...names.slice(shift), ...names.slice(0, shift)];
}

/** Builds a transmitter that sends `image` per the config; nothing happens until run(). */
export function buildTransmitter(
  config: Readonly<Config>,
  image: RunImage,
  log: Logger,
  observer?: RunObserver,
): TransmitterApp {
  const checksum = imageChecksum(image.bytes);
  const transmitterHost = hostFacts(config.transports.map(transportByName));
  let receiverLost: string | undefined;
  // Under RATE, one for the whole run, started before the first section (never on the timed path).
  let dueTimer: DueTimer | undefined;

  // Sends seqs from `from` on while `more(seq)` holds, and returns the seq after the last one sent.
  // Every image some window admits (its client has fewer than WINDOW stamped and unacknowledged) is
  // stamped at once, clients taking turns, and only then are they handed to their links (its
  // client's link to each receiver: a copy each), in order: a library's synchronous work on one
  // image (a masked copy, an encode) is inside that image's time and the ones after it, never
  // between a free slot and its stamp. Then waits for every receiver's ack.
  async function sendPhase(
    links: readonly (readonly TransmitterLink[])[],
    flight: Flight,
    from: number,
    more: (seq: number) => boolean,
    waiter: AckWaiter,
    progress?: SectionProgress,
  ): Promise<number> {
    const admitted: [client: number, header: Buffer][] = [];
    let seq = from;
    while (more(seq)) {
      await waiter.until(
        () => flight.hasRoom(),
        config.imageTimeoutMs,
        () => `a free slot in a window before image seq ${seq}`,
      );
      // more() is asked only when a window has room (a warm-up judges steadiness there).
      const next = (): number | undefined => {
        const client = flight.clientWithRoom();
        return client !== undefined && more(seq) ? client : undefined;
      };
      for (let client = next(); client !== undefined; client = next())
        admitted.push([client, flight.stamp(seq++, client).header]);
      for (const [client, header] of admitted) for (const link of links[client]!) link.send(header, image.bytes);
      if (progress) progress.sent += admitted.length;
      admitted.length = 0;
    }
    const sent = seq;
    await waiter.until(
      () => flight.completed >= sent,
      config.imageTimeoutMs,
      () => `${sent - flight.completed} outstanding acknowledgements`,
    );
    return sent;
  }

  // Open loop (RATE): recorded image i is due at schedule.dueNs(i) whatever the acks do. Every
  // image due is stamped and handed over at once by the next client whose window has room; when
  // every window is full, the images due wait, in order, for slots, and go late (wrk2's choice):
  // stamp − due is kept per image, so the wait is in the send lag and in every time from due,
  // and a transport that cannot keep up shows it in its tail instead of in a count of images
  // dropped beside percentiles that left them out. The queue is only seq numbers (every image is
  // the same buffer) and WINDOW still bounds what is in flight. Then waits for every ack.
  async function openLoopPhase(
    links: readonly (readonly TransmitterLink[])[],
    flight: Flight,
    from: number,
    ratePerSecond: number,
    waiter: AckWaiter,
    progress: SectionProgress,
    within: () => boolean,
  ): Promise<void> {
    const { plan } = flight;
    const timer = dueTimer;
    if (timer === undefined) throw new Error('open loop without a due timer');
    const schedule = new OpenLoopSchedule(ratePerSecond, process.hrtime.bigint());
    const admitted: [client: number, header: Buffer][] = [];
    let firstStampNs: bigint | undefined;
    let lastStampNs: bigint | undefined;
    let index = 0;
    while (index < plan.imageCount && within()) {
      if (waiter.failure) throw waiter.failure;
      const due = Math.min(plan.imageCount, schedule.dueCount(process.hrtime.bigint()));
      while (index < due) {
        const client = flight.clientWithRoom();
        if (client === undefined) break;
        const { header, stampNs } = flight.stamp(from + index, client, schedule.dueNs(index));
        firstStampNs ??= stampNs;
        lastStampNs = stampNs;
        admitted.push([client, header]);
        index++;
      }
      for (const [client, header] of admitted) for (const link of links[client]!) link.send(header, image.bytes);
      progress.sent += admitted.length;
      admitted.length = 0;
      if (index >= plan.imageCount || !within()) break;
      // Behind the schedule: the next image is due already and waits for a slot; else for its due time.
      if (index < due)
        await waiter.until(
          () => flight.hasRoom(),
          config.imageTimeoutMs,
          () =>
            `a free slot in a window for image seq ${from + index}, due ` +
            nsToMs(process.hrtime.bigint() - schedule.dueNs(index)).toFixed(3) +
            ` ms ago`,
        );
      else await timer.until(schedule.dueNs(index));
    }
    // Sends per second over the first stamp to the last (as achievedRate does), without a time per image.
    flight.achievedRatePerSecond =
      index < 2 || firstStampNs === undefined || lastStampNs === undefined || lastStampNs === firstStampNs
        ? null
        : ((index - 1) * 1e9) / Number(lastStampNs - firstStampNs);
    await waiter.until(
      () => flight.completed >= flight.stamped,
      config.imageTimeoutMs,
      () => `${flight.stamped - flight.completed} outstanding acknowledgements`,
    );
  }

  // The warm-up images: a fixed number, or until their round trips are steady (or a cap).
  async function warmUp(
    links: readonly (readonly TransmitterLink[])[],
    flight: Flight,
    waiter: AckWaiter,
  ): Promise<WarmupOutcome> {
    const startNs = process.hrtime.bigint();
    let decision = 'more' as WarmupDecision;
    // The medians as judged when the warm-up stopped, before the window's last acks came in.
    let reading: SteadinessReading | undefined;
    const more = (seq: number): boolean => {
      decision = warmupDecision(
        flight.plan.warmup,
        { elapsedMs: nsToMs(process.hrtime.bigint() - startNs), stampedImages: seq, ackedImages: flight.acked },
        flight.steadiness,
      );
      if (decision !== 'more') reading = flight.steadiness?.reading();
      return decision === 'more';
    };
    const images = await sendPhase(links, flight, 0, more, waiter);
    return {
      images,
      ms: images === 0 ? 0 : nsToMs(process.hrtime.bigint() - startNs),
      steady: decision === 'steady' ? true : decision === 'not steady' ? false : null,
      mediansMs: reading === undefined ? null : reading.mediansNs.map((ns) => ns / 1e6),
    };
  }

  // One link per client and receiver (a copy each), or per client alone for a transport whose one
  // send reaches every receiver; all connected at once. When any fails to connect, the others are
  // closed and the first problem is the section's.
  async function connectLinks(
    transport: Transport,
    plan: SectionPlan,
    credential: SectionCredential,
    flight: Flight,
    waiter: AckWaiter,
    peers: readonly Peer[],
  ): Promise<TransmitterLink[][]> {
    const oneSend = transport.traits.fanOut === 'one send';
    const targets = oneSend ? peers.slice(0, 1) : peers;
    const connecting = Array.from({ length: plan.clients }, (_, client) =>
      targets.map((peer) =>
        transport.connect({
          host: peer.host,
          bindHost: config.bindHost,
          port: portOf(transport, peer),
          url: config.urls[transport.name],
          password: config.brokerPasswords[transport.name],
          maxImageBytes: config.maxImageBytes,
          connectTimeoutMs: config.connectTimeoutMs,
          credential,
          imageBytes: image.bytes.length,
          window: plan.window,
          clients: plan.clients,
          receiverIndex: peer.index,
          ...(oneSend && peers.length > 1
            ? { peers: peers.map((each) => ({ host: each.host, port: portOf(transport, each) })) }
            : {}),
          log: log.child({
            transport: transport.name,
            ...(plan.clients > 1 ? { client } : {}),
            ...(peers.length > 1 ? { receiver: peer.index } : {}),
          }),
          // A link to one receiver hears only it; a shared one hears every receiver, each naming itself.
          onAck: (ack) => flight.onAck(ack, oneSend ? (ack.receiver ?? 0) : peer.index),
          onFailure: (err) => waiter.fail(err),
        }),
      ),
    );
    const settled = await Promise.allSettled(connecting.flat());
    const connected = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed !== undefined) {
      await closeLinks(transport, connected);
      throw failed.reason;
    }
    return Array.from({ length: plan.clients }, (_, client) =>
      connected.slice(client * targets.length, (client + 1) * targets.length),
    );
  }

  // The port a link dials: the one the receiver reports for its listener (each receiver of several
  // may have its own), else the configured one (websocket-push's is the transmitter's own).
  function portOf(transport: Transport, peer: Peer): number {
    const configured = config.ports[transport.name] ?? 0;
    if (transport.deployment.setting.kind !== 'port' || transport.traits.receiverDials) return configured;
    return peer.health.listeners[transport.name]?.port || configured;
  }

  async function closeLinks(transport: Transport, links: readonly TransmitterLink[]): Promise<void> {
    await Promise.all(
      links.map((link) =>
        link
          .close()
          .catch((err: unknown) => log.warn({ transport: transport.name, err: errorMessage(err) }, 'close failed')),
      ),
    );
  }

  // Warm-up, then the recorded images with the transmitter's resources measured from the first
  // recorded stamp to the last recorded ack.
  async function transfer(
    transport: Transport,
    plan: SectionPlan,
    credential: SectionCredential,
    progress: SectionProgress,
    peers: readonly Peer[],
  ): Promise<TransferOutcome & { flight: Flight; warmedUp: WarmupOutcome | undefined }> {
    const waiter = new AckWaiter();
    const flight = new Flight(
      plan,
      { sizeBytes: image.bytes.length, checksum },
      progress,
      waiter,
      new RssPeakTracker(),
      transport.traits.dropsImages !== undefined,
    );
    // Each recorded round trip leaves for its receiver's record in batches as acks come: none is kept here.
    const shippers = peers.map((peer) => new RoundTripShipper((body) => peer.control.roundTrips(plan.sectionId, body)));
    let links: TransmitterLink[][] = [];
    let cost: SideCost | null = null;
    let connectMs: number | null = null;
    let warmedUp: WarmupOutcome | undefined;
    const coldStart = (): TransmitterColdStart => ({ connectMs, firstImageRttMs: nullableMs(flight.firstImageRttNs) });
    const shipped = (): number[] => shippers.map((shipper) => shipper.shipped);
    try {
      const connectStartNs = process.hrtime.bigint();
      links = await connectLinks(transport, plan, credential, flight, waiter, peers);
      connectMs = nsToMs(process.hrtime.bigint() - connectStartNs);
      waiter.notify();
      warmedUp = await warmUp(links, flight, waiter);
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
      if (plan.ratePerSecond === null)
        await sendPhase(links, flight, from, (seq) => seq < from + plan.imageCount && within(), waiter, progress);
      else await openLoopPhase(links, flight, from, plan.ratePerSecond, waiter, progress, within);
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
      return { failure, cost, coldStart: coldStart(), roundTripsShipped: shipped(), flight, warmedUp };
    } catch (err) {
      // What was batched still goes: the receiver's record of a failed section keeps every round trip it can.
      await Promise.all(shippers.map((shipper) => shipper.flush().catch(() => undefined)));
      return {
        failure: errorMessage(err),
        cost,
        coldStart: coldStart(),
        roundTripsShipped: shipped(),
        flight,
        warmedUp,
      };
    } finally {
      for (const shipper of shippers) shipper.close();
      flight.rss.stop();
      await closeLinks(transport, links.flat());
    }
  }

  // In a cluster the receiver may answer before its broker is up, and a listener that failed
  // retries in the background: its section waits for it, within CONNECT_TIMEOUT_MS. One still
  // down by then, or down for good (a setting missing), fails its section with the receiver's
  // reason, and the run goes on.
  async function listenerReady(peer: Peer, name: string): Promise<void> {
    peer.health = await peer.control.waitUntilReady(config.connectTimeoutMs, [name]);
    const status = peer.health.listeners[name];
    if (status?.ready !== true)
      log.warn(
        { receiver: peer.host, transport: name, reason: status?.error, retrying: status?.retrying },
        'receiver listener not ready: its section fails with the reason',
      );
  }

  // Ping-pong over a receiver's control endpoint.
  async function estimateOffset(peer: Peer): Promise<ClockOffset | null> {
    await peer.control.clockSample();
    const samples: ClockSample[] = [];
    for (let i = 0; i < CLOCK_SAMPLES; i++) samples.push(await peer.control.clockSample());
    return estimateClockOffset(samples) ?? null;
  }

  // Before a section: the offset is applied only across kernels (clocks).
  async function estimateClock(peer: Peer): Promise<SectionClock | null> {
    const estimate = await estimateOffset(peer);
    if (estimate === null) return null;
    const sameKernel = transmitterHost.bootId !== null && transmitterHost.bootId === peer.health.host.bootId;
    return { ...estimate, applied: !sameKernel };
  }

  async function runSection(
    transport: Transport,
    repeat: number,
    peers: readonly Peer[],
    authToken: string,
  ): Promise<SectionResult> {
    const progress: SectionProgress = {
      transport: transport.name,
      label: transport.label,
      repeat,
      repeats: config.repeat,
      imageCount: config.imageCount,
      durationMs: config.durationMs ?? null,
      imageSizeBytes: image.bytes.length,
      sent: 0,
      acked: 0,
      startedAtMs: undefined,
    };
    const plan: SectionPlan = {
      sectionId: randomInt(1, 2 ** 32 - 1),
      transport: transport.name,
      label: transport.label,
      baseline: transport.traits.baseline,
      repeat,
      // DURATION: the count is only a ceiling; the section's is what it sent in that time.
      imageCount: config.durationMs === undefined ? config.imageCount : MAX_IMAGE_COUNT,
      durationMs: config.durationMs ?? null,
      warmup: warmupPlan(config),
      imageSizeBytes: image.bytes.length,
      window: config.window,
      ratePerSecond: config.ratePerSecond ?? null,
      clients: config.clients,
      receivers: peers.length,
      receiverIndex: 0,
      clock: null,
    };
    log.info(
      {
        transport: transport.name,
        repeat,
        imageCount: plan.imageCount,
        imageSizeBytes: plan.imageSizeBytes,
        window: plan.window,
      },
      'section start',
    );
    observer?.sectionStarted(progress);
    // Each receiver's plan: its place, and its own clock offset.
    const plans: SectionPlan[] = peers.map((peer) => ({ ...plan, receiverIndex: peer.index }));
    const opened = new Set<Peer>();
    let result: SectionResult;
    let outcome: Awaited<ReturnType<typeof transfer>> | undefined;
    try {
      await Promise.all(peers.map((peer) => listenerReady(peer, transport.name)));
      for (const peer of peers) plans[peer.index] = { ...plans[peer.index]!, clock: await estimateClock(peer) };
      await Promise.all(
        peers.map(async (peer) => {
          await peer.control.openSection(plans[peer.index]!);
          opened.add(peer);
        }),
      );
      outcome = await transfer(transport, plans[0]!, sectionCredential(authToken, plan.sectionId), progress, peers);
      const { flight } = outcome;
      const done = outcome;
      // Again after the last ack: how far each offset drifted during the section bounds the one-way times' error.
      const clocksAfter: (ClockOffset | null)[] = [];
      for (const peer of peers) clocksAfter.push(await estimateOffset(peer));
      const results = await Promise.all(
        peers.map((peer) =>
          peer.control.endSection(plan.sectionId, {
            failure: done.failure,
            transmitterCost: done.cost,
            imagesSent: flight.recordedStamped,
            roundTripsShipped: done.roundTripsShipped[peer.index] ?? 0,
            sendLag: flight.tally.sendLag.summary() ?? null,
            rttFromDue: flight.tally.rttFromDue.summary() ?? null,
            meanInFlight: flight.meanInFlight(),
            rttSeconds: (flight.tally.rttSeconds?.seconds() ?? []).map((second) => ({
              second: second.second,
              rtt: second.times,
            })),
            achievedRatePerSecond: flight.achievedRatePerSecond,
            clientFigures: flight.clientFigures(),
            coldStart: done.coldStart,
            clockAfter: clocksAfter[peer.index] ?? null,
          }),
        ),
      );
      opened.clear();
      result = results[0]!;
      // Several receivers: the first one's record gets every receiver's figures and the aggregate.
      if (peers.length > 1)
        result = await peers[0]!.control.fanOut(plan.sectionId, fanOutOf(results, transport.traits.fanOut ?? 'copies'));
    } catch (err) {
      // A receiver could not take part (listener down) or is gone: then only the acks tell
      // what arrived, and the run stops after this section.
      if (err instanceof ItbError && err.code === ErrorCode.receiverUnreachable) receiverLost ??= err.message;
      // Receivers whose section is still open record it as failed, with the reason.
      const reason = errorMessage(err);
      await Promise.all(
        [...opened].map((peer) =>
          peer.control.endSection(plan.sectionId, failedSectionEnd(reason)).catch(() => undefined),
        ),
      );
      const flight = outcome?.flight;
      result =
        flight !== undefined && flight.recordedAcked > 0
          ? acknowledgedOnlyResult(plan, flight.recordedAcked, reason, outcome?.warmedUp, {
              imagesSent: flight.recordedStamped,
              rtt: flight.tally.rtt.summary() ?? null,
              coldStart: outcome?.coldStart,
              sendLag: flight.tally.sendLag.summary() ?? null,
              rttFromDue: flight.tally.rttFromDue.summary() ?? null,
              achievedRatePerSecond: flight.achievedRatePerSecond,
              clientFigures: flight.clientFigures(),
            })
          : new SectionRecorder(plan).result(reason, { coldStart: outcome?.coldStart });
    } finally {
      outcome?.flight.destroy();
    }
    log.info(
      {
        transport: transport.name,
        repeat,
        ok: result.ok,
        okCount: result.okCount,
        lostCount: result.lostCount,
        corruptCount: result.corruptCount,
        totalMs: result.totalMs,
        failure: result.failure,
      },
      'section end',
    );
    observer?.sectionEnded(progress, result);
    return result;
  }

  return {
    async run() {
      const addresses = await receiverAddresses(config);
      const controls = addresses.map(
        (address) => new ControlClient(address.host, address.controlPort, config.imageTimeoutMs),
      );
      try {
        const healths = await Promise.all(controls.map((control) => control.waitUntilReady(config.connectTimeoutMs)));
        const peers: Peer[] = addresses.map((address, index) => ({
          index,
          host: address.host,
          control: controls[index]!,
          health: healths[index]!,
        }));
        // Read once the receiver answers: without AUTH_TOKEN it is the file the receiver creates at start.
        const { token: authToken, file: tokenFile } = transmitterAuthToken(config);
        if (tokenFile !== undefined)
          log.info(
            { authTokenFile: tokenFile.file, trustedBecause: tokenFile.trustedBecause },
            'AUTH_TOKEN is unset: using the secret in AUTH_TOKEN_FILE',
          );
        for (const control of controls) control.authorize(authToken);
        const announcement: RunAnnouncement = {
          startedAt: new Date().toISOString(),
          imageDescription: image.description,
          imageSizeBytes: image.bytes.length,
          imageCount: config.imageCount,
          window: config.window,
          warmup: warmupPlan(config),
          repeat: config.repeat,
          transports: config.transports,
          arrivalNotes: config.transports.flatMap((name) => transportByName(name).traits.batchedArrivals ?? []),
          config: publicConfig(config),
          receivers: peers.length,
          receiverIndex: 0,
          hosts: { transmitter: transmitterHost },
        };
        await Promise.all(peers.map((peer) => peer.control.startRun({ ...announcement, receiverIndex: peer.index })));
        if (config.ratePerSecond !== undefined) dueTimer = await DueTimer.open();
        // WARMUP=0 is a cold run on purpose: nothing is warmed, not even the shared paths.
        if (config.warmup !== 0) exerciseSharedPaths(image.bytes);
        // Interleaved, one section of every transport per repeat, in an order rotated each repeat,
        // so drift on a shared machine and a neighbour's leftover garbage hit every transport alike.
        const sections: SectionResult[] = [];
        for (let repeat = 1; repeat <= config.repeat && receiverLost === undefined; repeat++) {
          for (const name of rotatedOrder(config.transports, repeat)) {
            sections.push(await runSection(transportByName(name), repeat, peers, authToken));
            if (receiverLost !== undefined) break;
          }
        }
        if (receiverLost === undefined) {
          // The first receiver's outcome is the run's: it holds every receiver's figures. Each
          // answers with its summary; the report here is built from the sections' results it sent
          // back. Any receiver that could not write its files fails the run.
          const finishes = await Promise.all(peers.map((peer) => peer.control.finishRun()));
          const first = finishes[0]!;
          const report = buildRunReport(
            { ...announcement, hosts: { transmitter: transmitterHost, receiver: peers[0]!.health.host } },
            sections,
            null,
          );
          const notWritten = finishes.flatMap((finish, index) =>
            finish.filesNotWritten === undefined
              ? []
              : [peers.length > 1 ? `receiver ${index + 1}: ${finish.filesNotWritten}` : finish.filesNotWritten],
          );
          const outcome: RunOutcome = {
            report,
            summary: first.summary,
            succeeded: first.succeeded && notWritten.length === 0,
            runFolder: first.runFolder,
          };
          return notWritten.length === 0 ? outcome : { ...outcome, filesNotWritten: notWritten.join('; ') };
        }
        // A receiver is gone with its record: report what the transmitter knows, and stop.
        const report = buildRunReport(
          { ...announcement, hosts: { transmitter: transmitterHost, receiver: peers[0]!.health.host } },
          sections,
          `receiver went away: ${receiverLost}`,
        );
        return { report, summary: renderSummary(report), succeeded: false, receiverLost };
      } finally {
        for (const control of controls) control.close();
        await dueTimer?.close();
        dueTimer = undefined;
      }
    },
  };
}
