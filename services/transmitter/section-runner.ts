import { randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { sectionCredential } from '../core/wire/auth.js';
import type { ClockOffset } from '../core/model/clock.js';
import { MAX_IMAGE_COUNT, type Config } from '../core/config/config.js';
import { failedSectionEnd, type SectionEnd } from '../core/control/control-protocol.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { fanOutOf, type SectionPlan, type SectionResult } from '../core/model/section.js';
import { failedSectionResult } from '../core/model/section-result.js';
import type { WarmupPlan } from '../core/model/warmup.js';
import type { Transport } from '../transports/contract.js';
import type { SectionProgress } from './flight.js';
import { estimateClock, estimateOffset, listenerReady, type Peer } from './peers.js';
import { transfer, type TransferOutcome, type TransferSettings } from './transfer.js';
import type { CpuProfileRecording } from '../shared/cpu-profile.js';
import { sendSectionProfile, startSectionProfile } from './section-profile.js';

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
  /** PROFILE=1: each section's CPU profile goes to the receivers (./section-profile.ts). */
  profile: boolean;
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
  const progress = sectionProgress(transport, repeat, settings, imageSizeBytes);
  const plan = sectionPlan(transport, repeat, settings, imageSizeBytes, peers.length);
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
  let profile: CpuProfileRecording | undefined;
  try {
    await Promise.all(peers.map((peer) => listenerReady(peer, transport.name, deps.connectTimeoutMs, log)));
    for (const peer of peers)
      plans[peer.index] = { ...plans[peer.index]!, clock: await estimateClock(peer, deps.transmitterBootId) };
    profile = await startSectionProfile(deps.profile, transport.name, log);
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
    const done = outcome;
    // Again after the last ack: how far each offset drifted during the section bounds the one-way times' error.
    const clocksAfter: (ClockOffset | null)[] = [];
    for (const peer of peers) clocksAfter.push(await estimateOffset(peer));
    // Before the end, so that the receiver's output.log names it with the section's figures.
    await sendSectionProfile(profile, peers, plan.sectionId, log);
    const results = await Promise.all(
      peers.map((peer) =>
        peer.control.endSection(plan.sectionId, transmitterSectionEnd(done, peer.index, clocksAfter[peer.index])),
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
    await sendSectionProfile(profile, [...opened], plan.sectionId, log);
    await Promise.all(
      [...opened].map((peer) =>
        peer.control.endSection(plan.sectionId, failedSectionEnd(reason)).catch(() => undefined),
      ),
    );
    result = resultFromAcks(plan, reason, outcome);
  } finally {
    outcome?.flight.destroy();
    await profile?.stop().catch(() => undefined);
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

/** What the progress display is told of a section as it starts: nothing sent yet. */
function sectionProgress(
  transport: Transport,
  repeat: number,
  settings: SectionSettings,
  imageSizeBytes: number,
): SectionProgress {
  return {
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
}

/** The section's plan as the first receiver gets it, before its clock offset is known. */
function sectionPlan(
  transport: Transport,
  repeat: number,
  settings: SectionSettings,
  imageSizeBytes: number,
  receivers: number,
): SectionPlan {
  return {
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
    receivers,
    receiverIndex: 0,
    clock: null,
  };
}

/** The transmitter's side of a transferred section, as receiver `peerIndex` is told it at the section's end. */
function transmitterSectionEnd(
  done: TransferOutcome,
  peerIndex: number,
  clockAfter: ClockOffset | null | undefined,
): SectionEnd {
  const { flight } = done;
  return {
    failure: done.failure,
    transmitterCost: done.cost,
    imagesSent: flight.recordedStamped,
    roundTripsShipped: done.roundTripsShipped[peerIndex] ?? 0,
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
    clockAfter: clockAfter ?? null,
    commands: done.commands,
  };
}

/** A failed section's result, built from what the acks told (nothing recorded when no transfer began). */
function resultFromAcks(plan: SectionPlan, reason: string, outcome: TransferOutcome | undefined): SectionResult {
  const flight = outcome?.flight;
  return failedSectionResult(
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
}
