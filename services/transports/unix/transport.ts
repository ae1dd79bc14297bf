import type { ReceiverListener, ReceiverOptions, TransmitterLink, TransmitterOptions, Transport } from '../contract.js';
import { prepareSocketFile, removeSocketFile, requireSocketPath, restrictSocketFile } from '../kit/socket-file.js';
import { connectStream, listenStream } from '../kit/stream.js';

// The TCP baseline's wire (kit/stream.ts: a hello, then header and image per frame, 12-byte acks
// back) over a Unix-domain socket: the same bytes without the network stack, so the two side by
// side show what leaving it saves. The socket file is in SOCKET_DIR, which both services share on
// one host (under compose a volume only they mount); kit/socket-file.ts says how it is made safe.

function connect(options: TransmitterOptions): Promise<TransmitterLink> {
  return connectStream(options, { path: requireSocketPath(options, 'unix') }, 'Unix socket');
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const socketPath = requireSocketPath(options, 'unix');
  await prepareSocketFile(socketPath, 'unix');
  const listener = await listenStream(options, { path: socketPath }, 'unix', () => removeSocketFile(socketPath));
  try {
    await restrictSocketFile(socketPath);
  } catch (err) {
    await listener.close();
    throw err;
  }
  return listener;
}

/** The TCP baseline's framing over a Unix-domain socket in SOCKET_DIR: same host only. */
export const unixTransport: Transport = {
  name: 'unix',
  label: 'Unix socket',
  summary: {
    libraries: 'node:net',
    image: "`tcp`'s bytes over a Unix-domain socket file in `SOCKET_DIR` (same host only)",
    ack: '12 bytes back',
  },
  traits: {
    baseline: false,
    maxReceivers: { receivers: 1, why: "its one socket file in SOCKET_DIR is one receiver's" },
  },
  library: {
    packages: [],
  },
  deployment: {
    defaultRun: false,
    setting: { kind: 'socket', envVar: 'SOCKET_DIR', fileName: 'unix.sock' },
  },
  connect,
  listen,
};
