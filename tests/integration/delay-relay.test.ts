import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startDelayRelay, type DelayRelay } from '../../scripts/lib/delay-relay.js';
import { boundPort } from '../../services/shared/net.js';
import { eventually } from '../helpers/harness.js';
import { activeResources, leakedResources } from '../helpers/handles.js';

// The bench's stand-in for NETWORK_DELAY (scripts/lib/delay-relay.ts) over real loopback sockets: bytes cross intact
// and in order, a round trip takes at least twice the delay, ends and errors cross, and a side that stops reading
// pauses the other instead of letting the relay buffer without bound. Times are asserted as mechanisms (a lower bound
// the relay guarantees, an upper one only generous), so a loaded machine cannot fail them.

const MIB = 1024 * 1024;
const sha256 = (data: Buffer | Buffer[]): string =>
  createHash('sha256')
    .update(Array.isArray(data) ? Buffer.concat(data) : data)
    .digest('hex');

const opened: { close(): Promise<void> | void }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((each) => each.close()));
});

/** A target server on a free loopback port, half-open allowed, closed after the test. */
async function target(onConnection: (socket: net.Socket) => void): Promise<{ port: number; sockets: net.Socket[] }> {
  const sockets: net.Socket[] = [];
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    onConnection(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  opened.push({
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  });
  return { port: boundPort(server.address()), sockets };
}

async function relayTo(port: number, delayMs: number, maxQueuedBytes?: number): Promise<DelayRelay> {
  const relay = await startDelayRelay({
    targetHost: '127.0.0.1',
    targetPort: port,
    delayMs,
    ...(maxQueuedBytes === undefined ? {} : { maxQueuedBytes }),
  });
  opened.push(relay);
  return relay;
}

/** A client of `relay`, half-open allowed, destroyed after the test. */
async function dial(relay: DelayRelay): Promise<net.Socket> {
  const socket = net.connect({ host: relay.host, port: relay.port, allowHalfOpen: true });
  opened.push({ close: () => void socket.destroy() });
  await once(socket, 'connect');
  return socket;
}

/** The errors `socket` emits until it closes (events.once would reject on the first one instead). */
function errorsUntilClose(socket: net.Socket): Promise<(string | undefined)[]> {
  const codes: (string | undefined)[] = [];
  socket.on('error', (err: NodeJS.ErrnoException) => codes.push(err.code));
  return new Promise((resolve) => socket.on('close', () => resolve(codes)));
}

/** Everything `socket` reads until its end. */
async function readAll(socket: net.Socket): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await once(socket, 'end');
  return chunks;
}

describe('delay relay', () => {
  it('carries 20 MiB each way intact and in order through a 2 ms delay, and counts every byte', async () => {
    const before = activeResources();
    // The target echoes what it reads and ends when its reader ends: both directions, and the ends, cross.
    const { port } = await target((socket) => socket.pipe(socket));
    const relay = await relayTo(port, 2);
    const client = await dial(relay);
    const sent = randomBytes(20 * MIB);
    const echoed = readAll(client);
    // Writes of uneven sizes, so chunk boundaries on the way differ from the writes'.
    for (let offset = 0, step = 1; offset < sent.length; step = (step * 7919) % 300_000) {
      client.write(sent.subarray(offset, offset + step + 1));
      offset += step + 1;
    }
    client.end();
    const received = await echoed;
    expect(sha256(received)).toBe(sha256(sent));
    const stats = relay.stats();
    expect(stats.connections).toBe(1);
    expect(stats.toTarget.bytes).toBe(sent.length);
    expect(stats.toClient.bytes).toBe(sent.length);
    expect(stats.toTarget.chunks).toBeGreaterThan(0);
    expect(stats.toTarget.maxLatenessMs).toBeGreaterThanOrEqual(0);
    expect(stats.toTarget.pauses).toBe(0);
    await once(client, 'close');
    await relay.close();
    await relay.close();
    for (const each of opened.splice(0).reverse()) await each.close();
    expect(await leakedResources(before)).toEqual([]);
  }, 60_000);

  it('makes each ping-pong round trip through a relay of D ms take at least 2·D', async () => {
    const delayMs = 25;
    const { port } = await target((socket) => socket.on('data', (chunk: Buffer) => socket.write(chunk)));
    const relay = await relayTo(port, delayMs);
    const client = await dial(relay);
    const roundTripsMs: number[] = [];
    for (let ping = 0; ping < 10; ping++) {
      const startedNs = process.hrtime.bigint();
      const answered = once(client, 'data');
      client.write(Buffer.from([ping]));
      const [chunk] = (await answered) as [Buffer];
      roundTripsMs.push(Number(process.hrtime.bigint() - startedNs) / 1e6);
      expect(chunk).toEqual(Buffer.from([ping]));
    }
    // The delay is a floor the relay guarantees each way; the ceiling only says nothing got stuck.
    for (const roundTripMs of roundTripsMs) {
      expect(roundTripMs).toBeGreaterThanOrEqual(2 * delayMs);
      expect(roundTripMs).toBeLessThan(2 * delayMs + 1000);
    }
    const stats = relay.stats();
    expect([stats.toTarget.chunks, stats.toClient.chunks]).toEqual([10, 10]);
  });

  it('forwards a half-close after the data before it, and the answer sent after it', async () => {
    const delayMs = 20;
    let targetEndedAfterMs = 0;
    let targetRead = '';
    const dialledAt = process.hrtime.bigint();
    const { port } = await target((socket) => {
      socket.setEncoding('utf8');
      socket.on('data', (text: string) => (targetRead += text));
      socket.on('end', () => {
        targetEndedAfterMs = Number(process.hrtime.bigint() - dialledAt) / 1e6;
        // Still writable after the client's FIN: its answer must cross back, then its own end.
        socket.end(`got ${targetRead}`);
      });
    });
    const relay = await relayTo(port, delayMs);
    const client = await dial(relay);
    const answer = readAll(client);
    client.write('hello');
    client.end();
    expect(Buffer.concat(await answer).toString()).toBe('got hello');
    expect(targetEndedAfterMs).toBeGreaterThanOrEqual(delayMs);
    await once(client, 'close');
  });

  it('closes the client when the target closes, and resets it when the target resets', async () => {
    let mode: 'close' | 'reset' = 'close';
    const { port } = await target((socket) => {
      socket.write('bye');
      if (mode === 'close') socket.end();
      else setTimeout(() => socket.resetAndDestroy(), 50);
    });
    const relay = await relayTo(port, 5);
    const closing = await dial(relay);
    expect(Buffer.concat(await readAll(closing)).toString()).toBe('bye');
    closing.end();
    expect(await errorsUntilClose(closing)).toEqual([]);

    mode = 'reset';
    const resetting = await dial(relay);
    expect(await errorsUntilClose(resetting)).toEqual(['ECONNRESET']);
  });

  it('resets the client when the target cannot be reached', async () => {
    const { port } = await target(() => {});
    // A port nothing listens on: the target server's, closed.
    await opened.pop()?.close();
    const relay = await relayTo(port, 1);
    const client = await dial(relay);
    expect(await errorsUntilClose(client)).toEqual(['ECONNRESET']);
  });

  it('pauses the sender while the target does not read, ' +
    'keeping its queue bounded, and resumes when it does', async () => {
    const maxQueuedBytes = 2 * MIB;
    const received: Buffer[] = [];
    let reader: net.Socket | undefined;
    const { port } = await target((socket) => {
      reader = socket;
      socket.pause();
    });
    const relay = await relayTo(port, 1, maxQueuedBytes);
    const client = await dial(relay);
    // Far more than the kernel's socket buffers on both hops hold (a few MiB each), so the rest must wait somewhere.
    const sent = randomBytes(96 * MIB);
    // Not 'drain': a stream that was ended emits 'finish' once its last byte is handed over, and no 'drain'.
    let finished = false;
    client.on('finish', () => (finished = true));
    expect(client.write(sent)).toBe(false);
    client.end();
    await eventually(() => relay.stats().toTarget.pauses > 0, 20_000);
    // A while later the sender still holds back most of it: nothing drained it into the relay.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(finished).toBe(false);
    expect(client.writableLength).toBeGreaterThan(32 * MIB);
    // The bound, plus what was read before the pause took hold (one read of the socket, a few hundred KiB at most).
    expect(relay.stats().toTarget.peakQueuedBytes).toBeLessThanOrEqual(maxQueuedBytes + MIB);
    // The target reads: everything crosses intact, and the sender drains.
    const all = new Promise<void>((resolve) => {
      reader!.on('data', (chunk: Buffer) => received.push(chunk));
      reader!.on('end', resolve);
    });
    reader!.resume();
    await all;
    expect(finished).toBe(true);
    expect(sha256(received)).toBe(sha256(sent));
    expect(relay.stats().toTarget.peakQueuedBytes).toBeLessThanOrEqual(maxQueuedBytes + MIB);
  }, 60_000);
});
