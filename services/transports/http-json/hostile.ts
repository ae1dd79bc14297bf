import type { HostileClient } from '../hostile-contract.js';
import { PATH } from '../kit/http.js';

/** A JSON POST whose Content-Length announces more than it sends. */
export const httpJsonHostile: HostileClient = (attack, clients) =>
  clients.http({ ...attack.message, path: PATH, contentType: 'application/json' });
