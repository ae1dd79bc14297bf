import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import type { TransportEndpoint } from '../contract.js';

// The socket file of a same-host transport (unix, zeromq-ipc), in the directory SOCKET_DIR names,
// which both services share. The receiver makes it: the directory must be this user's and
// writable by nobody else (another user could swap the file), created 0700 when missing; a file
// left by a receiver that died is removed, one a live receiver listens on is refused; the socket
// is made 0600 once bound, and removed when the listener closes. A peer that could still reach the
// file in the instant between bind and chmod proves itself to the door like any other.

/** How long a probe of an existing socket file waits for an answer before calling it stale. */
const PROBE_TIMEOUT_MS = 500;

/** The endpoint's socket file, or an error saying the transport needs one. */
export function requireSocketPath(endpoint: Pick<TransportEndpoint, 'socketPath'>, transport: string): string {
  if (endpoint.socketPath === undefined || endpoint.socketPath === '')
    throw new ItbError(ErrorCode.config, `${transport} needs a socket file (SOCKET_DIR)`);
  return endpoint.socketPath;
}

// True when something accepts connections on the socket file at `socketPath`.
function listening(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.connect({ path: socketPath });
    const done = (live: boolean): void => {
      clearTimeout(timer);
      probe.destroy();
      resolve(live);
    };
    const timer = setTimeout(() => done(false), PROBE_TIMEOUT_MS);
    probe.once('connect', () => done(true));
    probe.once('error', () => done(false));
  });
}

/** Makes the directory ready and the path free for a listener to bind `socketPath`; throws why not. */
export async function prepareSocketFile(socketPath: string, transport: string): Promise<void> {
  const dir = path.dirname(socketPath);
  const refuse = (why: string): never => {
    throw new ItbError(ErrorCode.transport, `${transport} cannot listen at ${socketPath}: ${why}`);
  };
  await mkdir(dir, { recursive: true, mode: 0o700 }).catch((err: unknown) =>
    refuse(`cannot create ${dir} (${errorMessage(err)})`),
  );
  const dirStat = await lstat(dir);
  if (!dirStat.isDirectory()) refuse(`${dir} is not a directory (a link is not followed)`);
  const uid = process.getuid?.();
  if (uid !== undefined && dirStat.uid !== uid)
    refuse(`${dir} belongs to user ${dirStat.uid}, not this one (${uid}): its owner could replace the socket`);
  if ((dirStat.mode & 0o022) !== 0)
    refuse(
      `${dir} is writable by others (mode ${(dirStat.mode & 0o777).toString(8)}): they could replace the socket; ` +
        `chmod go-w ${dir}`,
    );
  const fileStat = await lstat(socketPath).catch(() => undefined);
  if (fileStat === undefined) return;
  if (!fileStat.isSocket()) refuse('a file that is not a socket is there; it is left alone');
  if (await listening(socketPath))
    refuse('another receiver listens on it (stop it, or give this one another SOCKET_DIR)');
  // Left by a receiver that is gone: nobody answers on it.
  await unlink(socketPath);
}

/** Once bound: the socket file is this user's alone. */
export function restrictSocketFile(socketPath: string): Promise<void> {
  return chmod(socketPath, 0o600);
}

/** At close: removes the socket file if it is still a socket (never another kind of file). */
export async function removeSocketFile(socketPath: string): Promise<void> {
  const fileStat = await lstat(socketPath).catch(() => undefined);
  if (fileStat?.isSocket()) await unlink(socketPath).catch(() => undefined);
}
