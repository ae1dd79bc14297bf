import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CLOCK_HEADER } from '../../services/core/control/control-protocol.js';
import { ErrorCode, ItbError } from '../../services/core/errors.js';
import { ControlClient } from '../../services/transmitter/control-client.js';
import { eventually } from '../helpers/harness.js';

// The clock's kept-alive socket. A receiver closes an idle keep-alive connection after 4 s, and a section can leave it
// idle that long; node 20's agent ignores the server's timeout hint, so the transmitter once reused a socket the
// receiver was closing, got "socket hang up", took the receiver for gone and stopped the run after that section. A
// plain socket server stands in for the receiver here, so the server's side of each case is exact.

/** A stand-in control port: `answer(n, k)` says whether connection n's request k gets a reply (else it is cut). */
async function clockServer(answer: (connection: number, request: number) => boolean) {
  const state = { connections: 0, closedByClient: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    const connection = ++state.connections;
    sockets.add(socket);
    let request = 0;
    let cutByUs = false;
    let head = '';
    socket.on('data', (chunk) => {
      head += chunk.toString('latin1');
      while (head.includes('\r\n\r\n')) {
        head = head.slice(head.indexOf('\r\n\r\n') + 4);
        if (!answer(connection, ++request)) {
          cutByUs = true;
          socket.destroy();
          return;
        }
        socket.write(
          `HTTP/1.1 200 OK\r\n${CLOCK_HEADER}: ${process.hrtime.bigint()}\r\nContent-Length: 0\r\n` +
            'Connection: keep-alive\r\nKeep-Alive: timeout=4\r\n\r\n',
        );
      }
    });
    socket.on('end', () => {
      if (!cutByUs) state.closedByClient++;
      socket.end();
    });
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe("the transmitter's clock exchanges", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('take a sample again on a new socket when the kept-alive one is cut before any answer', async () => {
    // The first connection answers once, then is cut at its next request: the receiver closing it as it was reused.
    const server = await clockServer((connection, request) => connection > 1 || request === 1);
    cleanups.push(server.close);
    const control = new ControlClient('127.0.0.1', server.port, 5000);
    cleanups.push(() => control.close());
    await control.clockSample();
    const sample = await control.clockSample();
    expect(sample.receiverNs).toBeGreaterThan(0n);
    expect(server.state.connections).toBe(2);
  });

  it('still report a receiver that cuts every new socket as unreachable, once their retry bound is over', async () => {
    const server = await clockServer((_connection, request) => request === 1 && _connection === 1);
    cleanups.push(server.close);
    const retryWithinMs = 1000;
    const control = new ControlClient('127.0.0.1', server.port, 5000, retryWithinMs);
    cleanups.push(() => control.close());
    await control.clockSample();
    const startedAt = Date.now();
    const failure = await control.clockSample().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ItbError);
    expect((failure as ItbError).code).toBe(ErrorCode.receiverUnreachable);
    expect((failure as ItbError).message).toMatch(
      /did not answer GET \/clock: socket hang up \(\d+ tries in \d+ ms\)$/,
    );
    // Tried on new sockets with pauses until the bound (a flood may cut a few), never forever.
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(retryWithinMs - 50);
    expect(server.state.connections).toBeGreaterThan(2);
  });

  it('let go of an idle kept-alive socket themselves, without waiting for the receiver to close it', async () => {
    // This server never closes an idle connection: only the client's own timeout can.
    const server = await clockServer(() => true);
    cleanups.push(server.close);
    const control = new ControlClient('127.0.0.1', server.port, 5000);
    cleanups.push(() => control.close());
    await control.clockSample();
    await eventually(() => server.state.closedByClient === 1, 15_000);
    await control.clockSample();
    expect(server.state.connections).toBe(2);
  });
});
