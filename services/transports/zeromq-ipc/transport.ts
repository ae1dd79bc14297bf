import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { prepareSocketFile, removeSocketFile, requireSocketPath, restrictSocketFile } from '../kit/socket-file.js';
import { createDealer, listenRouter } from '../kit/zeromq-router.js';
import { connectOneSocket, zeromqLibrary } from '../kit/zeromq.js';

// The zeromq transport (Dealer → Router, [header, image], acks on the same socket pair, PLAIN
// checked by the ZAP door) over ipc://, a Unix-domain socket in SOCKET_DIR, which both services
// share on one host: the same library and messages without the network stack. libzmq would
// replace a socket file at bind, a live receiver's too: kit/socket-file.ts checks first, and
// makes the file 0600 once bound.

function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  const address = `ipc://${requireSocketPath(options, 'zeromq-ipc')}`;
  return connectOneSocket(options, createDealer, 'ZeroMQ ipc', 'zeromq-ipc', address);
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const socketPath = requireSocketPath(options, 'zeromq-ipc');
  await prepareSocketFile(socketPath, 'zeromq-ipc');
  return listenRouter(options, `ipc://${socketPath}`, 'zeromq-ipc', {
    bound: () => restrictSocketFile(socketPath),
    closed: () => removeSocketFile(socketPath),
  });
}

/** ZeroMQ over ipc:// in SOCKET_DIR: the zeromq transport without the network stack, same host only. */
export const zeromqIpcTransport: Transport = {
  name: 'zeromq-ipc',
  label: 'ZeroMQ ipc',
  summary: {
    libraries: 'zeromq',
    image: "`zeromq`'s Dealer → Router over `ipc://`, a socket file in `SOCKET_DIR` (same host only)",
    ack: 'on the same socket pair',
  },
  traits: {
    baseline: false,
    maxReceivers: { receivers: 1, why: "its one socket file in SOCKET_DIR is one receiver's" },
  },
  library: {
    packages: ['zeromq'],
    nativeVersions: () => ({ libzmq: zeromqLibrary().version }),
  },
  deployment: {
    defaultRun: false,
    setting: { kind: 'socket', envVar: 'SOCKET_DIR', fileName: 'zeromq-ipc.sock' },
  },
  connect,
  listen,
};
