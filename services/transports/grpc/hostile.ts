import type { HostileClient } from '../hostile-contract.js';

/** A bidi Transfer call whose first Frame message announces more than it sends. */
export const grpcHostile: HostileClient = (attack, clients) =>
  clients.grpc({ ...attack.message, path: '/itb.ImageTransfer/Transfer' });
