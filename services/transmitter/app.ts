import type { Logger } from 'pino';
import { randomBytes } from 'node:crypto';
import { imageChecksum } from '../core/wire/checksum.js';
import type { CommandSettings } from './command-lane.js';
import { publicConfig, type Config } from '../core/config/config.js';
import type { RunAnnouncement, RunOutcome } from '../core/control/control-protocol.js';
import { buildRunReport, type HostFacts } from '../core/report/report.js';
import { renderSummary } from '../core/report/text/summary-tables.js';
import type { SectionResult } from '../core/model/section.js';
import { exerciseSharedPaths } from '../core/model/prewarm.js';
import { warmupPlan, type WarmupPlan } from '../core/model/warmup.js';
import { transmitterAuthToken } from '../shared/auth-token.js';
import { hostFacts } from '../shared/host.js';
import { transportByName } from '../transports/index.js';
import type { Transport } from '../transports/contract.js';
import { ControlClient } from './control-client.js';
import { DueTimer } from './due-timer.js';
import { receiverAddresses, type Peer, type ReceiverAddress } from './peers.js';
import { runSection, type RunObserver, type SectionDeps, type SectionSettings } from './section-runner.js';
import type { TransferSettings } from './transfer.js';

export type { SectionProgress } from './flight.js';
export type { RunObserver } from './section-runner.js';

// The run: its receivers, the token, the announcement, every section in turn, the finish. What a
// section does is in section-runner.ts; what it runs with is built here once, from the config.

/** The image a run sends, loaded before the run (never inside the timed path). */
export interface RunImage {
  bytes: Buffer;
  description: string;
}

/** A transmitter: runs every configured transport's section in turn against one receiver. */
export interface TransmitterApp {
  run(): Promise<RunOutcome>;
}

/**
 * The transports of repeat `repeat` (from 1) in run order: TRANSPORTS rotated by one place per
 * repeat (A B C, B C A, C A B, …), so no transport always follows the same neighbour.
 */
function rotatedOrder<T>(transports: readonly T[], repeat: number): T[] {
  const shift = (repeat - 1) % Math.max(1, transports.length);
  return [...transports.slice(shift), ...transports.slice(0, shift)];
}

/** The command lane's settings under COMMAND_RATE (random bytes, so a checksum that passes means something). */
function commandSettings(config: Readonly<Config>): CommandSettings | undefined {
  if (config.commandRatePerSecond === undefined) return undefined;
  const payload = randomBytes(config.commandSizeBytes);
  return { ratePerSecond: config.commandRatePerSecond, payload, checksum: imageChecksum(payload) };
}

/** Builds a transmitter that sends `image` per the config; nothing happens until run(). */
export function buildTransmitter(
  config: Readonly<Config>,
  image: RunImage,
  log: Logger,
  observer?: RunObserver,
): TransmitterApp {
  const checksum = imageChecksum(image.bytes);
  // The run's transports, in TRANSPORTS order.
  const transports = config.transports.map(transportByName);
  const transmitterHost = hostFacts(transports);

  return {
    async run() {
      const addresses = await receiverAddresses(config);
      const controls = addresses.map(
        (address) =>
          new ControlClient(address.host, address.controlPort, config.imageTimeoutMs, config.connectTimeoutMs),
      );
      // Under RATE, one for the whole run, started before the first section (never on the timed path).
      let dueTimer: DueTimer | undefined;
      try {
        const peers = await readyPeers(addresses, controls, config.connectTimeoutMs, log);
        const authToken = authorizeControls(config, controls, log);
        const announcement: RunAnnouncement = {
          startedAt: new Date().toISOString(),
          imageDescription: image.description,
          imageSizeBytes: image.bytes.length,
          imageCount: config.imageCount,
          window: config.window,
          warmup: warmupPlan(config),
          repeat: config.repeat,
          transports: config.transports,
          arrivalNotes: transports.flatMap((transport) => transport.traits.batchedArrivals ?? []),
          config: publicConfig(config),
          receivers: peers.length,
          receiverIndex: 0,
          hosts: { transmitter: transmitterHost },
        };
        await Promise.all(peers.map((peer) => peer.control.startRun({ ...announcement, receiverIndex: peer.index })));
        if (config.ratePerSecond !== undefined) dueTimer = await DueTimer.open();
        // WARMUP=0 is a cold run on purpose: nothing is warmed, not even the shared paths.
        if (config.warmup !== 0) exerciseSharedPaths(image.bytes);
        // What every section runs with, the same for the whole run.
        const deps: SectionDeps = {
          peers,
          authToken,
          transmitterBootId: transmitterHost.bootId,
          settings: sectionSettings(config, announcement.warmup),
          transfer: transferSettings(config, image, checksum, dueTimer, log),
          connectTimeoutMs: config.connectTimeoutMs,
          profile: config.profile,
          log,
          observer,
        };
        const { sections, receiverLost } = await runSections(deps, transports, config.repeat);
        if (receiverLost === undefined) return await finishRun(peers, announcement, transmitterHost, sections);
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
      }
    },
  };
}

/** Each receiver as a peer once it answers (a warning for one still starting after CONNECT_TIMEOUT_MS). */
async function readyPeers(
  addresses: readonly ReceiverAddress[],
  controls: readonly ControlClient[],
  connectTimeoutMs: number,
  log: Logger,
): Promise<Peer[]> {
  const healths = await Promise.all(controls.map((control) => control.waitUntilReady(connectTimeoutMs)));
  for (const [index, health] of healths.entries())
    if (health.status === 'starting')
      log.warn(
        { receiver: addresses[index]!.host, waitingFor: health.waitingFor },
        'receiver still starting after CONNECT_TIMEOUT_MS: each section waits for its own listener',
      );
  return addresses.map((address, index) => ({
    index,
    host: address.host,
    control: controls[index]!,
    health: healths[index]!,
  }));
}

/** Gives every control client the run's token, and returns it; read once the receivers answer. */
function authorizeControls(config: Readonly<Config>, controls: readonly ControlClient[], log: Logger): string {
  // Without AUTH_TOKEN it is the file the receiver creates at start.
  const { token: authToken, file: tokenFile } = transmitterAuthToken(config);
  if (tokenFile !== undefined)
    log.info(
      { authTokenFile: tokenFile.file, trustedBecause: tokenFile.trustedBecause },
      'AUTH_TOKEN is unset: using the secret in AUTH_TOKEN_FILE',
    );
  for (const control of controls) control.authorize(authToken);
  return authToken;
}

/** What every section's plan takes from the config. */
function sectionSettings(config: Readonly<Config>, plan: WarmupPlan): SectionSettings {
  return {
    repeat: config.repeat,
    imageCount: config.imageCount,
    durationMs: config.durationMs,
    warmupPlan: plan,
    window: config.window,
    ratePerSecond: config.ratePerSecond,
    deadline: config.deadline,
    clients: config.clients,
  };
}

/** What every section's transfer is set up with: its links' settings, the image, the due timer, the command lane. */
function transferSettings(
  config: Readonly<Config>,
  image: RunImage,
  checksum: bigint,
  dueTimer: DueTimer | undefined,
  log: Logger,
): TransferSettings {
  return {
    links: {
      bindHost: config.bindHost,
      ports: config.ports,
      urls: config.urls,
      socketPaths: config.socketPaths,
      brokerPasswords: config.brokerPasswords,
      maxImageBytes: config.maxImageBytes,
      connectTimeoutMs: config.connectTimeoutMs,
      imageSizeBytes: image.bytes.length,
      log,
    },
    imageBytes: image.bytes,
    imageChecksum: checksum,
    imageTimeoutMs: config.imageTimeoutMs,
    dueTimer,
    commands: commandSettings(config),
    log,
  };
}

/**
 * Every repeat's sections, one of every transport per repeat in an order rotated each repeat, so drift on a shared
 * machine and a neighbour's leftover garbage hit every transport alike; stops after a section whose receiver is lost.
 */
async function runSections(
  deps: SectionDeps,
  transports: readonly Transport[],
  repeats: number,
): Promise<{ sections: SectionResult[]; receiverLost: string | undefined }> {
  const sections: SectionResult[] = [];
  // A receiver that could not take part (listener down) or is gone stops the run after its section.
  let receiverLost: string | undefined;
  for (let repeat = 1; repeat <= repeats && receiverLost === undefined; repeat++) {
    for (const transport of rotatedOrder(transports, repeat)) {
      const section = await runSection(deps, transport, repeat);
      sections.push(section.result);
      receiverLost = section.receiverLost;
      if (receiverLost !== undefined) break;
    }
  }
  return { sections, receiverLost };
}

/**
 * Ends the run on every receiver. The first receiver's outcome is the run's: it holds every receiver's figures. Each
 * answers with its summary; the report here is built from the sections' results it sent back. Any receiver that could
 * not write its files fails the run.
 */
async function finishRun(
  peers: readonly Peer[],
  announcement: RunAnnouncement,
  transmitterHost: HostFacts,
  sections: SectionResult[],
): Promise<RunOutcome> {
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
