import path from 'node:path';

// SOCKET_DIR: the directory both services share for the same-host transports' socket files
// (unix, zeromq-ipc). Pure: what a valid value is, and where each socket file goes in it.

/** Longest path a Unix-domain socket may bind on Linux: sun_path holds 108 bytes, the last a NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Where SOCKET_DIR points when unset: `npm start` runs both services on this host. */
export const DEFAULT_SOCKET_DIR = '/tmp/itb-sockets';

/** The socket file `fileName` in `dir`. */
export function socketPathIn(dir: string, fileName: string): string {
  return path.posix.join(dir, fileName);
}

/** What SOCKET_DIR allows, given the longest socket file name that goes in it. */
export function socketDirAllowed(longestFileName: string): string {
  const room = MAX_SOCKET_PATH_BYTES - Buffer.byteLength(`/${longestFileName}`);
  return (
    `an absolute directory path of at most ${room} bytes (its socket files, e.g. ${longestFileName}, must fit the ` +
    `${MAX_SOCKET_PATH_BYTES} bytes a Unix-domain socket path may have)`
  );
}

/** The directory, normalised, when `raw` is a valid SOCKET_DIR for files up to `longestFileName`; else undefined. */
export function parseSocketDir(raw: string, longestFileName: string): string | undefined {
  if (!path.posix.isAbsolute(raw) || raw.includes('\0')) return undefined;
  const dir = path.posix.normalize(raw).replace(/(.)\/$/, '$1');
  return Buffer.byteLength(socketPathIn(dir, longestFileName)) <= MAX_SOCKET_PATH_BYTES ? dir : undefined;
}
