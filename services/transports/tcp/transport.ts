import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { connectStream, listenStream } from '../kit/stream.js';

// The floor: each frame is the 40-byte header (which carries the length) then the image bytes on
// one plain socket, a hello with the section's credential first (kit/stream.ts: both sides).

function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  return connectStream(options, { host: options.host, port: options.port }, 'TCP');
}

function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  return listenStream(options, { host: options.bindHost, port: options.port }, 'tcp');
}

/** Plain TCP, the baseline every other transport is measured against. */
export const tcpTransport: Transport = {
  name: 'tcp',
  label: 'TCP',
  summary: {
    libraries: 'node:net',
    image: 'the header then the image on a socket',
    ack: '12 bytes back',
  },
  traits: {
    baseline: true,
  },
  library: {
    packages: [],
  },
  deployment: {
    defaultRun: true,
    setting: { kind: 'port', envVar: 'TCP_PORT', defaultPort: 9000 },
  },
  connect,
  listen,
};
