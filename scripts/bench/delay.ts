import net from 'node:net';
import { formatSize } from '../../services/core/config/size.js';
import { renderTable } from '../../services/core/report/text/format.js';
import type { Transport } from '../../services/transports/contract.js';
import { transportByName } from '../../services/transports/index.js';
import { startDelayRelay, type DelayRelay, type DelayRelayStats } from '../lib/delay-relay.js';
import { freePortsEnv } from '../lib/ports.js';
import { fixed, median } from './format.js';
import type { BenchPlan } from './plan.js';
import { ASSET_BYTES, medianSection, rotated, runSuite, type Cell } from './suite.js';

// The delay part: how much of a delay added to each direction of the link reaches an image's one-way time, per
// transport, at WINDOW=1 (issue 34). NETWORK_DELAY needs sch_netem, which some kernels (CI's) lack, so the delay comes
// from a relay in this process (../lib/delay-relay.ts) instead.
//
// Where the relay sits: the transmitter dials the port the receiver announces for its listener (GET /health), on the
// host it reaches the receiver's control port at (RECEIVER_HOST), so neither port can be redirected by the
// transmitter's own env. The receiver listens on 127.0.0.1; the transmitter is told RECEIVER_HOST=127.0.0.2, another
// loopback address, where relays listen on the very same ports: each transport's delays by the set time and forwards
// to 127.0.0.1, the control port's forwards at once (no delay, only a pass-through on the control path, which no
// image's time crosses). The runs at delay 0 go through the same relays, so the difference is the delay's alone, not
// the relay's hop. The control relay listens only once the receiver's control port accepts: a relay that accepted
// before could only reset the transmitter's first health checks, and Node 20's fetch was seen to lose such a reset and
// hang; with nothing listening the transmitter is refused and retries, as it would across a link.

/** The transports the part compares unless --transports= names others: both gRPC implementations and two baselines. */
export const DELAY_TRANSPORTS = ['grpc', 'grpc-connect', 'websocket', 'tcp'] as const;
/** Each direction's delay unless --delay-ms= says otherwise: a 4 ms round trip, as in issue 34's hand-made runs. */
export const DEFAULT_DELAY_MS = 2;
/** Rounds unless --rounds= says otherwise. */
export const DEFAULT_DELAY_ROUNDS = 5;
/** Recorded images per section unless --delay-images= says otherwise: a p50 that holds still over rounds. */
export const DEFAULT_DELAY_IMAGES = 200;
/** Untimed images before each section's (at most the recorded count): connections and windows settled. */
const DELAY_WARMUP_IMAGES = 50;
/** The image sizes: 16 KiB (one HTTP/2 window holds it) and the asset's 533 KiB (about nine 64 KiB windows). */
const DELAY_SIZES = [16 * 1024, ASSET_BYTES];
/** Where the relays listen: a loopback address of its own, so they can take the receiver's port numbers. */
const RELAY_HOST = '127.0.0.2';
/** Where the receiver listens. */
const RECEIVER_HOST = '127.0.0.1';
/** Issue 34's target: grpc-connect's added time at 533 KiB at most the delay itself plus this. */
const TARGET = { transport: 'grpc-connect', sizeBytes: ASSET_BYTES, slackMs: 0.5 };

/**
 * Why `transport` cannot run behind the relays (a URL or socket setting, a receiver that dials, a second port);
 * undefined: it can.
 */
export function relayProblem(transport: Transport): string | undefined {
  const { setting } = transport.deployment;
  if (setting.kind === 'socket') return `${transport.name} goes through a socket file on this host, not a port`;
  if (setting.kind !== 'port') return `${transport.name} goes through a server at ${setting.envVar}`;
  if (transport.traits.receiverDials) return `${transport.name}'s receiver dials the transmitter`;
  if ((setting.nextPorts ?? 0) > 0) return `${transport.name} listens on ports after ${setting.envVar} too`;
  return undefined;
}

/** One run of the part: its suite run and what each transport's relay measured. */
export interface DelayCell {
  round: number;
  sizeBytes: number;
  delayMs: number;
  cell: Cell;
  /** By transport name. */
  relays: Record<string, DelayRelayStats>;
}

/** A transport and size over the rounds. */
export interface DelaySummary {
  transport: string;
  sizeBytes: number;
  /** Median over the rounds of each section's one-way p50 (ms): without delay, and with it. */
  p50AtZeroMs: number | null;
  p50AtDelayMs: number | null;
  /** p50AtDelayMs − p50AtZeroMs, and each round's own difference. */
  addedMs: number | null;
  addedPerRoundMs: number[];
  /** addedMs minus the delay: what the transport adds beyond the delay itself. */
  beyondDelayMs: number | null;
  /** Largest lateness of a chunk in either direction of the relay over every round with the delay (ms). */
  relayMaxLatenessMs: number;
  /** Issue 34's target where it applies (grpc-connect at 533 KiB), else null. */
  targetMet: boolean | null;
  /** Sections that failed, with their reasons. */
  failures: string[];
}

/** The part's figures per transport and size; pure, so what it says follows from the cells alone. */
export function summarizeDelay(
  transportNames: readonly string[],
  delayMs: number,
  cells: readonly DelayCell[],
): DelaySummary[] {
  return DELAY_SIZES.flatMap((sizeBytes) =>
    transportNames.map((transport): DelaySummary => {
      // A failed section's times are not the transport's: it is listed under failures instead.
      const p50 = (cell: DelayCell) =>
        cell.cell.report.transports.find((t) => t.transport === transport)?.ok === true
          ? medianSection(cell.cell.report, transport)?.latency?.p50Ms
          : undefined;
      const ofSize = cells.filter((c) => c.sizeBytes === sizeBytes);
      const at = (delay: number) => ofSize.filter((c) => c.delayMs === delay);
      const zero = median(at(0).flatMap((c) => p50(c) ?? []));
      const delayed = median(at(delayMs).flatMap((c) => p50(c) ?? []));
      const addedMs = zero === null || delayed === null ? null : delayed - zero;
      const rounds = [...new Set(ofSize.map((c) => c.round))];
      const addedPerRoundMs = rounds.flatMap((round) => {
        const [a, b] = [0, delayMs].map((delay) => at(delay).find((c) => c.round === round));
        const [x, y] = [a && p50(a), b && p50(b)];
        return x === undefined || y === undefined ? [] : [y - x];
      });
      const beyondDelayMs = addedMs === null ? null : addedMs - delayMs;
      const failures = ofSize.flatMap((c) => {
        const summary = c.cell.report.transports.find((t) => t.transport === transport);
        return summary === undefined || summary.ok
          ? []
          : [`round ${c.round}, ${c.delayMs} ms: ${summary.failure ?? 'lost or corrupt images'}`];
      });
      return {
        transport,
        sizeBytes,
        p50AtZeroMs: zero,
        p50AtDelayMs: delayed,
        addedMs,
        addedPerRoundMs,
        beyondDelayMs,
        relayMaxLatenessMs: Math.max(
          0,
          ...at(delayMs).flatMap((c) => {
            const relay = c.relays[transport];
            return relay === undefined ? [] : [relay.toTarget.maxLatenessMs, relay.toClient.maxLatenessMs];
          }),
        ),
        targetMet:
          transport === TARGET.transport && sizeBytes === TARGET.sizeBytes && beyondDelayMs !== null
            ? beyondDelayMs <= TARGET.slackMs
            : null,
        failures,
      };
    }),
  );
}

/** Pause between checks of whether the receiver's control port accepts. */
const ACCEPT_POLL_MS = 10;

/** Resolves once `host:port` accepts a connection (closed at once), or when `gaveUp` says to stop trying. */
async function acceptsConnections(host: string, port: number, gaveUp: () => boolean): Promise<boolean> {
  while (!gaveUp()) {
    const accepted = await new Promise<boolean>((resolve) => {
      const probe = net.connect({ host, port });
      probe.once('connect', () => {
        probe.destroy();
        resolve(true);
      });
      probe.once('error', () => resolve(false));
    });
    if (accepted) return true;
    await new Promise((resolve) => setTimeout(resolve, ACCEPT_POLL_MS));
  }
  return false;
}

/** One suite run with every transport's port behind a relay of `delayMs` (and the control port behind one of 0). */
async function relayedRun(
  transportNames: readonly string[],
  name: string,
  delayMs: number,
  env: Record<string, string>,
): Promise<{ cell: Cell; relays: Record<string, DelayRelayStats> }> {
  const ports = await freePortsEnv();
  const relays: { transport: string | null; relay: DelayRelay }[] = [];
  const relayPort = async (transport: string | null, envVar: string, ms: number) => {
    const port = Number(ports[envVar]);
    const relay = await startDelayRelay({
      listenHost: RELAY_HOST,
      listenPort: port,
      targetHost: RECEIVER_HOST,
      targetPort: port,
      delayMs: ms,
    });
    relays.push({ transport, relay });
  };
  let ended = false;
  try {
    for (const transport of transportNames) {
      const { setting } = transportByName(transport).deployment;
      await relayPort(transport, setting.envVar, delayMs);
    }
    const suite = runSuite(transportNames, name, {
      ...ports,
      BIND_HOST: RECEIVER_HOST,
      RECEIVER_HOST: RELAY_HOST,
      ...env,
    }).finally(() => (ended = true));
    // The transport relays stand from the start: the transmitter dials them only once the receiver says it listens.
    if (await acceptsConnections(RECEIVER_HOST, Number(ports.CONTROL_PORT), () => ended))
      await relayPort(null, 'CONTROL_PORT', 0);
    const cell = await suite;
    return {
      cell,
      relays: Object.fromEntries(
        relays.flatMap(({ transport, relay }) => (transport === null ? [] : [[transport, relay.stats()]])),
      ),
    };
  } finally {
    await Promise.all(relays.map(({ relay }) => relay.close()));
  }
}

/**
 * The delay part: per round, each image size at delay 0 and at the set delay (their order and the transports' rotated
 * each round), WINDOW=1; then per transport and size the median p50s, the time the delay added, and that minus the
 * delay.
 */
export async function delaySweep(
  plan: BenchPlan,
): Promise<{ lines: string[]; cells: DelayCell[]; summary: DelaySummary[] }> {
  const { delayTransports: names, delayMs, delayRounds: rounds, delayImages: images } = plan;
  const cells: DelayCell[] = [];
  for (let round = 1; round <= rounds; round++) {
    const order = rotated(names, round - 1);
    for (const sizeBytes of DELAY_SIZES) {
      for (const delay of rotated([0, delayMs], round - 1)) {
        const { cell, relays } = await relayedRun(
          names,
          `delay: round ${round}, ${formatSize(sizeBytes)}, ${delay} ms each way`,
          delay,
          {
            TRANSPORTS: order.join(','),
            IMAGE_SIZE: String(sizeBytes),
            IMAGE_COUNT: String(images),
            WARMUP: String(Math.min(DELAY_WARMUP_IMAGES, images)),
            WINDOW: '1',
            REPEAT: '1',
          },
        );
        cells.push({ round, sizeBytes, delayMs: delay, cell, relays });
      }
    }
  }
  const summary = summarizeDelay(names, delayMs, cells);
  const rows = summary.map((s) => [
    s.transport,
    formatSize(s.sizeBytes),
    fixed(s.p50AtZeroMs, 3),
    fixed(s.p50AtDelayMs, 3),
    fixed(s.addedMs, 3),
    fixed(s.beyondDelayMs, 3),
    s.addedPerRoundMs.map((v) => v.toFixed(2)).join(' ') || '-',
    s.relayMaxLatenessMs.toFixed(3),
    s.targetMet === null ? '-' : s.targetMet ? 'met' : 'NOT MET',
    s.failures.length === 0 ? 'ok' : `FAILED: ${s.failures.join('; ')}`,
  ]);
  return {
    cells,
    summary,
    lines: [
      `Delay: a relay on loopback adds ${delayMs} ms to each direction of each transport's connection (a round ` +
        `trip gains ${2 * delayMs} ms; control traffic crosses undelayed), WINDOW=1, ${images} images per section ` +
        (`after ` +
          Math.min(DELAY_WARMUP_IMAGES, images) +
          ` untimed, ${rounds} interleaved round${rounds === 1 ? '' : 's'}. `) +
        `p50: median over the rounds of the one-way p50 (ms); added: p50 at ${delayMs} ms − p50 at 0; beyond: added ` +
        `− ${delayMs} ms, what the transport adds beyond the delay itself (a window update waiting a round trip ` +
        `shows here); relay late: the largest lateness of a chunk the relay sent toward the receiver. Target ` +
        `(issue 34): ${TARGET.transport} at ${formatSize(TARGET.sizeBytes)} adds at most the delay + ` +
        `${TARGET.slackMs} ms.`,
      renderTable(
        [
          'Transport',
          'Image',
          'p50 @0',
          `p50 @${delayMs}`,
          'added',
          'beyond',
          'added per round',
          'relay late',
          'Target',
          'Result',
        ],
        rows,
      ),
    ],
  };
}
