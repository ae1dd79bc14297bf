import { ErrorCode, ItbError } from '../core/errors.js';
import type { Transport } from './contract.js';
import { grpcTransport } from './grpc.js';
import { redisTransport } from './redis.js';
import { tcpTransport } from './tcp.js';
import { websocketTransport } from './websocket.js';
import { zeromqTransport } from './zeromq.js';

/**
 * Every transport, in the default run order (the TCP baseline last). This is the one list: config,
 * `.env.example`'s check, `npm start`'s local servers, reports, bench and tests all take theirs
 * from it. Adding a transport: its file, and a row here.
 */
export const transports: readonly Transport[] = [websocketTransport, grpcTransport, zeromqTransport, redisTransport, tcpTransport];

/** Looks a transport up by name; an unknown name is an error that lists the valid ones. */
export function transportByName(name: string): Transport {
  const found = transports.find((t) => t.name === name);
  if (!found) {
    throw new ItbError(ErrorCode.unknownTransport, `unknown transport "${name}"; valid: ${transports.map((t) => t.name).join(', ')}`);
  }
  return found;
}
