import { describe, expect, it } from 'vitest';
import { MAX_SOCKET_PATH_BYTES, parseSocketDir, socketPathIn } from '../../services/core/config/socket-dir.js';

describe('parseSocketDir', () => {
  it('takes an absolute directory whose socket files fit a Unix-domain socket path, normalised', () => {
    expect(parseSocketDir('/tmp/itb-sockets', 'unix.sock')).toBe('/tmp/itb-sockets');
    expect(parseSocketDir('/tmp//a/../b/', 'unix.sock')).toBe('/tmp/b');
    expect(parseSocketDir('/', 'unix.sock')).toBe('/');
    expect(socketPathIn('/', 'unix.sock')).toBe('/unix.sock');
  });

  it('refuses a relative path, a NUL, and a directory one byte too long for the file', () => {
    expect(parseSocketDir('sockets', 'unix.sock')).toBeUndefined();
    expect(parseSocketDir('/tmp/a\0b', 'unix.sock')).toBeUndefined();
    const fits = `/${'d'.repeat(MAX_SOCKET_PATH_BYTES - '/unix.sock'.length - 1)}`;
    expect(Buffer.byteLength(socketPathIn(fits, 'unix.sock'))).toBe(MAX_SOCKET_PATH_BYTES);
    expect(parseSocketDir(fits, 'unix.sock')).toBe(fits);
    expect(parseSocketDir(`${fits}d`, 'unix.sock')).toBeUndefined();
    // Bytes, not characters: a two-byte letter counts twice.
    expect(parseSocketDir(`${fits.slice(0, -1)}é`, 'unix.sock')).toBeUndefined();
  });
});
