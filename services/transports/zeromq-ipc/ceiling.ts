import type { CeilingPair } from '../ceiling-contract.js';
import { ceilingSocketPath } from '../kit/ceiling-stream.js';
import { routerCeiling } from '../kit/ceiling-zeromq.js';

/** The zeromq-ipc transport's ceiling: zeromq's, over ipc:// (a socket file named after the run's channel). */
export const zeromqIpcCeiling: CeilingPair = routerCeiling(
  'zeromq-ipc',
  'zeromq.js v6 over ipc://: Dealer.send([header, image]) → Router; Router.send([peer id, ack]) back on the same ' +
    'socket',
  (options) => `ipc://${ceilingSocketPath(options.channel)}`,
  (options) => `ipc://${ceilingSocketPath(options.channel)}`,
);
