import type { HostileClient } from '../hostile-contract.js';

/** A PAIR takes PAIR peers only: the message comes from a PAIR. */
export const zeromqPairHostile: HostileClient = (attack, clients) =>
  clients.zeromq({ ...attack.message, socketType: 'PAIR', header: attack.header });
