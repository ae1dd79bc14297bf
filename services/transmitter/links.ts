import type { Logger } from 'pino';
import type { SectionCredential } from '../core/wire/auth.js';
import type { Config } from '../core/config/config.js';
import { errorMessage } from '../core/errors.js';
import type { SectionPlan } from '../core/model/section.js';
import type { TransmitterLink, Transport } from '../transports/contract.js';
import { COMMAND_SEQ_BASE, type Ack } from '../core/wire/frame.js';
import type { AckWaiter, Flight } from './flight.js';
import type { Peer } from './peers.js';

/** What every link of the run is opened with: the config's settings for links, the image's size and the log. */
export interface LinkSettings
  extends Pick<
    Config,
    'bindHost' | 'ports' | 'socketPaths' | 'urls' | 'brokerPasswords' | 'maxImageBytes' | 'connectTimeoutMs'
  > {
  imageSizeBytes: number;
  log: Logger;
}

/**
 * One link per client and receiver (a copy each), or per client alone for a transport whose one
 * send reaches every receiver; all connected at once. When any fails to connect, the others are
 * closed and the first problem is the section's.
 */
export async function connectLinks(
  settings: LinkSettings,
  transport: Transport,
  plan: SectionPlan,
  credential: SectionCredential,
  flight: Flight,
  waiter: AckWaiter,
  peers: readonly Peer[],
  /**
   * COMMAND_RATE's lane, when the section runs one: gets every ack whose seq is a command's instead of the flight, and
   * the link that carries the commands ({@link commandLink}) opens what its sendCommand needs.
   */
  commands?: { onAck(ack: Ack): void },
): Promise<TransmitterLink[][]> {
  const { log } = settings;
  const oneSend = transport.traits.fanOut === 'one send';
  const targets = oneSend ? peers.slice(0, 1) : peers;
  const connecting = Array.from({ length: plan.clients }, (_, client) =>
    targets.map((peer, target) =>
      transport.connect({
        host: peer.host,
        bindHost: settings.bindHost,
        port: portOf(transport, peer, settings.ports),
        url: settings.urls[transport.name],
        socketPath: settings.socketPaths[transport.name],
        password: settings.brokerPasswords[transport.name],
        maxImageBytes: settings.maxImageBytes,
        connectTimeoutMs: settings.connectTimeoutMs,
        credential,
        imageBytes: settings.imageSizeBytes,
        window: plan.window,
        clients: plan.clients,
        receiverIndex: peer.index,
        ...(oneSend && peers.length > 1
          ? { peers: peers.map((each) => ({ host: each.host, port: portOf(transport, each, settings.ports) })) }
          : {}),
        // Only the link that carries the commands opens a lane for them: the others would hold it unused.
        ...(commands !== undefined && client === 0 && target === 0 ? { commandLane: true } : {}),
        log: log.child({
          transport: transport.name,
          ...(plan.clients > 1 ? { client } : {}),
          ...(peers.length > 1 ? { receiver: peer.index } : {}),
        }),
        // A link to one receiver hears only it; a shared one hears every receiver, each naming itself.
        onAck: (ack) =>
          ack.seq >= COMMAND_SEQ_BASE
            ? commands?.onAck(ack)
            : flight.onAck(ack, oneSend ? (ack.receiver ?? 0) : peer.index),
        onFailure: (err) => waiter.fail(err),
      }),
    ),
  );
  const settled = await Promise.allSettled(connecting.flat());
  const connected = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed !== undefined) {
    await closeLinks(transport, connected, log);
    throw failed.reason;
  }
  return Array.from({ length: plan.clients }, (_, client) =>
    connected.slice(client * targets.length, (client + 1) * targets.length),
  );
}

/** The link that carries COMMAND_RATE's commands: the first client's, to the first (or only) receiver. */
export function commandLink(links: readonly (readonly TransmitterLink[])[]): TransmitterLink | undefined {
  return links[0]?.[0];
}

/**
 * The port a link dials: the one the receiver reports for its listener (each receiver of several
 * may have its own), else the configured one (websocket-push's is the transmitter's own).
 */
export function portOf(transport: Transport, peer: Peer, ports: LinkSettings['ports']): number {
  const configured = ports[transport.name] ?? 0;
  if (transport.deployment.setting.kind !== 'port' || transport.traits.receiverDials) return configured;
  return peer.health.listeners[transport.name]?.port || configured;
}

/** Closes `links`, each failure logged, never thrown: a section's end must not fail on a link's. */
export async function closeLinks(transport: Transport, links: readonly TransmitterLink[], log: Logger): Promise<void> {
  await Promise.all(
    links.map((link) =>
      link
        .close()
        .catch((err: unknown) => log.warn({ transport: transport.name, err: errorMessage(err) }, 'close failed')),
    ),
  );
}
