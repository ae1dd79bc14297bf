import { lookup } from 'node:dns/promises';
import net from 'node:net';
import type { Logger } from 'pino';
import { estimateClockOffset, type ClockOffset, type ClockSample } from '../core/model/clock.js';
import type { Config } from '../core/config/config.js';
import type { HealthResponse } from '../core/control/control-protocol.js';
import { ErrorCode, ItbError } from '../core/errors.js';
import type { SectionClock } from '../core/model/section.js';
import { sleep } from '../shared/waits.js';
import type { ControlClient } from './control-client.js';

// Where the receivers are, and what the transmitter asks each before a section. Where: one,
// RECEIVER_HOST on CONTROL_PORT. Several: the addresses npm start lists (ITB_RECEIVERS), or every
// address RECEIVER_HOST resolves to, as compose's `--scale receiver=N` gives (Docker's DNS answers
// with one address per replica).

/** A receiver's control endpoint. */
export interface ReceiverAddress {
  host: string;
  controlPort: number;
}

/** Pause between DNS lookups while fewer receivers than RECEIVERS answer to RECEIVER_HOST. */
const LOOKUP_PAUSE_MS = 500;

/**
 * The run's receivers, the first one first (the one that writes every receiver's figures); rejects after
 * CONNECT_TIMEOUT_MS with fewer than RECEIVERS.
 */
export async function receiverAddresses(
  config: Pick<Config, 'receivers' | 'receiverAddresses' | 'receiverHost' | 'controlPort' | 'connectTimeoutMs'>,
): Promise<ReceiverAddress[]> {
  if (config.receiverAddresses !== undefined) return [...config.receiverAddresses];
  if (config.receivers === 1) return [{ host: config.receiverHost, controlPort: config.controlPort }];
  if (net.isIP(config.receiverHost) !== 0) {
    throw new ItbError(
      ErrorCode.receiverUnreachable,
      `RECEIVERS=${config.receivers} but RECEIVER_HOST=${config.receiverHost} is one address: name them with a ` +
        `host name that resolves to every receiver (docker compose up --scale receiver=${config.receivers}), or ` +
        `use npm start`,
    );
  }
  const deadline = Date.now() + config.connectTimeoutMs;
  let found: string[] = [];
  for (;;) {
    found = await lookup(config.receiverHost, { all: true }).then(
      (answers) => [...new Set(answers.map((a) => a.address))],
      () => [],
    );
    if (found.length >= config.receivers) break;
    if (Date.now() > deadline) {
      throw new ItbError(
        ErrorCode.receiverUnreachable,
        `RECEIVERS=${config.receivers} but ${config.receiverHost} resolved to ${found.length} ` +
          `address${found.length === 1 ? '' : 'es'} within ${config.connectTimeoutMs} ms ` +
          `(CONNECT_TIMEOUT_MS): ${found.join(', ') || 'none'}`,
      );
    }
    await sleep(LOOKUP_PAUSE_MS);
  }
  // Sorted, so the same replicas give the same first receiver every time.
  return found
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
    .slice(0, config.receivers)
    .map((host) => ({ host, controlPort: config.controlPort }));
}

/** A receiver of the run as the transmitter reaches it: its place (0 first), its address, control client and health. */
export interface Peer {
  index: number;
  host: string;
  control: ControlClient;
  health: HealthResponse;
}

/** Round trips per clock-offset estimate (after one that opens the socket): the lowest is kept. */
const CLOCK_SAMPLES = 8;

/**
 * Waits until `peer`'s listener for transport `name` is ready; one that is not is logged (see below).
 * In a cluster the receiver may answer before its broker is up, and a listener that failed
 * retries in the background: its section waits for it, within CONNECT_TIMEOUT_MS. One still
 * down by then, or down for good (a setting missing), fails its section with the receiver's
 * reason, and the run goes on.
 */
export async function listenerReady(peer: Peer, name: string, connectTimeoutMs: number, log: Logger): Promise<void> {
  peer.health = await peer.control.waitUntilReady(connectTimeoutMs, [name]);
  const status = peer.health.listeners[name];
  if (status?.ready !== true)
    log.warn(
      { receiver: peer.host, transport: name, reason: status?.error, retrying: status?.retrying },
      'receiver listener not ready: its section fails with the reason',
    );
}

/** `peer`'s clock offset from the transmitter's, by ping-pong over its control endpoint; null without a sample. */
export async function estimateOffset(peer: Peer): Promise<ClockOffset | null> {
  await peer.control.clockSample();
  const samples: ClockSample[] = [];
  for (let i = 0; i < CLOCK_SAMPLES; i++) samples.push(await peer.control.clockSample());
  return estimateClockOffset(samples) ?? null;
}

/** `peer`'s clock for a section: the offset is applied only across kernels (clocks). */
export async function estimateClock(peer: Peer, transmitterBootId: string | null): Promise<SectionClock | null> {
  const estimate = await estimateOffset(peer);
  if (estimate === null) return null;
  const sameKernel = transmitterBootId !== null && transmitterBootId === peer.health.host.bootId;
  return { ...estimate, applied: !sameKernel };
}
