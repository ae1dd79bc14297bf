import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CeilingPair, CeilingSender } from '../../services/transports/ceiling-contract.js';
import { ceilingFor } from '../../scripts/ceiling/index.js';
import { runInProcess } from '../../scripts/ceiling/run.js';
import { freePort } from '../../services/shared/net.js';
import type { Transport } from '../../services/transports/contract.js';
import { transports } from '../../services/transports/index.js';
import { LocalServers, transferThrough } from '../helpers/harness.js';

// Each ceiling sender must hand its library the same calls per image as its transport's
// transmitter: the same socket writes, corked or not, the same library sends, each with the same
// byte sizes. The calls are really observed: net.Socket's write/cork/uncork and each library's
// send are wrapped for the length of one transfer, and an AsyncLocalStorage marks what the sender
// side does (its connect, and each image's send with what follows from it), so the receiver's
// writes (acks, answers) are never counted. One image at a time (WINDOW=1), so nothing batches.

const require = createRequire(import.meta.url);

/** One observed call: what was called and the byte sizes of the buffers it was handed. */
interface Call {
  call: string;
  sizes: number[];
}

/**
 * Set around everything the sender side starts (its connect, each send): what runs in it, or in what it set off, is the
 * sender's.
 */
const sender = new AsyncLocalStorage<true>();
/** The image whose send came last: the sender's calls until the next send are this image's. */
let current: number | undefined;
/** The sender's calls by image, while a transfer is watched. */
let recorded: Map<number, Call[]> | undefined;

function record(call: string, sizes: number[]): void {
  if (recorded === undefined || current === undefined || sender.getStore() !== true) return;
  let calls = recorded.get(current);
  if (calls === undefined) {
    calls = [];
    recorded.set(current, calls);
  }
  calls.push({ call, sizes });
}

/** Runs a sender's connect (seq undefined) or one image's send (its seq) as the sender's. */
function asSender<T>(work: () => T, seq: number | undefined): T {
  if (seq !== undefined) current = seq;
  return sender.run(true, work);
}

/**
 * The byte sizes of the buffers among `args`, looking one level into arrays and plain objects (a [header, image]
 * message, a {header, payload} Frame, undici's options).
 */
function bufferSizes(args: readonly unknown[], depth = 0): number[] {
  return args.flatMap((arg): number[] => {
    if (arg instanceof Uint8Array) return [arg.byteLength];
    if (depth > 0 || arg === null || typeof arg !== 'object') return [];
    if (Array.isArray(arg)) return bufferSizes(arg, depth + 1);
    if (Object.getPrototypeOf(arg) === Object.prototype) return bufferSizes(Object.values(arg), depth + 1);
    return [];
  });
}

/** Replaces `owner[name]` with a function that records each call, then calls the original; returns the undo. */
function spy(
  owner: object,
  name: string,
  label: string,
  sizesOf: (args: unknown[]) => number[],
  after?: (result: unknown) => void,
): () => void {
  const own = Object.getOwnPropertyDescriptor(owner, name);
  const original = (owner as Record<string, unknown>)[name] as (...args: unknown[]) => unknown;
  // Defined, not assigned: zeromq's native send is read-only on the base class, so each socket class gets its own.
  Object.defineProperty(owner, name, {
    configurable: true,
    writable: true,
    value: function (this: unknown, ...args: unknown[]): unknown {
      record(label, sizesOf(args));
      const result = original.apply(this, args);
      after?.(result);
      return result;
    },
  });
  return () => {
    if (own === undefined) delete (owner as Record<string, unknown>)[name];
    else Object.defineProperty(owner, name, own);
  };
}

/** Wraps every call a sender can make to move an image: node:net's socket writes and each library's send. */
function spyAll(): () => void {
  const socketWriteSizes = ([chunk, encoding]: unknown[]): number[] => [
    typeof chunk === 'string'
      ? Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
      : (bufferSizes([chunk])[0] ?? 0),
  ];
  const grpc = require('@grpc/grpc-js') as typeof import('@grpc/grpc-js');
  const zeromq = require('zeromq') as typeof import('zeromq');
  const { Redis } = require('ioredis') as typeof import('ioredis');
  const nats = require('@nats-io/transport-node') as { NatsConnectionImpl: { prototype: object } };
  const undici = require('undici') as typeof import('undici');
  const WebSocket = require('ws') as typeof import('ws').WebSocket;
  const http2 = require('node:http2') as typeof import('node:http2');
  const undo = [
    // grpc-connect's sends go through a node:http2 stream of a session of its own: its writes are the calls.
    spy(
      http2,
      'connect',
      'http2.connect',
      () => [],
      (session) => {
        spy(
          session as object,
          'request',
          'http2.request',
          () => [],
          (stream) => {
            spy(stream as object, 'write', 'http2.stream.write', (args) => bufferSizes(args.slice(0, 1)));
          },
        );
      },
    ),
    spy(net.Socket.prototype, 'write', 'socket.write', socketWriteSizes),
    spy(net.Socket.prototype, 'cork', 'socket.cork', () => []),
    spy(net.Socket.prototype, 'uncork', 'socket.uncork', () => []),
    spy(WebSocket.prototype, 'send', 'ws.send', (args) => bufferSizes(args.slice(0, 1))),
    spy(grpc.Client.prototype, 'makeUnaryRequest', 'grpc.makeUnaryRequest', (args) => bufferSizes([args[3]])),
    spy(
      grpc.Client.prototype,
      'makeBidiStreamRequest',
      'grpc.makeBidiStreamRequest',
      () => [],
      (call) => {
        spy(call as object, 'write', 'grpc.call.write', (args) => bufferSizes(args.slice(0, 1)));
      },
    ),
    ...[zeromq.Dealer, zeromq.XPublisher, zeromq.Pair].map((socket) =>
      spy(socket.prototype, 'send', 'zeromq.send', (args) => bufferSizes(args.slice(0, 1))),
    ),
    spy(Redis.prototype, 'sendCommand', 'redis.sendCommand', (args) => {
      const command = args[0] as { name: string; args: unknown[] };
      return bufferSizes(command.args);
    }),
    spy(nats.NatsConnectionImpl.prototype, 'publish', 'nats.publish', (args) => bufferSizes(args.slice(1, 2))),
    spy(undici.Client.prototype, 'dispatch', 'undici.dispatch', (args) => bufferSizes(args.slice(0, 1))),
  ];
  return () => {
    for (const restore of undo.reverse()) restore();
  };
}

/**
 * Where the bytes on the wire carry names of different lengths (Redis keys, NATS subjects, MQTT topics, the
 * Where the bytes on the wire carry names of different lengths (Redis keys, NATS subjects, AMQP queues, the
 * transport's credential in an HTTP request head, http-json's header fields spelled by name), a
 * size may differ by this much, and only there; everywhere else sizes must be equal. Either is far
 * below a 40-byte header moved into or out of a call, and the number and order of calls must match
 * in every case.
 */
const NAMES_SLACK_BYTES: Readonly<Record<string, number>> = {
  redis: 32,
  'redis-list': 32,
  'redis-pubsub': 32,
  'redis-kv': 32,
  nats: 32,
  'nats-jetstream': 32,
  mqtt: 32,
  // The routing key and the reply-to queue: two names.
  amqp: 64,
  http: 96,
  'http-json': 96,
};

const IMAGES = 7;
/** The first images may carry a connection's setup (undici dials on its first request): compared from this seq on. */
const COMPARED_FROM = 2;

/**
 * The calls of every compared image, in seq order; the last image's run on into the link's close, so it is left out.
 */
function comparedCalls(calls: Map<number, Call[]>): Call[][] {
  return Array.from({ length: IMAGES - 1 - COMPARED_FROM }, (_, i) => calls.get(COMPARED_FROM + i) ?? []);
}

async function transportCalls(transport: Transport, image: Buffer, url: string | undefined): Promise<Call[][]> {
  recorded = new Map();
  const restore = spyAll();
  try {
    const outcome = await transferThrough(
      transport,
      Array.from({ length: IMAGES }, () => image),
      {
        window: 1,
        ...(url === undefined ? {} : { url }),
        asSender,
      },
    );
    expect(outcome.acks).toHaveLength(IMAGES);
    return comparedCalls(recorded);
  } finally {
    restore();
    recorded = undefined;
    current = undefined;
  }
}

async function ceilingCalls(pair: CeilingPair, image: Buffer, url: string | undefined): Promise<Call[][]> {
  recorded = new Map();
  const restore = spyAll();
  const watched: CeilingPair = {
    ...pair,
    connect: (options) =>
      asSender(async () => {
        const connected = await pair.connect(options);
        return {
          send: (seq: number, header: Buffer, body: Buffer) => asSender(() => connected.send(seq, header, body), seq),
          close: () => connected.close(),
        } satisfies CeilingSender;
      }, undefined),
  };
  try {
    const run = {
      image,
      count: IMAGES - COMPARED_FROM,
      window: 1,
      warmup: COMPARED_FROM,
      ackTimeoutMs: 5000,
      host: '127.0.0.1',
      // Two: a pair may bind the port after it too (zeromq-pubsub's acks).
      port: await freePort(2),
      brokerUrl: url,
      channel: `itb-ceiling-writes-${pair.transport}-${image.length}`,
      startTimeoutMs: 10_000,
    };
    await runInProcess(watched, run);
    return comparedCalls(recorded);
  } finally {
    restore();
    recorded = undefined;
    current = undefined;
  }
}

const servers = new LocalServers();
beforeAll(async () => servers.startFor(transports));
afterAll(async () => servers.closeAll());

describe.each(transports.map((t) => [t.name, t] as const))(
  '%s: the ceiling sender and the transport',
  (name, transport) => {
    for (const bytes of [1024, 300_000]) {
      it(`make the same calls per ${bytes.toLocaleString('en-US')}-byte image`, async () => {
        const image = Buffer.alloc(bytes, 7);
        const url = servers.urlFor(transport);
        const ours = await transportCalls(transport, image, url);
        const ceiling = await ceilingCalls(await ceilingFor(name), image, url);
        // Something was seen on both sides for every image, or the comparison below proves nothing.
        for (const calls of [...ours, ...ceiling]) expect(calls.length).toBeGreaterThan(0);
        const slackBytes = NAMES_SLACK_BYTES[name] ?? 0;
        expect(ceiling.map((calls) => calls.map((c) => `${c.call}/${c.sizes.length}`))).toEqual(
          ours.map((calls) => calls.map((c) => `${c.call}/${c.sizes.length}`)),
        );
        ceiling.forEach((calls, image) => {
          calls.forEach((c, at) => {
            const theirs = ours[image]![at]!;
            c.sizes.forEach((size, i) => {
              expect(
                Math.abs(size - theirs.sizes[i]!),
                `${c.call} #${at} of image ${image + COMPARED_FROM}: ceiling ${size} B, transport ${theirs.sizes[i]} B`,
              ).toBeLessThanOrEqual(slackBytes);
            });
          });
        });
      }, 90_000);
    }
  },
);
