import type { HostileClient } from '../hostile-contract.js';
import { PATH } from '../kit/websocket.js';

/** An upgrade with the credential, then a binary message announcing more than it sends. */
export const websocketHostile: HostileClient = (attack, clients) =>
  clients.websocket({ ...attack.message, path: PATH });
