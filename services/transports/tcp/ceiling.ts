import type { CeilingPair } from '../ceiling-contract.js';
import { streamCeiling } from '../kit/ceiling-stream.js';

/** The tcp transport's ceiling: header and image on one socket, 12-byte acks back on it. */
export const tcpCeiling: CeilingPair = streamCeiling(
  'tcp',
  'node:net: socket.cork(), socket.write(header), socket.write(image), socket.uncork(); acks written back on ' +
    'the same socket',
  (options) => ({ host: options.bindHost, port: options.port }),
  (options) => ({ host: options.host, port: options.port }),
);
