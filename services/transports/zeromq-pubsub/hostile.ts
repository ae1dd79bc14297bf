import type { HostileClient } from '../hostile-contract.js';

/** The image port's SUB takes publishers only: the message comes from an XPUB. */
export const zeromqPubsubHostile: HostileClient = (attack, clients) =>
  clients.zeromq({ ...attack.message, socketType: 'XPUB', header: attack.header });
