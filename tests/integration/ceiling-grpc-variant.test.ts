import { once } from 'node:events';
import http2 from 'node:http2';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../services/shared/net.js';
import { grpcCeilingWith } from '../../services/transports/grpc/ceiling.js';
import type { GrpcCeilingVariant } from '../../services/transports/kit/ceiling-grpc.js';
import { runInProcess } from '../../scripts/ceiling/run.js';
import { MAX_WINDOW_BYTES } from '../../services/transports/kit/http2-windows.js';

// The grpc ceiling pair with the grpc-options bench's variants (scripts/bench/grpc-options.ts): the server-side HTTP/2
// settings reach the wire, as a plain node:http2 client sees them, and a variant still moves every image intact.

const MIB = 1024 * 1024;

/** What a node:http2 client sees of the pair's receiver: its SETTINGS and the connection window it grants. */
async function serverWindows(variant: GrpcCeilingVariant): Promise<{ streamWindow: number; connectionWindow: number }> {
  const receiver = await grpcCeilingWith(() => variant).receive({
    bindHost: '127.0.0.1',
    port: 0,
    brokerUrl: undefined,
    channel: 'test',
    maxImageBytes: 1024,
    arrived: () => undefined,
  });
  const session = http2.connect(`http://127.0.0.1:${receiver.port}`);
  try {
    await once(session, 'remoteSettings');
    // A second SETTINGS frame (the variant's) and the WINDOW_UPDATE follow the first at once: a ping round trip
    // later both are in.
    await new Promise<void>((resolve, reject) => session.ping((err) => (err ? reject(err) : resolve())));
    return {
      streamWindow: session.remoteSettings.initialWindowSize ?? -1,
      connectionWindow: session.state.remoteWindowSize ?? -1,
    };
  } finally {
    session.destroy();
    await receiver.close();
  }
}

function patterned(bytes: number): Buffer {
  const image = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) image[i] = (i * 31 + (i >> 8)) & 0xff;
  return image;
}

describe('the grpc ceiling pair with a bench variant', () => {
  it("opens the server's windows to HTTP/2's largest by default, and to the variant's when it sets one", async () => {
    expect(await serverWindows({})).toEqual({ streamWindow: MAX_WINDOW_BYTES, connectionWindow: MAX_WINDOW_BYTES });
    expect(await serverWindows({ serverWindowBytes: 16 * MIB })).toEqual({
      streamWindow: 16 * MIB,
      connectionWindow: 16 * MIB,
    });
    expect(await serverWindows({ serverWindowBytes: 65_535 })).toEqual({
      streamWindow: 65_535,
      connectionWindow: 65_535,
    });
  });

  it.each([
    ['waits for drain', { waitForDrain: true }],
    [
      'has 16 MiB server windows and frames',
      { serverSettings: { maxFrameSize: 16 * MIB - 1 }, serverWindowBytes: MIB },
    ],
  ] as const)('moves every image intact, once, when it %s', async (_what, variant: GrpcCeilingVariant) => {
    for (const [bytes, window] of [
      [1024, 256],
      [545_792, 16],
    ] as const) {
      const image = patterned(bytes);
      const seen = new Map<number, number>();
      const figures = await runInProcess(
        grpcCeilingWith(() => variant),
        {
          image,
          count: 600,
          window,
          warmup: 2,
          ackTimeoutMs: 10_000,
          host: '127.0.0.1',
          port: await freePort(),
          brokerUrl: undefined,
          channel: 'test',
          startTimeoutMs: 10_000,
        },
        (seq, got) => {
          expect(got.equals(image), `image ${seq} at ${bytes} B`).toBe(true);
          seen.set(seq, (seen.get(seq) ?? 0) + 1);
        },
      );
      expect(figures.count).toBe(600);
      expect(seen.size).toBe(602);
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
    }
  });
});
