import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/shared/net.js';
import type { LocalServer } from '../../services/transports/contract.js';
import { transports } from '../../services/transports/index.js';
import type { CeilingPair } from '../../services/transports/ceiling-contract.js';
import { ceilingFor, ceilings } from '../../scripts/ceiling/index.js';
import { runInProcess, type CeilingRunOptions } from '../../scripts/ceiling/run.js';
import { tcpCeiling } from '../../services/transports/tcp/ceiling.js';

// Every ceiling pair over real sockets (and a private Redis or NATS server for those that go
// through one): a few images must arrive intact, each once, and be acknowledged. A pair that
// moves nothing fails here, and the runner reports it failed rather than measured.

const servers = new Map<string, Promise<LocalServer>>();
afterAll(async () => {
  await Promise.all([...servers.values()].map(async (server) => (await server).close()));
});

/**
 * The broker a transport goes through: one private server per command (redis-server, nats-server) for the whole file.
 */
async function brokerUrl(transport: string): Promise<string | undefined> {
  const local = transports.find((t) => t.name === transport)?.deployment.localServer;
  if (!local) return undefined;
  let server = servers.get(local.command);
  if (!server) {
    server = local.start();
    servers.set(local.command, server);
  }
  return (await server).url;
}

/** An image whose every byte differs from its neighbours', so a shifted or truncated copy is caught. */
function patterned(bytes: number): Buffer {
  const image = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) image[i] = (i * 31 + (i >> 8)) & 0xff;
  return image;
}

async function options(transport: string, image: Buffer, count: number, window: number): Promise<CeilingRunOptions> {
  return {
    image,
    count,
    window,
    warmup: 2,
    ackTimeoutMs: 5000,
    host: '127.0.0.1',
    // Two: a pair may bind the port after it too (zeromq-pubsub's acks).
    port: await freePort(2),
    brokerUrl: await brokerUrl(transport),
    channel: `itb-ceiling-test-${transport}-${image.length}`,
    startTimeoutMs: 10_000,
  };
}

const pairs = await ceilings();

describe('the ceiling table', () => {
  it('has one pair for every transport of the table, under its name, in its order', () => {
    expect(pairs.map((c) => c.transport)).toEqual(transports.map((t) => t.name));
    for (const pair of pairs) expect(pair.how.length, pair.transport).toBeGreaterThan(10);
    expect(() => ceilingFor('carrier-pigeon')).toThrow(/no ceiling pair for "carrier-pigeon"; ceilings: /);
  });
});

describe.each(pairs.map((pair) => [pair.transport, pair] as const))('the %s ceiling pair', (transport, pair) => {
  for (const [bytes, window] of [
    [1024, 4],
    [300_000, 2],
  ] as const) {
    it(`moves ${bytes.toLocaleString('en-US')}-byte images intact at WINDOW=${window}, each once, every one ` +
      `acknowledged`, async () => {
      const image = patterned(bytes);
      const digest = createHash('sha256').update(image).digest('hex');
      const seen = new Map<number, number>();
      const intact: number[] = [];
      // A latest-frame key delivers every image only one at a time (below: what it does at more).
      const run = await options(transport, image, 8, pair.supersedes ? 1 : window);
      const figures = await runInProcess(pair, run, (seq, got) => {
        seen.set(seq, (seen.get(seq) ?? 0) + 1);
        if (got.length === bytes && createHash('sha256').update(got).digest('hex') === digest) intact.push(seq);
      });
      // Two warm-up images and eight timed ones, in any order the transport keeps.
      expect([...seen.keys()].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
      expect(intact.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(figures).toMatchObject({ count: 8, imageBytes: bytes, window: run.window });
      expect(figures.MBps).toBeGreaterThan(0);
      expect(figures.rttP50Ms).toBeGreaterThan(0);
      expect(figures.rttP99Ms).toBeGreaterThanOrEqual(figures.rttP50Ms);
      // One process: its CPU cannot be split between the two sides, so the receiver's is not told.
      expect(figures.receiverCpuMs).toBeNull();
    }, 90_000);
  }
});

describe('the redis-kv ceiling pair at WINDOW=64', () => {
  it('reads images in order, the last one always, and counts the rest as superseded, not delivered', async () => {
    const seen: number[] = [];
    const run = await options('redis-kv', patterned(1024), 200, 64);
    const figures = await runInProcess(await ceilingFor('redis-kv'), run, (seq) => seen.push(seq));
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(seen.at(-1)).toBe(201);
    expect(figures.superseded).toBeGreaterThan(0);
    // The two warm-up images are read too, outside the timed count.
    expect(figures.count + figures.superseded!).toBe(200);
  }, 90_000);
});

describe('a pair that moves nothing', () => {
  it('is reported failed by the runner, naming the silence, not measured', async () => {
    // TCP's pair with a receiver that takes everything and acknowledges nothing.
    const silent: CeilingPair = {
      ...tcpCeiling,
      async receive(receiveOptions) {
        const server = await tcpCeiling.receive({ ...receiveOptions, port: 0 });
        return server;
      },
      async connect(connectOptions) {
        return tcpCeiling.connect({ ...connectOptions, onAck: () => {} });
      },
    };
    const run = { ...(await options('tcp', patterned(1024), 4, 2)), ackTimeoutMs: 300 };
    await expect(runInProcess(silent, run)).rejects.toThrow('no ack for 300 ms after 0 of 6 images');
  });
});
