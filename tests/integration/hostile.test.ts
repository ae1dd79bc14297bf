import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Config } from '../../services/core/config.js';
import { decodeAck, encodeFrameHeader } from '../../services/core/frame.js';
import type { ReceiverApp } from '../../services/receiver/app.js';
import type { HealthResponse } from '../../services/core/control-protocol.js';
import { transports } from '../../services/transports/index.js';
import { LocalServers } from '../helpers/harness.js';
import { runTransmitter, startReceiver } from '../helpers/in-process.js';

// Hostile input to every listening port: random bytes, truncated frames, a header announcing
// 10 GB, a frame with a wrong checksum, and floods of connections. The receiver must drop them,
// count them, stay within its memory bound, and then serve a real run correctly.

const TEN_GB = 10 * 1024 ** 3;
const servers = new LocalServers();
let redisUrl: string;
let outputDir: string;
let receiver: ReceiverApp;
let config: Config;

beforeAll(async () => {
  await servers.startFor(transports);
  redisUrl = servers.env(transports).REDIS_URL!;
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-hostile-'));
  ({ receiver, transmitterConfig: config } = await startReceiver(outputDir, { ...servers.env(transports), MAX_IMAGE_SIZE: '16MiB', IMAGE_COUNT: '5' }));
});
afterAll(async () => {
  await receiver?.close();
  await servers.closeAll();
  await rm(outputDir, { recursive: true, force: true });
});

async function health(): Promise<HealthResponse> {
  return (await (await fetch(`http://127.0.0.1:${config.controlPort}/health`)).json()) as HealthResponse;
}

/** Connects, writes `bytes`, and resolves when the receiver closes the socket or after `waitMs`. */
async function sendRaw(port: number, bytes: Buffer, waitMs = 300): Promise<{ closedByPeer: boolean; received: Buffer }> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.write(bytes);
  const closed = new Promise<boolean>((resolve) => socket.once('close', () => resolve(true)));
  const closedByPeer = await Promise.race([closed, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), waitMs))]);
  socket.destroy();
  return { closedByPeer, received: Buffer.concat(chunks) };
}

const header = (sizeBytes: number, checksum = 1n) => encodeFrameHeader({ sectionId: 42, seq: 0, sizeBytes, checksum, sentAtNs: 1n });
/** Every listening port: each transport's with a port setting (from the table), and the control endpoint. */
const dataPorts = (): Record<string, number> => ({ ...config.ports, control: config.controlPort });

describe('hostile input', () => {
  it('random bytes and connection floods on every port are dropped', async () => {
    for (const [name, port] of Object.entries(dataPorts())) {
      await sendRaw(port, randomBytes(64 * 1024));
      // A flood: many connections at once, each sending a little garbage.
      await Promise.all(Array.from({ length: 100 }, () => sendRaw(port, randomBytes(512), 100)));
      expect((await health()).status, name).toBe('ready');
    }
  }, 60_000);

  it('TCP: a 10 GB header is refused at once, a truncated frame delivers nothing, a wrong checksum is refused', async () => {
    const before = (await health()).counters;
    const huge = await sendRaw(config.ports.tcp!, header(TEN_GB), 2000);
    expect(huge.closedByPeer).toBe(true);
    await sendRaw(config.ports.tcp!, Buffer.concat([header(1_000_000), randomBytes(1000)]));
    // Well formed, wrong checksum, for no open section: acknowledged as rejected, never recorded.
    const image = randomBytes(1000);
    const answer = await sendRaw(config.ports.tcp!, Buffer.concat([header(image.length, 12345n), image]), 500);
    expect(decodeAck(answer.received.subarray(0, 12))).toEqual({ sectionId: 42, seq: 0, status: 'rejected' });
    const after = (await health()).counters;
    expect(after.rejectedInputs).toBeGreaterThan(before.rejectedInputs);
    expect(after.rejectedFrames).toBe(before.rejectedFrames + 1);
  }, 30_000);

  it('WebSocket: text, random binary and a 10 GB header are refused and the connection closed', async () => {
    const before = (await health()).counters.rejectedInputs;
    for (const message of ['hello', randomBytes(100), header(TEN_GB)]) {
      const ws = new WebSocket(`ws://127.0.0.1:${config.ports.websocket}/images`);
      ws.on('error', () => {});
      await once(ws, 'open');
      ws.send(message);
      const [code] = (await once(ws, 'close')) as [number];
      expect(code).toBe(1008);
    }
    // A message over MAX_IMAGE_SIZE is refused by ws itself before it is assembled.
    const ws = new WebSocket(`ws://127.0.0.1:${config.ports.websocket}/images`);
    ws.on('error', () => {});
    await once(ws, 'open');
    ws.send(header(1000));
    ws.send(Buffer.alloc(17 * 1024 * 1024));
    const [code] = (await once(ws, 'close')) as [number];
    expect(code).toBe(1009);
    expect((await health()).counters.rejectedInputs).toBeGreaterThanOrEqual(before + 4);
  }, 30_000);

  it('Redis: malformed stream entries are refused and trimmed', async () => {
    const before = (await health()).counters.rejectedInputs;
    const client = new Redis(redisUrl);
    try {
      await client.xadd('itb:frames', '*', 'h', randomBytes(40), 'p', randomBytes(10));
      await client.xadd('itb:frames', '*', 'x', 'y');
      await client.xadd('itb:frames', '*', 'h', header(TEN_GB), 'p', 'z');
      const deadline = Date.now() + 5000;
      while ((await health()).counters.rejectedInputs < before + 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect((await health()).counters.rejectedInputs).toBeGreaterThanOrEqual(before + 3);
      expect(await client.xlen('itb:frames')).toBe(0);
    } finally {
      client.disconnect();
    }
  }, 30_000);

  it('stays within its memory bound, then serves a real run over every transport', async () => {
    expect(process.memoryUsage.rss()).toBeLessThan(1024 ** 3);
    const outcome = await runTransmitter(config);
    expect(outcome.succeeded, outcome.summary).toBe(true);
  }, 60_000);
});
