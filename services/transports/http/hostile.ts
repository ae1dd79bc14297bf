import type { HostileClient } from '../hostile-contract.js';
import { PATH } from '../kit/http.js';
import { FRAME_HEADER_FIELD } from './transport.js';

/** A raw-body POST, the header in x-itb-frame, its Content-Length more than it sends. */
export const httpHostile: HostileClient = (attack, clients) =>
  clients.http({
    ...attack.message,
    path: PATH,
    contentType: 'application/octet-stream',
    headers: { [FRAME_HEADER_FIELD]: attack.header.toString('base64url') },
  });
