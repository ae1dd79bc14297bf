import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { ErrorCode, ItbError } from '../core/errors.js';
import { stopChild } from './child-process.js';

/** A private redis-server started for one run or one test, stopped with close(). */
export interface PrivateRedis {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Asks the OS for a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port from the OS');
  return address.port;
}

/**
 * Redis settings that let one image of the largest MAX_IMAGE_SIZE through: an XADD carries the
 * image as one bulk string (proto-max-bulk-len, 512 MB by default) inside one command
 * (client-query-buffer-limit, 1 GB by default). docker-compose.yml passes the same arguments.
 */
export const REDIS_IMAGE_LIMIT_ARGS: readonly string[] = ['--proto-max-bulk-len', '2gb', '--client-query-buffer-limit', '4gb'];

/**
 * Starts `redis-server` from PATH on a free loopback port, with no persistence and the limits of
 * {@link REDIS_IMAGE_LIMIT_ARGS}.
 * Rejects with ITB_ERR_TRANSPORT when there is no redis-server or it does not come up in time.
 */
export async function startPrivateRedis(options: { timeoutMs?: number } = {}): Promise<PrivateRedis> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...REDIS_IMAGE_LIMIT_ARGS, '--loglevel', 'warning', '--logfile', ''];
  let child: ChildProcess;
  try {
    child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    await Promise.race([once(child, 'spawn'), once(child, 'error').then(([err]) => Promise.reject(err))]);
  } catch (err) {
    throw new ItbError(ErrorCode.transport, `cannot start redis-server from PATH: ${(err as Error).message}`, { cause: err });
  }
  const stop = (): Promise<void> => stopChild(child, 3000);
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    if (await answersPing(port)) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new ItbError(ErrorCode.transport, `redis-server on port ${port} did not answer PING within ${options.timeoutMs ?? 10_000} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url: `redis://127.0.0.1:${port}`, port, close: stop };
}

async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}
