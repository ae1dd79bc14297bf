import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { errorMessage } from '../../services/core/errors.js';
import { stopChild } from '../../services/shared/child-process.js';
import { freePort } from '../../services/shared/net.js';
import { withTimeout } from '../../services/shared/waits.js';
import { loadImage } from '../../services/shared/images.js';
import { ceilingFor } from './index.js';
import type { ReceiverReport } from './drive.js';
import { arrivalClock, receiveOptions, runSender, type CeilingRunOptions } from './run.js';

// `node dist/scripts/ceiling/main.js <transport> --bytes=N --count=N --window=N --warmup=N
// [--broker-url=URL]`: one ceiling run in two processes, as the suite runs transmitter and
// receiver: this process sends, a child of it (this file with --receive) receives. Prints one JSON
// line: the figures, or {"failed": reason} (exit 1). The bench runs it (scripts/lib/ceiling-run.ts).
// The child stamps arrivals on the host's one monotonic clock; once every image is acknowledged
// the parent writes `last-arrival` on its stdin and reads the latest timed stamp back, where the
// run's span ends (as the suite's ends at its last arrival), with the child's CPU since its first
// timed arrival (as the suite's receiver counts its own, to the last ack).

const START_TIMEOUT_MS = 15_000;
const ACK_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 2000;

interface Args {
  transport: string;
  bytes: number;
  count: number;
  window: number;
  warmup: number;
  brokerUrl: string | undefined;
  receive: { port: number; channel: string } | undefined;
}

function parseArgs(argv: readonly string[]): Args {
  const value = (name: string): string | undefined =>
    argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const whole = (name: string, fallback?: number): number => {
    const text = value(name);
    const parsed = text === undefined ? fallback : Number(text);
    if (parsed === undefined || !Number.isInteger(parsed) || parsed < 0)
      throw new Error(`--${name}=${text ?? ''}: expected a whole number`);
    return parsed;
  };
  const transport = argv.find((a) => !a.startsWith('--'));
  if (transport === undefined)
    throw new Error('usage: main.js <transport> --bytes=N --count=N --window=N --warmup=N [--broker-url=URL]');
  const receivePort = value('receive-port');
  return {
    transport,
    bytes: whole('bytes'),
    count: receivePort === undefined ? whole('count') : 0,
    window: Math.max(1, whole('window', 1)),
    warmup: whole('warmup', 0),
    brokerUrl: value('broker-url'),
    receive:
      receivePort === undefined ? undefined : { port: Number(receivePort), channel: value('channel') ?? 'itb-ceiling' },
  };
}

/** The line the parent writes on the child's stdin to ask for the latest timed arrival stamp. */
const LAST_ARRIVAL_REQUEST = 'last-arrival';

/**
 * The child: the receiver side until stdin closes (its parent went away) or SIGTERM; answers each LAST_ARRIVAL_REQUEST
 * with {"lastArrivalNs": "<ns>" | null, "receiverCpuMs": <ms> | null}.
 */
async function receiveUntilStopped(args: Args & { receive: NonNullable<Args['receive']> }): Promise<void> {
  const pair = await ceilingFor(args.transport);
  const image = Buffer.alloc(args.bytes);
  const clock = arrivalClock(args.warmup);
  const receiver = await withTimeout(
    pair.receive(
      receiveOptions(
        { host: '127.0.0.1', port: args.receive.port, brokerUrl: args.brokerUrl, channel: args.receive.channel, image },
        clock,
      ),
    ),
    START_TIMEOUT_MS,
    `${args.transport} ceiling: the receiver did not start`,
  );
  process.stdout.write(`${JSON.stringify({ ready: receiver.port })}\n`);
  const stop = (): void => void receiver.close().finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.stdin.once('end', stop);
  createInterface({ input: process.stdin }).on('line', (line) => {
    // A bigint has no JSON form: the stamp travels as its decimal text.
    if (line.trim() === LAST_ARRIVAL_REQUEST) {
      const answer = {
        lastArrivalNs: clock.lastArrivalNs()?.toString() ?? null,
        receiverCpuMs: clock.cpuMsSinceFirstArrival(),
      };
      process.stdout.write(`${JSON.stringify(answer)}\n`);
    }
  });
}

/** The parent: starts the receiver child, sends, prints the figures. */
async function send(args: Args): Promise<void> {
  const pair = await ceilingFor(args.transport);
  const { bytes: image } = await loadImage({ imageSizeBytes: args.bytes, imagePath: undefined });
  const run: CeilingRunOptions = {
    image,
    count: args.count,
    window: args.window,
    warmup: args.warmup,
    ackTimeoutMs: ACK_TIMEOUT_MS,
    host: '127.0.0.1',
    port: await freePort(),
    brokerUrl: args.brokerUrl,
    channel: `itb-ceiling-${randomBytes(6).toString('hex')}`,
    startTimeoutMs: START_TIMEOUT_MS,
  };
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      args.transport,
      `--bytes=${args.bytes}`,
      `--warmup=${args.warmup}`,
      `--receive-port=${run.port}`,
      `--channel=${run.channel}`,
      ...(args.brokerUrl ? [`--broker-url=${args.brokerUrl}`] : []),
    ],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  try {
    const lines = createInterface({ input: child.stdout! });
    const exited = new Promise<never>((_resolve, reject) =>
      child.once('exit', (code) => reject(new Error(`the receiver process exited (${code})`))),
    );
    exited.catch(() => undefined);
    const ready = new Promise<number>((resolve) => {
      lines.on('line', (line) => {
        const port = (JSON.parse(line) as { ready?: number }).ready;
        if (port !== undefined) resolve(port);
      });
    });
    const receiverReport = async (): Promise<ReceiverReport> => {
      const answer = new Promise<ReceiverReport>((resolve) => {
        const onLine = (line: string): void => {
          const record = JSON.parse(line) as { lastArrivalNs?: string | null; receiverCpuMs?: number | null };
          if (record.lastArrivalNs === undefined) return;
          lines.off('line', onLine);
          resolve({
            lastArrivalNs: record.lastArrivalNs === null ? undefined : BigInt(record.lastArrivalNs),
            receiverCpuMs: record.receiverCpuMs ?? null,
          });
        };
        lines.on('line', onLine);
      });
      child.stdin!.write(`${LAST_ARRIVAL_REQUEST}\n`);
      return withTimeout(
        Promise.race([answer, exited]),
        START_TIMEOUT_MS,
        'the receiver process, for its last arrival',
      );
    };
    const started = Promise.race([ready, exited]);
    let figures: Awaited<ReturnType<typeof runSender>>;
    if (pair.senderListens) {
      [figures] = await Promise.all([
        runSender(pair, run, receiverReport),
        withTimeout(started, START_TIMEOUT_MS, 'the receiver process'),
      ]);
    } else {
      const port = await withTimeout(started, START_TIMEOUT_MS, 'the receiver process');
      figures = await runSender(pair, { ...run, port }, receiverReport);
    }
    process.stdout.write(`${JSON.stringify({ transport: args.transport, ...figures })}\n`);
  } finally {
    child.stdin?.end();
    await stopChild(child, STOP_GRACE_MS);
  }
}

try {
  const args = parseArgs(process.argv.slice(2));
  if (args.receive) await receiveUntilStopped({ ...args, receive: args.receive });
  else {
    await send(args);
    process.exit(0);
  }
} catch (err) {
  process.stdout.write(`${JSON.stringify({ failed: errorMessage(err) })}\n`);
  process.exit(1);
}
