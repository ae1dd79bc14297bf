import type { HostileClient } from '../hostile-contract.js';

/** grpc's Transfer call: Connect for Node serves the same service and protocol. */
export const grpcConnectHostile: HostileClient = (attack, clients) =>
  clients.grpc({ ...attack.message, path: '/itb.ImageTransfer/Transfer' });
