import { execFile, spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorMessage } from '../../services/core/errors.js';
import { freePort } from '../../services/shared/net.js';

// The loopback's own ceiling, measured in the same minute as the transports: what this kernel moves
// from one process to another over 127.0.0.1 with nothing on top. Two references:
// - a node:net pair, two processes as the suite's two services are, the sender writing 4 MiB
//   buffers as fast as the socket takes them (waiting for 'drain'), the sink discarding;
// - iperf3 (Debian's `iperf3`), the kernel-level reference in C, when it is on PATH.
// MB/s are 10^6 bytes a second, as the suite's.

const WRITE_BYTES = 4 * 1024 * 1024;
/** How long each reference sends unless told otherwise. */
const DURATION_MS = 3000;
/** Bound on each reference, start to answer. */
const TIMEOUT_MS = 30_000;

/** The loopback's figures in one measurement; iperf3's null when it is not installed, or failed (with why). */
export interface LoopbackFigures {
  nodeNetMBps: number | null;
  iperf3MBps: number | null;
  problems: string[];
}

/** Resolves with the child's first stdout line, or rejects after `timeoutMs`. */
function firstLine(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const end = text.indexOf('\n');
      if (end >= 0) {
        clearTimeout(timer);
        resolve(text.slice(0, end));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before answering`));
    });
  });
}

/** MB/s of the node:net pair; see the module comment. */
async function nodeNetMBps(durationMs: number): Promise<number> {
  const sinkPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'loopback-sink.js');
  const sink = spawn(process.execPath, [sinkPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = Number(await firstLine(sink, TIMEOUT_MS));
    const socket = net.connect({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const buffer = Buffer.alloc(WRITE_BYTES, 0x5a);
    let sentBytes = 0;
    const startNs = process.hrtime.bigint();
    const endNs = startNs + BigInt(durationMs) * 1_000_000n;
    while (process.hrtime.bigint() < endNs) {
      sentBytes += buffer.length;
      if (!socket.write(buffer)) await new Promise((resolve) => socket.once('drain', resolve));
    }
    const answer = new Promise<string>((resolve, reject) => {
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.once('end', () => resolve(text.trim()));
      socket.once('error', reject);
    });
    socket.end();
    const receivedBytes = Number(await answer);
    const elapsedS = Number(process.hrtime.bigint() - startNs) / 1e9;
    if (receivedBytes !== sentBytes) throw new Error(`the sink read ${receivedBytes} of ${sentBytes} bytes`);
    return receivedBytes / 1e6 / elapsedS;
  } finally {
    sink.kill();
  }
}

/** MB/s iperf3 measures over 127.0.0.1 in `durationMs` (its receiver's figure; whole seconds, at least one). */
async function iperf3MBps(durationMs: number): Promise<number> {
  const port = await freePort();
  const server = spawn(
    'iperf3',
    ['--server', '--one-off', '--forceflush', '--bind', '127.0.0.1', '--port', String(port)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  try {
    await firstLine(server, TIMEOUT_MS);
    const seconds = String(Math.max(1, Math.round(durationMs / 1000)));
    const report = await new Promise<string>((resolve, reject) =>
      execFile(
        'iperf3',
        ['--client', '127.0.0.1', '--port', String(port), '--time', seconds, '--json'],
        { timeout: TIMEOUT_MS },
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      ),
    );
    const bitsPerSecond = (JSON.parse(report) as { end?: { sum_received?: { bits_per_second?: number } } }).end
      ?.sum_received?.bits_per_second;
    if (typeof bitsPerSecond !== 'number') throw new Error('iperf3 gave no sum_received');
    return bitsPerSecond / 8 / 1e6;
  } finally {
    server.kill();
  }
}

/** Whether `command` is on PATH. */
function onPath(command: string): Promise<boolean> {
  return new Promise((resolve) => execFile('sh', ['-c', `command -v ${command}`], (err) => resolve(err === null)));
}

/** Both references, one after the other; a reference that fails is null, with its reason in problems. */
export async function measureLoopback(durationMs = DURATION_MS): Promise<LoopbackFigures> {
  const problems: string[] = [];
  const nodeNet = await nodeNetMBps(durationMs).catch((err: unknown) => {
    problems.push(`node:net pair: ${errorMessage(err)}`);
    return null;
  });
  let iperf3: number | null = null;
  if (await onPath('iperf3'))
    iperf3 = await iperf3MBps(durationMs).catch((err: unknown) => {
      problems.push(`iperf3: ${errorMessage(err)}`);
      return null;
    });
  else problems.push('iperf3 is not installed (Debian: apt-get install iperf3): the node:net pair alone');
  return { nodeNetMBps: nodeNet, iperf3MBps: iperf3, problems };
}
