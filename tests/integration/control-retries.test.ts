import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_HEADER, type RunAnnouncement } from '../../services/core/control/control-protocol.js';
import { ErrorCode, ItbError } from '../../services/core/errors.js';
import { hostFacts } from '../../services/shared/host.js';
import { ControlClient } from '../../services/transmitter/control-client.js';
import { transports } from '../../services/transports/index.js';
import { freePort } from '../../services/shared/net.js';
import { TEST_AUTH_TOKEN } from '../helpers/harness.js';
import { startReceiver } from '../helpers/in-process.js';

// Every control request of a run is tried again when its connection fails or the port is full: a flood on the
// control port once cut the transmitter's POST of its round trips ("other side closed") and failed the section. A
// plain socket server stands in for the receiver here, so the server's side of each try is exact.

/** What the stand-in does with a request: answer it, cut its connection once the request is whole, or never answer. */
type Handling = 204 | 503 | 'cut' | 'hang';

interface SeenRequest {
  line: string;
  key: string | undefined;
}

/** A stand-in control port: `handle(n)` says what becomes of the n-th request (from 1). */
async function standIn(handle: (request: number) => Handling, port = 0) {
  const seen: SeenRequest[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const headEnd = buffered.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const head = buffered.slice(0, headEnd);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < headEnd + 4 + length) return;
        buffered = buffered.slice(headEnd + 4 + length);
        const key = new RegExp(`\r\n${IDEMPOTENCY_HEADER}: ([^\r]+)`, 'i').exec(head)?.[1];
        seen.push({ line: head.split('\r\n')[0]!, key });
        const handling = handle(seen.length);
        if (handling === 'cut') {
          socket.destroy();
          return;
        }
        if (handling === 'hang') continue;
        const reason = handling === 204 ? 'No Content' : 'Service Unavailable';
        socket.write(`HTTP/1.1 ${handling} ${reason}\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n`);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

const WARMED_UP = { images: 0, ms: 0, steady: null, mediansMs: null };

describe("the transmitter's control requests", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const client = (port: number, requestTimeoutMs: number, retryWithinMs: number): ControlClient => {
    const control = new ControlClient('127.0.0.1', port, requestTimeoutMs, retryWithinMs);
    control.authorize(TEST_AUTH_TOKEN);
    cleanups.push(() => control.close());
    return control;
  };

  it('send a POST cut after it arrived again, with the same idempotency key; the next POST has its own', async () => {
    const server = await standIn((request) => (request === 1 ? 'cut' : 204));
    cleanups.push(server.close);
    const control = client(server.port, 5000, 5000);
    await control.startMeasuring(7, WARMED_UP);
    await control.startMeasuring(8, WARMED_UP);
    expect(server.seen.map((r) => r.line)).toEqual([
      'POST /sections/7/measure HTTP/1.1',
      'POST /sections/7/measure HTTP/1.1',
      'POST /sections/8/measure HTTP/1.1',
    ]);
    const [first, again, next] = server.seen.map((r) => r.key);
    expect(first).toMatch(/^[0-9a-f-]{36}\.\d+$/);
    expect(again).toBe(first);
    expect(next).not.toBe(first);
  });

  it('try a 503 (a full port) again, and give its answer once the bound is over', async () => {
    const server = await standIn(() => 503);
    cleanups.push(server.close);
    const failure = await client(server.port, 5000, 500)
      .startMeasuring(7, WARMED_UP)
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ItbError);
    expect((failure as ItbError).code).toBe(ErrorCode.transport);
    expect((failure as ItbError).message).toMatch(/^receiver refused POST \/sections\/7\/measure \(HTTP 503\)/);
    expect(server.seen.length).toBeGreaterThan(1);
    expect(new Set(server.seen.map((r) => r.key)).size).toBe(1);
  });

  it('reach a receiver whose port opens while they try, and name the tries of one that never opens', async () => {
    const port = await freePort();
    const control = client(port, 5000, 10_000);
    const sent = control.startRun({} as RunAnnouncement);
    // Refused until the port opens.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const server = await standIn(() => 204, port);
    cleanups.push(server.close);
    await sent;
    expect(server.seen).toHaveLength(1);

    const closedPort = await freePort();
    const gone = client(closedPort, 5000, 400);
    const failure = await gone.clockSample().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ItbError);
    expect((failure as ItbError).code).toBe(ErrorCode.receiverUnreachable);
    expect((failure as ItbError).message).toMatch(
      new RegExp(`^receiver at 127\\.0\\.0\\.1:${closedPort} did not answer GET /clock: .*ECONNREFUSED.*`),
    );
    expect((failure as ItbError).message).toMatch(/ \(\d+ tries in \d+ ms\)$/);
    // Taken for gone: the next request gets one try, so a run whose receiver died stops without waiting again.
    const again = await gone.clockSample().catch((err: unknown) => err);
    expect((again as ItbError).message).toMatch(/did not answer GET \/clock: .*ECONNREFUSED[^(]*$/);
  });

  it('do not try again a request that timed out: the receiver is there, only slow', async () => {
    const server = await standIn(() => 'hang');
    cleanups.push(server.close);
    const failure = await client(server.port, 300, 10_000)
      .finishRun()
      .catch((err: unknown) => err);
    expect((failure as ItbError).code).toBe(ErrorCode.receiverUnreachable);
    expect((failure as ItbError).message).toBe(
      `receiver at 127.0.0.1:${server.port} did not answer POST /runs/finish: request timed out`,
    );
    expect(server.seen).toHaveLength(1);
  });
});

describe('the receiver, given one request twice under one idempotency key', () => {
  let outputDir: string | undefined;
  afterEach(async () => {
    if (outputDir !== undefined) await rm(outputDir, { recursive: true, force: true });
  });

  it('acts on it once and answers each try alike; a request without AUTH_TOKEN gets nothing from a key', async () => {
    outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-idempotent-'));
    const { receiver, transmitterConfig: config } = await startReceiver(outputDir, { TRANSPORTS: 'tcp' });
    try {
      const announcement: RunAnnouncement = {
        startedAt: new Date().toISOString(),
        imageDescription: 'random bytes',
        imageSizeBytes: 4096,
        imageCount: 3,
        window: 3,
        warmup: { mode: 'images', images: 0 },
        repeat: 1,
        transports: ['tcp'],
        arrivalNotes: [],
        receivers: 1,
        receiverIndex: 0,
        config,
        hosts: { transmitter: hostFacts(transports) },
      };
      const postRun = async (key: string | undefined, token: string | null = TEST_AUTH_TOKEN) => {
        const response = await fetch(`http://127.0.0.1:${config.controlPort}/runs`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(token === null ? {} : { authorization: `Bearer ${token}` }),
            ...(key === undefined ? {} : { [IDEMPOTENCY_HEADER]: key }),
          },
          body: JSON.stringify(announcement),
          signal: AbortSignal.timeout(10_000),
        });
        return { status: response.status, body: await response.text() };
      };
      // Two tries at once (the second arrives while the first is under way), then one more after.
      const [first, second] = await Promise.all([postRun('transmitter-1.1'), postRun('transmitter-1.1')]);
      expect([first.status, second.status]).toEqual([204, 204]);
      expect((await postRun('transmitter-1.1')).status).toBe(204);
      // The same key without the secret is refused before its key is looked at.
      expect((await postRun('transmitter-1.1', null)).status).toBe(401);
      // Another request is acted on: one run is in progress, so it is refused.
      const another = await postRun('transmitter-1.2');
      expect(another.status).toBe(409);
      expect((await postRun('transmitter-1.2')).body).toBe(another.body);
      expect((await postRun(undefined)).status).toBe(409);
    } finally {
      await receiver.close();
    }
  });
});
