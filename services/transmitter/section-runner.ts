import { randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { sectionCredential } from '../core/wire/auth.js';
import type { ClockOffset } from '../core/model/clock.js';
import { MAX_IMAGE_COUNT, type Config } from '../core/config/config.js';
import { failedSectionEnd } from '../core/control/control-protocol.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { fanOutOf, type SectionPlan, type SectionResult } from '../core/model/section.js';
import { failedSectionResult } from '../core/model/section-result.js';
import type { WarmupPlan } from '../core/model/warmup.js';
import type { Transport } from '../transports/contract.js';
import type { SectionProgress } from './flight.js';
import { estimateClock, estimateOffset, listenerReady, type Peer } from './peers.js';
import { transfer, type TransferOutcome, type TransferSettings } from './transfer.js';

/** Told when each section starts and ends; see {@link SectionProgress} for what happens between. */
export interface RunObserver {
  sectionStarted(progress: SectionProgress): void;
  sectionEnded(progress: SectionProgress, result: SectionResult): void;
}

/** What every section's plan takes from the config: the same for every section of the run. */
export interface SectionSettings
  extends Pick<Config, 'repeat' | 'imageCount' | 'durationMs' | 'window' | 'ratePerSecond' | 'deadline' | 'clients'> {
  warmupPlan: WarmupPlan;
}

/** What a section runs with, built once for the run: its receivers, its settings, and where it reports. */
export interface SectionDeps {
  /** The run's receivers, the first one first. */
  peers: readonly Peer[];
  authToken: string;
  /** The transmitter's kernel: a receiver on another one has its clock offset applied. */
  transmitterBootId: string | null;
  settings: SectionSettings;
  transfer: TransferSettings;
  /** CONNECT_TIMEOUT_MS: how long a section waits for a receiver's listener. */
  connectTimeoutMs: number;
  log: Logger;
  observer: RunObserver | undefined;
}

/** A section's result, and why the run must stop after it when a receiver is gone (undefined when none is). */
export interface SectionOutcome {
  result: SectionResult;
  receiverLost: string | undefined;
}

/**
 * Runs one section of `transport` on every receiver: plan, open, transfer, end, fan-out; a failed
 * one is ended as failed where it is open, and its result built from what the acks told.
 */
export async function runSection(deps: SectionDeps, transport: Transport, repeat: number): Promise<SectionOutcome> {
  const { peers, settings, log, observer } = deps;
  const imageSizeBytes = deps.transfer.imageBytes.length;
  const progress: SectionProgress = {
    transport: transport.name,
    label: transport.label,
    repeat,
    repeats: settings.repeat,
    imageCount: settings.imageCount,
    durationMs: settings.durationMs ?? null,
    imageSizeBytes,
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
    imageCount: settings.durationMs === undefined ? settings.imageCount : MAX_IMAGE_COUNT,
    durationMs: settings.durationMs ?? null,
    warmup: settings.warmupPlan,
    imageSizeBytes,
    window: settings.window,
    ratePerSecond: settings.ratePerSecond ?? null,
    deadline: settings.deadline ?? null,
    clients: settings.clients,
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
  let outcome: TransferOutcome | undefined;
  let receiverLost: string | undefined;
  try {
    await Promise.all(peers.map((peer) => listenerReady(peer, transport.name, deps.connectTimeoutMs, log)));
    for (const peer of peers)
      plans[peer.index] = { ...plans[peer.index]!, clock: await estimateClock(peer, deps.transmitterBootId) };
    await Promise.all(
      peers.map(async (peer) => {
        await peer.control.openSection(plans[peer.index]!);
        opened.add(peer);
      }),
    );
    outcome = await transfer(
      deps.transfer,
      transport,
      plans[0]!,
      sectionCredential(deps.authToken, plan.sectionId),
      progress,
      peers,
    );
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
          commands: done.commands,
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
    if (err instanceof ItbError && err.code === ErrorCode.receiverUnreachable) receiverLost = err.message;
    // Receivers whose section is still open record it as failed, with the reason.
    const reason = errorMessage(err);
    await Promise.all(
      [...opened].map((peer) =>
        peer.control.endSection(plan.sectionId, failedSectionEnd(reason)).catch(() => undefined),
      ),
    );
    const flight = outcome?.flight;
    result = failedSectionResult(
      plan,
      reason,
      outcome?.coldStart,
      flight === undefined
        ? undefined
        : {
            count: flight.recordedAcked,
            warmedUp: outcome?.warmedUp,
            extras: {
              imagesSent: flight.recordedStamped,
              rtt: flight.tally.rtt.summary() ?? null,
              coldStart: outcome?.coldStart,
              sendLag: flight.tally.sendLag.summary() ?? null,
              rttFromDue: flight.tally.rttFromDue.summary() ?? null,
              achievedRatePerSecond: flight.achievedRatePerSecond,
              clientFigures: flight.clientFigures(),
            },
          },
    );
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
  return { result, receiverLost };
}
