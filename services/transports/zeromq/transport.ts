import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { createDealer, listenRouter } from '../kit/zeromq-router.js';
import { connectOneSocket, tcpAddress, zeromqLibrary } from '../kit/zeromq.js';

// Dealer → Router over TCP: the link kit/zeromq-router.ts describes, on ZEROMQ_PORT.

/** Dealer → Router, the Dealer reading acks back (kit/zeromq.ts's connectOneSocket). */
function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  return connectOneSocket(options, createDealer, 'ZeroMQ', 'zeromq');
}

function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  return listenRouter(options, tcpAddress(options.bindHost, options.port === 0 ? '*' : options.port), 'zeromq');
}

/** ZeroMQ (zeromq.js v6): Dealer → Router, multipart [header, image], acks on the same socket. */
export const zeromqTransport: Transport = {
  name: 'zeromq',
  label: 'ZeroMQ',
  summary: {
    libraries: 'zeromq',
    image: 'Dealer → Router, `[header, image]`',
    ack: 'on the same socket pair',
  },
  traits: {
    baseline: false,
  },
  library: {
    packages: ['zeromq'],
    nativeVersions: () => ({ libzmq: zeromqLibrary().version }),
  },
  deployment: {
    defaultRun: true,
    setting: { kind: 'port', envVar: 'ZEROMQ_PORT', defaultPort: 5555 },
  },
  connect,
  listen,
};
