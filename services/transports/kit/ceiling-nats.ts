import type { NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, ItbError } from '../../core/errors.js';
import { withTimeout } from '../../shared/waits.js';
import { ackSeq, CEILING_ACK_BYTES, type CeilingConnectOptions } from '../ceiling-contract.js';
import { bufferOf, closeConnection, FLUSH_TIMEOUT_MS, natsLibrary } from './nats.js';

// What the NATS ceiling pairs (nats: core NATS, nats-jetstream) share, as their transports share
// kit/nats.ts (whose library, limits, header name and bounded close they take too): a connection
// that never reconnects and presents nothing, and the whole sender side but its publish: its ack
// inbox, subscribed and in place on the server, every 12-byte ack on it handed to the driver, and
// the connection's end reported unless the sender closed it.

/** Bound on reaching the server. */
const CONNECT_TIMEOUT_MS = 5000;

/** One connection to the broker of the pair of `transport`, never reconnecting: a drop mid-run is a failure. */
export function openCeilingNats(
  brokerUrl: string | undefined,
  transport: string,
  name: string,
): Promise<NatsConnection> {
  if (brokerUrl === undefined)
    throw new ItbError(ErrorCode.config, `${transport} ceiling: no broker URL (nats://host:port)`);
  return natsLibrary().connect({
    servers: brokerUrl,
    name,
    reconnect: false,
    timeout: CONNECT_TIMEOUT_MS,
    noRandomize: true,
    ignoreClusterUpdates: true,
  });
}

/** Confirms what was subscribed is in place on the server; closes the connection if it cannot. */
export async function flushed(nc: NatsConnection, what: string): Promise<void> {
  try {
    await withTimeout(nc.flush(), FLUSH_TIMEOUT_MS, what);
  } catch (err) {
    await closeConnection(nc);
    throw err;
  }
}

/** A NATS pair's sender connection and its ack inbox; see {@link openCeilingSender}. */
export interface CeilingNatsSender {
  nc: NatsConnection;
  /** The subject the receiver publishes the acks to. */
  inbox: string;
  /** True once close() began: what fails from then on is the sender's own doing. */
  readonly closing: boolean;
  close(): Promise<void>;
}

/**
 * A NATS pair's sender: its connection, and its ack inbox subscribed and in place on the server; each ack's seq goes to
 * the driver, and a message too short for an ack fails the run with `shortAck` (core NATS's "no responders" status).
 */
export async function openCeilingSender(
  options: CeilingConnectOptions,
  transport: string,
  shortAck: string,
): Promise<CeilingNatsSender> {
  const nc = await openCeilingNats(options.brokerUrl, transport, 'itb-ceiling-sender');
  let closing = false;
  const sender: CeilingNatsSender = {
    nc,
    inbox: natsLibrary().createInbox(`${options.channel}.acks`),
    get closing() {
      return closing;
    },
    async close() {
      closing = true;
      await closeConnection(nc);
    },
  };
  nc.subscribe(sender.inbox, {
    callback: (err, msg) => {
      if (err) return options.onFailure(`${transport}: ack subscription failed: ${err.message}`);
      if (msg.data.length < CEILING_ACK_BYTES) return options.onFailure(`${transport}: ${shortAck}`);
      options.onAck(ackSeq(bufferOf(msg.data)));
    },
  });
  await flushed(nc, `${transport} ceiling: subscribing to the ack inbox`);
  void nc.closed().then((err) => {
    if (!closing) options.onFailure(`${transport}: connection closed${err ? `: ${err.message}` : ''}`);
  });
  return sender;
}
