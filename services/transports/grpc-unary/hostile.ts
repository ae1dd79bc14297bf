import type { HostileClient } from '../hostile-contract.js';

/** One unary Put call whose request announces more than it sends. */
export const grpcUnaryHostile: HostileClient = (attack, clients) =>
  clients.grpc({ ...attack.message, path: '/itb.ImageUnary/Put' });
