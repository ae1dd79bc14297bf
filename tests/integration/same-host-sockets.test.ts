import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeHello, sectionCredential } from '../../services/core/wire/auth.js';
import { ErrorCode } from '../../services/core/errors.js';
import type { ReceiverListener, Transport } from '../../services/transports/contract.js';
import { unixTransport } from '../../services/transports/unix/transport.js';
import { zeromqIpcTransport } from '../../services/transports/zeromq-ipc/transport.js';
import { eventually, stampedHeader, TEST_AUTH_TOKEN, testDoor, testLog } from '../helpers/harness.js';

// What is PARTICULAR to the same-host transports (unix, zeromq-ipc); the shared suite
// (transports.test.ts) runs the contract over them. Here: the socket file and its directory (made
// 0700 when missing, refused when others can write it, the file 0600 while bound and gone after),
// a live receiver's file never taken over, a stale one replaced, a file of another kind left alone;
// and the door's credential, as on every other transport.

let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'itb-same-host-'));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

/** A listener of `transport` at `socketPath`, its door open for section 7; `delivered` hears each frame's seq. */
function listenAt(
  transport: Transport,
  socketPath: string,
  section = testDoor(transport.name, 7),
  delivered: number[] = [],
): Promise<ReceiverListener> {
  return transport.listen({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port: 0,
    url: undefined,
    socketPath,
    maxImageBytes: 1024 * 1024,
    log: testLog,
    door: section.door,
    idleTimeoutMs: section.idleTimeoutMs,
    deliver: (frame) => {
      delivered.push(frame.header.seq);
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' };
    },
    onReject() {},
  });
}

/** Leaves a socket file at `socketPath` that nothing listens on: its process was killed while it did. */
async function leaveStaleSocket(socketPath: string): Promise<void> {
  const child = spawn(
    process.execPath,
    ['-e', `require('node:net').createServer().listen(${JSON.stringify(socketPath)}, () => console.log('up'))`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the listener exited first (${code})`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

const mode = async (file: string): Promise<string> => ((await lstat(file)).mode & 0o777).toString(8);

describe.each([unixTransport, zeromqIpcTransport])('the %s socket file', (transport) => {
  const fileName = transport.deployment.setting.kind === 'socket' ? transport.deployment.setting.fileName : '';

  it('is made in a directory created 0700, is 0600 while bound, and is gone after close', async () => {
    const dir = path.join(base, 'fresh');
    const socketPath = path.join(dir, fileName);
    const listener = await listenAt(transport, socketPath);
    try {
      expect([await mode(dir), await mode(socketPath), (await lstat(socketPath)).isSocket()]).toEqual([
        '700',
        '600',
        true,
      ]);
    } finally {
      await listener.close();
    }
    await expect(lstat(socketPath)).rejects.toThrow(/ENOENT/);
  });

  it("never takes over a live receiver's file, and replaces one nobody listens on", async () => {
    const socketPath = path.join(base, fileName);
    const first = await listenAt(transport, socketPath);
    try {
      await expect(listenAt(transport, socketPath)).rejects.toThrow(
        `${transport.name} cannot listen at ${socketPath}: another receiver listens on it`,
      );
    } finally {
      await first.close();
    }
    // A receiver that died leaves its file behind: a process killed while it listened.
    await leaveStaleSocket(socketPath);
    expect((await lstat(socketPath)).isSocket()).toBe(true);
    const next = await listenAt(transport, socketPath);
    await next.close();
  });

  it('refuses a directory others can write, and leaves a file of another kind alone', async () => {
    const open = path.join(base, 'open');
    await mkdir(open, { mode: 0o700 });
    await chmod(open, 0o777);
    await expect(listenAt(transport, path.join(open, fileName))).rejects.toThrow(
      `${open} is writable by others (mode 777)`,
    );
    const plain = path.join(base, fileName);
    await writeFile(plain, 'not a socket');
    await expect(listenAt(transport, plain)).rejects.toThrow('a file that is not a socket is there; it is left alone');
    expect((await lstat(plain)).isFile()).toBe(true);
  });
});

describe('the door on a same-host socket', () => {
  it("unix: a hello with another section's credential is refused and closed, its frame never delivered", async () => {
    const socketPath = path.join(base, 'unix.sock');
    const section = testDoor('unix', 7);
    const delivered: number[] = [];
    const listener = await listenAt(unixTransport, socketPath, section, delivered);
    try {
      const stranger = net.connect({ path: socketPath });
      const closed = new Promise<void>((resolve) => stranger.once('close', () => resolve()));
      stranger.on('error', () => {});
      const image = randomBytes(100);
      stranger.write(encodeHello(sectionCredential(TEST_AUTH_TOKEN, 8)));
      stranger.write(stampedHeader(image, 0));
      stranger.write(image);
      await closed;
      await eventually(() => section.refusals.length === 1);
      expect(delivered).toEqual([]);
    } finally {
      await listener.close();
    }
  });

  it("zeromq-ipc: a link with another section's credential is refused by ZAP at connect", async () => {
    const socketPath = path.join(base, 'zeromq-ipc.sock');
    const listener = await listenAt(zeromqIpcTransport, socketPath);
    try {
      const outcome = await zeromqIpcTransport
        .connect({
          host: '127.0.0.1',
          bindHost: '127.0.0.1',
          port: 0,
          url: undefined,
          socketPath,
          maxImageBytes: 1024 * 1024,
          log: testLog,
          connectTimeoutMs: 3000,
          imageBytes: 1024,
          window: 1,
          credential: sectionCredential(TEST_AUTH_TOKEN, 8),
          onAck() {},
          onFailure() {},
        })
        .then(
          () => new Error('connect() resolved'),
          (err: unknown) => err,
        );
      expect(outcome).toMatchObject({ code: ErrorCode.refused });
    } finally {
      await listener.close();
    }
  });
});
