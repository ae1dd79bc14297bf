import type { HostileClient } from '../hostile-contract.js';

/** A DEALER's [header, image] message, the image part announcing more than it sends. */
export const zeromqHostile: HostileClient = (attack, clients) =>
  clients.zeromq({ ...attack.message, header: attack.header });
