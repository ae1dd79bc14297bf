import { randomBytes } from 'node:crypto';
import type http2 from 'node:http2';
import type * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import type { Transport } from '../../services/transports/contract.js';
import { grpcConnectTransport } from '../../services/transports/grpc-connect/transport.js';
import { grpcUnaryTransport } from '../../services/transports/grpc-unary/transport.js';
import { grpcTransport } from '../../services/transports/grpc/transport.js';
import { eachSession, grpcJs, maxMessageBytes } from '../../services/transports/kit/grpc.js';
import { receiveWindowBytes } from '../../services/transports/kit/http2-windows.js';
import { eventually, stampedHeader, testDoor } from '../helpers/harness.js';
import {
  frameMessage,
  openListener,
  PUT_PATH,
  rawSession,
  rawTransfer,
  TRANSFER_PATH,
  type Closers,
} from '../helpers/raw-grpc.js';

// The receive windows of every gRPC receiver, as a plain HTTP/2 client sees them: HTTP/2's 64 KiB
// until a call is admitted, then stream and connection windows for what the section's WINDOW puts in
// flight, so no image waits a round trip per 64 KiB. grpc-js opens neither by itself (kit/grpc.ts
// eachSession); Connect for Node neither (grpc-connect.ts). The same bytes go to each: one protocol.

const MIB = 1024 * 1024;
const closers: Closers = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A PING answered: any SETTINGS or WINDOW_UPDATE the receiver sent before it has arrived too. */
function roundTrip(session: http2.ClientHttp2Session): Promise<void> {
  return new Promise((resolve, reject) => session.ping((err) => (err ? reject(err) : resolve())));
}

describe.each([
  ['grpc', grpcTransport, TRANSFER_PATH],
  ['grpc-unary', grpcUnaryTransport, PUT_PATH],
  ['grpc-connect', grpcConnectTransport, TRANSFER_PATH],
] as [string, Transport, string][])('%s receiver', (_name, transport, path) => {
  it("keeps HTTP/2's 64 KiB windows until a call is admitted, then opens stream and connection windows to what " +
    "the section's WINDOW puts in flight", async () => {
    const window = 16;
    const section = testDoor(transport.name, 7, 10_000, window);
    const { listener } = await openListener(transport, section, closers, { window, maxImageBytes: 4 * MIB });
    const expectedBytes = receiveWindowBytes(window, maxMessageBytes(4 * MIB));
    expect(expectedBytes).toBeGreaterThanOrEqual(window * 4 * MIB);
    const image = randomBytes(1000);

    const refused = await rawSession(listener.port, closers);
    const refusal = await rawTransfer(refused, {}, frameMessage(stampedHeader(image, 0), image), path);
    expect(refusal.trailers['grpc-status']).toBe('16'); // UNAUTHENTICATED
    await roundTrip(refused);
    expect(refused.remoteSettings.initialWindowSize).toBe(65_535);
    expect(refused.state.remoteWindowSize).toBeLessThanOrEqual(65_535);

    const admitted = await rawSession(listener.port, closers);
    const outcome = await rawTransfer(
      admitted,
      { authorization: `Bearer ${section.credential.text}` },
      frameMessage(stampedHeader(image, 1), image),
      path,
    );
    expect(outcome.trailers['grpc-status']).toBe('0');
    await eventually(() => admitted.remoteSettings.initialWindowSize === expectedBytes);
    await eventually(() => (admitted.state.remoteWindowSize ?? 0) >= expectedBytes - 2 * 1024);
  }, 20_000);
});

describe("grpc-js's sessions, reached through its private field", () => {
  it('fail loudly, naming the field, where a grpc-js release keeps none (or no listener yet)', () => {
    const server = new (grpcJs().Server)();
    try {
      // No listener yet: nothing to reach.
      expect(() => eachSession(server, () => undefined)).toThrow(
        expect.objectContaining({
          code: ErrorCode.transport,
          message: expect.stringMatching(/no Server#http2Servers/),
        }),
      );
    } finally {
      server.forceShutdown();
    }
    // A release without the field.
    expect(() => eachSession({} as grpc.Server, () => undefined)).toThrow(/cannot open its HTTP\/2 receive windows/);
  });
});
