import type { CeilingPair } from '../ceiling-contract.js';
import { ceilingSocketPath, streamCeiling } from '../kit/ceiling-stream.js';

/** The unix transport's ceiling: tcp's, over a Unix-domain socket file. */
export const unixCeiling: CeilingPair = streamCeiling(
  'unix',
  'node:net over a Unix-domain socket: socket.cork(), socket.write(header), socket.write(image), ' +
    'socket.uncork(); acks written back on the same socket',
  (options) => ({ path: ceilingSocketPath(options.channel) }),
  (options) => ({ path: ceilingSocketPath(options.channel) }),
);
