import { ErrorCode, ItbError } from '../../services/core/errors.js';
import type { CeilingPair } from '../../services/transports/ceiling-contract.js';
import { transportTable } from '../../services/transports/index.js';

/** The ceiling pair of every transport, from the transport table's rows, in its order (each loaded on first use). */
export function ceilings(): Promise<CeilingPair[]> {
  return Promise.all(transportTable.map((row) => row.ceiling()));
}

/** A transport's ceiling pair, loaded from its row; an unknown name lists the known ones. */
export function ceilingFor(transport: string): Promise<CeilingPair> {
  const row = transportTable.find((r) => r.transport.name === transport);
  if (!row)
    throw new ItbError(
      ErrorCode.unknownTransport,
      `no ceiling pair for "${transport}"; ceilings: ${transportTable.map((r) => r.transport.name).join(', ')}`,
    );
  return row.ceiling();
}
