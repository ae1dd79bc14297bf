import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONTROL_CONNECTION_LIMITS, type ConnectionLimits } from '../../services/core/control/control-protocol.js';
import { type ConnectionGuard, type GuardClosure, guardConnections } from '../../services/shared/connection-guard.js';
import { ControlClient } from '../../services/transmitter/control-client.js';
import { eventually, TEST_AUTH_TOKEN, testLog } from '../helpers/harness.js';
import { runTransmitter, startReceiver } from '../helpers/in-process.js';

// The control port is open to anyone. An attacker's bursts of 1,000 concurrent GET /health once took every one of its
// 128 connections: the transmitter's GET /clock got "socket hang up" and the run ended incomplete, or its round trips'
// POST got "other side closed" and the section failed. The flood runs in a process of its own, as an attacker's would.

/**
 * Bursts of `clients` concurrent keep-alive clients, each sending GET /health after GET /health for `burstMs` and
 * reconnecting at once when cut, then a pause of `pauseMs`; until SIGTERM, then prints its counts.
 */
const FLOOD_SOURCE = `
const net = require('node:net');
const [port, clients, burstMs, pauseMs] = process.argv.slice(1).map(Number);
const counts = { bursts: 0, answered: 0, cut: 0 };
let stopping = false;
process.on('SIGTERM', () => { stopping = true; });
const REQUEST = 'GET /health HTTP/1.1\\r\\nHost: flood\\r\\n\\r\\n';
const client = (endAtMs) => new Promise((resolve) => {
  const connect = () => {
    if (Date.now() >= endAtMs) return resolve();
    const socket = net.connect(port, '127.0.0.1');
    let answered = false;
    socket.setTimeout(Math.max(1, endAtMs - Date.now()), () => socket.destroy());
    socket.on('connect', () => socket.write(REQUEST));
    socket.on('data', () => {
      answered = true;
      counts.answered++;
      if (Date.now() >= endAtMs) socket.destroy(); else socket.write(REQUEST);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (!answered) counts.cut++;
      setTimeout(connect, 10);
    });
  };
  connect();
});
(async () => {
  while (!stopping) {
    const endAtMs = Date.now() + burstMs;
    await Promise.all(Array.from({ length: clients }, () => client(endAtMs)));
    counts.bursts++;
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  process.stdout.write(JSON.stringify(counts));
})();
`;

interface FloodCounts {
  bursts: number;
  answered: number;
  cut: number;
}

/** Starts the flood on `port`; stop() ends it after its burst in progress and resolves with its counts. */
function flood(port: number, clients: number, burstMs: number, pauseMs: number): { stop: () => Promise<FloodCounts> } {
  const args = [port, clients, burstMs, pauseMs].map(String);
  const child: ChildProcess = spawn(process.execPath, ['-e', FLOOD_SOURCE, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    async stop() {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(killer);
      return JSON.parse(out === '' ? '{"bursts":0,"answered":0,"cut":0}' : out) as FloodCounts;
    },
  };
}

/** How many of `lines` (pino JSON) there are of each message and cause. */
function linesByCause(lines: readonly string[]): Record<string, number> {
  const byCause: Record<string, number> = {};
  for (const line of lines) {
    const { msg, why } = JSON.parse(line) as { msg?: string; why?: string };
    const cause = `${msg ?? '?'} (${why ?? '-'})`;
    byCause[cause] = (byCause[cause] ?? 0) + 1;
  }
  return byCause;
}

describe('control port under a flood of anonymous requests', () => {
  let outputDir: string;
  beforeAll(async () => {
    outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-control-flood-'));
  });
  afterAll(async () => {
    await rm(outputDir, { recursive: true, force: true });
  });

  it('lets the transmitter through: a RATE=40 run over tcp and websocket completes with every section ok, and the ' +
    'warnings stay a few lines a second', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => lines.push(line) });
    const { receiver, transmitterConfig } = await startReceiver(
      outputDir,
      { TRANSPORTS: 'tcp,websocket', RATE: '40', IMAGE_COUNT: '240', IMAGE_SIZE: '64KB', CONNECT_TIMEOUT_MS: '15000' },
      log,
    );
    const attack = flood(transmitterConfig.controlPort, 1000, 3000, 100);
    const startedAtMs = Date.now();
    let counts: FloodCounts | undefined;
    try {
      const outcome = await runTransmitter(transmitterConfig);
      counts = await attack.stop();
      const elapsedS = (Date.now() - startedAtMs) / 1000;
      const sections = outcome.report.sections.map((s) => ({ transport: s.transport, ok: s.ok, failure: s.failure }));
      expect(sections, JSON.stringify({ counts, stopReason: outcome.report.stopReason })).toEqual([
        { transport: 'tcp', ok: true, failure: null },
        { transport: 'websocket', ok: true, failure: null },
      ]);
      expect(outcome.succeeded).toBe(true);
      // The flood was one: whole bursts went on throughout the run, and the port cut some of its connections.
      expect(counts.bursts).toBeGreaterThanOrEqual(2);
      expect(counts.answered + counts.cut).toBeGreaterThanOrEqual(2000);
      // At most one line per cause per second (and the first at once), each with its count, not one per connection.
      const connectionLines = lines.filter((line) => line.includes('control connection'));
      const byCause = linesByCause(connectionLines);
      expect(Object.keys(byCause).length, JSON.stringify(byCause)).toBeGreaterThan(0);
      for (const count of Object.values(byCause))
        expect(count, JSON.stringify(byCause)).toBeLessThanOrEqual(Math.ceil(elapsedS) + 2);
      expect(connectionLines.every((line) => /"count":\d+/.test(line))).toBe(true);
    } finally {
      await (counts === undefined ? attack.stop() : undefined);
      await receiver.close();
    }
  }, 180_000);
});

// The same, without a flood's timing: every connection the port keeps for anonymous clients held by a stream (GET
// /events) that never ends. The port once refused every new connection then, the transmitter's too.
describe('control port with every anonymous connection busy', () => {
  const STREAMS = 6;
  let outputDir: string;
  beforeAll(async () => {
    outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-control-busy-'));
  });
  afterAll(async () => {
    await rm(outputDir, { recursive: true, force: true });
  });

  /** A GET /events stream on a socket of its own, once its answer has begun (or the port closed it). */
  async function stream(port: number): Promise<net.Socket> {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write('GET /events HTTP/1.1\r\nHost: busy\r\n\r\n');
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no answer to GET /events within 10 s')), 10_000);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      socket.once('data', done);
      socket.once('close', done);
    });
    return socket;
  }

  it("lets the transmitter in, and keeps it in while new streams take the others' places", async () => {
    const limits: Readonly<ConnectionLimits> = { ...CONTROL_CONNECTION_LIMITS, maxConnections: STREAMS };
    const { receiver, transmitterConfig } = await startReceiver(outputDir, { TRANSPORTS: 'tcp' }, testLog, limits);
    const sockets: net.Socket[] = [];
    const control = new ControlClient('127.0.0.1', transmitterConfig.controlPort, 5000, 5000);
    control.authorize(TEST_AUTH_TOKEN);
    try {
      for (let i = 0; i < STREAMS; i++) sockets.push(await stream(transmitterConfig.controlPort));
      expect(sockets.every((socket) => !socket.destroyed)).toBe(true);
      // Full of streams: the transmitter's connection closes the oldest of them to get in.
      expect((await control.clockSample()).receiverNs).toBeGreaterThan(0n);
      await eventually(() => sockets[0]!.destroyed, 5000);
      // The client's kept-alive socket (its agent is private: read here only to watch that one socket).
      const agent = (control as unknown as { agent: http.Agent }).agent;
      const kept = Object.values(agent.freeSockets).flat();
      expect(kept).toHaveLength(1);
      // New streams close older ones, never the transmitter's kept-alive connection, which showed AUTH_TOKEN.
      for (let i = 0; i < STREAMS; i++) sockets.push(await stream(transmitterConfig.controlPort));
      await eventually(() => sockets.filter((socket) => !socket.destroyed).length === STREAMS, 5000);
      expect(kept[0]!.destroyed).toBe(false);
      expect((await control.clockSample()).receiverNs).toBeGreaterThan(0n);
      expect(Object.values(agent.freeSockets).flat()).toEqual(kept);
    } finally {
      control.close();
      for (const socket of sockets) socket.destroy();
      await receiver.close();
    }
  });
});

/** A keep-alive client on a raw socket: one request at a time, its answer's status. */
class RawClient {
  closed = false;
  private readonly socket: net.Socket;
  private readonly connected: Promise<void>;
  private answered: ((status: number) => void) | undefined;

  constructor(port: number) {
    this.socket = net.connect(port, '127.0.0.1');
    this.connected = new Promise((resolve) => this.socket.once('connect', () => resolve()));
    this.socket.on('data', (chunk: Buffer) => this.answered?.(Number(/^HTTP\/1\.1 (\d+)/.exec(chunk.toString())?.[1])));
    this.socket.on('error', () => undefined);
    this.socket.on('close', () => {
      this.closed = true;
      this.answered?.(0);
    });
  }

  /** Sends GET `route` (with `token` as its bearer when given); its status, 0 when the connection closed first. */
  async request(route: string, token?: string): Promise<number> {
    await this.connected;
    const answer = new Promise<number>((resolve) => {
      this.answered = resolve;
    });
    const authorization = token === undefined ? '' : `Authorization: Bearer ${token}\r\n`;
    this.socket.write(`GET ${route} HTTP/1.1\r\nHost: guard\r\n${authorization}\r\n`);
    return answer;
  }

  /** Sends a request head and no more: the request stays under way until the server answers it. */
  async hold(): Promise<void> {
    await this.connected;
    this.socket.write('GET /hold HTTP/1.1\r\nHost: guard\r\n\r\n');
  }

  close(): void {
    this.socket.destroy();
  }
}

// The guard's choices, on a plain HTTP server with a cap of 4 anonymous connections, 3 waiting ones and 2 trusted.
describe('control connection guard', () => {
  const TOKEN = 's3cret';
  const limits: Readonly<ConnectionLimits> = {
    waitingConnections: 3,
    maxConnections: 4,
    trustedConnections: 2,
    headersTimeoutMs: 30_000,
    keepAliveTimeoutMs: 30_000,
    requestTimeoutMs: 60_000,
  };
  let server: http.Server;
  let guard: ConnectionGuard;
  let port: number;
  const closures: GuardClosure[] = [];
  const clients: RawClient[] = [];
  const held: http.ServerResponse[] = [];
  /** A client connected and seen by the server (the guard has judged its arrival), within 5 s. */
  const arrive = async (): Promise<RawClient> => {
    let timer: NodeJS.Timeout | undefined;
    const seen = new Promise<void>((resolve, reject) => {
      server.once('connection', () => setImmediate(resolve));
      timer = setTimeout(() => reject(new Error('the server never saw the connection')), 5000);
    });
    const client = new RawClient(port);
    clients.push(client);
    await seen.finally(() => clearTimeout(timer));
    return client;
  };

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      if (request.url === '/hold') held.push(response);
      else response.end('ok');
    });
    guard = guardConnections(server, limits, (_peer, why) => closures.push(why), {
      trusts: (request) => request.headers.authorization === `Bearer ${TOKEN}`,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  /** Connections the server holds now. */
  const connectionsHeld = (): Promise<number> =>
    new Promise((resolve, reject) => server.getConnections((err, count) => (err ? reject(err) : resolve(count))));
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    for (const response of held.splice(0)) response.end('ok');
    const deadline = Date.now() + 10_000;
    while ((await connectionsHeld()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(guard.waiting() + guard.trusted()).toBe(0);
    closures.length = 0;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('never closes a connection that showed the secret: 20 arrivals at the cap close anonymous ones only', async () => {
    const transmitter = await arrive();
    expect(await transmitter.request('/', TOKEN)).toBe(200);
    expect(guard.trusted()).toBe(1);
    // The anonymous cap full of requests under way, and the transmitter's connection idle beside them.
    const busy: RawClient[] = [];
    for (let i = 1; i <= limits.maxConnections; i++) {
      busy.push(await arrive());
      await busy.at(-1)!.hold();
      await eventually(() => held.length === i);
    }
    // Each arrival is let in: the first closes the oldest busy one, each later one the one before it, idle by then.
    for (let i = 0; i < 20; i++) expect(await (await arrive()).request('/')).toBe(200);
    expect(closures).toEqual(Array(20).fill('closed to make room for a newer connection'));
    expect(busy.map((c) => c.closed)).toEqual([true, false, false, false]);
    expect(transmitter.closed).toBe(false);
    expect(await transmitter.request('/', TOKEN)).toBe(200);
  });

  it('at the cap, closes an idle connection before a busy one, and a busy one before a new one', async () => {
    const idle = await arrive();
    expect(await idle.request('/')).toBe(200);
    const busy = [await arrive(), await arrive()];
    for (const client of busy) await client.hold();
    await eventually(() => held.length === 2);
    const fresh = await arrive();
    // Full: the next arrival closes the idle one (it was served) and is served itself.
    const next = await arrive();
    await eventually(() => idle.closed);
    expect(await next.request('/')).toBe(200);
    // Full again, with `next` idle: it goes first, then the oldest busy one, never the new one.
    await arrive();
    await eventually(() => next.closed);
    await arrive();
    await eventually(() => busy[0]!.closed);
    expect(busy[1]!.closed).toBe(false);
    expect(fresh.closed).toBe(false);
    expect(closures).toEqual(Array(3).fill('closed to make room for a newer connection'));
  });

  it('keeps the bound on waiting connections by closing an idle one before a new one', async () => {
    const idle = await arrive();
    expect(await idle.request('/')).toBe(200);
    const fresh = [await arrive(), await arrive()];
    expect(guard.waiting()).toBe(3);
    await arrive();
    await eventually(() => idle.closed);
    expect(fresh.some((c) => c.closed)).toBe(false);
    expect(closures).toEqual(['pushed out by a newer waiting connection']);
  });

  it('trusts no more connections than its reserve: the next one with the secret is anonymous', async () => {
    const trusted = [await arrive(), await arrive(), await arrive()];
    for (const client of trusted) expect(await client.request('/', TOKEN)).toBe(200);
    expect(guard.trusted()).toBe(limits.trustedConnections);
    expect(guard.waiting()).toBe(1);
  });
});
