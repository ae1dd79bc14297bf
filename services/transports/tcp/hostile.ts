import { encodeHello } from '../../core/wire/auth.js';
import type { HostileClient } from '../hostile-contract.js';

/** The header then the image on the socket, after the hello record that presents the credential. */
export const tcpHostile: HostileClient = (attack, clients) =>
  clients.tcp({ ...attack.message, hello: attack.credential && encodeHello(attack.credential), header: attack.header });
