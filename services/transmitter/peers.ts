import { lookup } from 'node:dns/promises';
import net from 'node:net';
import type { Config } from '../core/config/config.js';
import { ErrorCode, ItbError } from '../core/errors.js';
import { sleep } from '../shared/waits.js';

// Where the receivers are. One: RECEIVER_HOST on CONTROL_PORT. Several: the addresses npm start
// lists (ITB_RECEIVERS), or every address RECEIVER_HOST resolves to, as compose's
// `--scale receiver=N` gives (Docker's DNS answers with one address per replica).

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
