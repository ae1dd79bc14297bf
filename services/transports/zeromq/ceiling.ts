import type { CeilingPair } from '../ceiling-contract.js';
import { routerCeiling, zeromqAddress } from '../kit/ceiling-zeromq.js';

/** The zeromq transport's ceiling: Dealer → Router, [header, image] out, [peer id, ack] back. */
export const zeromqCeiling: CeilingPair = routerCeiling(
  'zeromq',
  'zeromq.js v6: Dealer.send([header, image]) → Router; Router.send([peer id, ack]) back on the same socket',
  (options) => zeromqAddress(options.bindHost, options.port === 0 ? '*' : options.port),
  (options) => zeromqAddress(options.host, options.port),
);
