import { readFileSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import net, { type AddressInfo } from 'node:net';
import { ErrorCode, ItbError } from '../core/errors.js';

// Address helpers every listener and dialer needs alike, so IPv6 literals and port 0 are handled
// one way everywhere.

/** A host as it goes before ":port" in an address or URL: an IPv6 literal in brackets. */
export function bracketHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** `host:port`, with an IPv6 literal bracketed. */
export function hostPort(host: string, port: number | string): string {
  return `${bracketHost(host)}:${port}`;
}

/**
 * The one address a fastify server should bind for `host`. Given "localhost", fastify binds a
 * second server for each further address it resolves to (::1 beside 127.0.0.1), and caps set on
 * `app.server` would not hold there; resolved first, it binds one address, as net.Server does.
 */
export async function singleListenHost(host: string): Promise<string> {
  if (host.toLowerCase() !== 'localhost') return host;
  return (await lookup(host)).address;
}

/** The port a server actually bound (the OS picks one for port 0); throws when it has none. */
export function boundPort(address: AddressInfo | string | null): number {
  if (address === null || typeof address === 'string' || !Number.isInteger(address.port) || address.port <= 0) {
    throw new ItbError(ErrorCode.internal, `server has no TCP port (address ${JSON.stringify(address)})`);
  }
  return address.port;
}

// Ports this process was given: a port is free again the moment its probe closes, so a port could
// be offered twice before the first taker binds it (a test's CONTROL_PORT once equalled the
// GRPC_PORT chosen just before it).
const givenPorts = new Set<number>();
/** Attempts at a random port before giving up. */
const FREE_PORT_ATTEMPTS = 200;
/** Lowest port handed out: well above the registered services most machines run. */
const LOWEST_FREE_PORT = 10_000;

/**
 * The first port of the kernel's ephemeral range, from which it picks the local port of every
 * outgoing connection. A port handed out from inside that range can be taken by any process's
 * next connect() before its taker binds it (seen: EADDRINUSE in one test while another opened
 * thousands of connections), so ports are chosen below it.
 */
function readEphemeralRangeStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 0 ? first : 32_768;
  } catch {
    // Not Linux: the IANA dynamic range.
    return 49_152;
  }
}
let ephemeralStart: number | undefined;

/**
 * True when `port` can be bound on 127.0.0.1 right now (the probe is closed again before this resolves); exported for
 * tests.
 */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Slices the test workers' ports are spread over: vitest runs at most this many workers at once here. */
const PORT_SLICES = 8;

/**
 * The ports from `lowest` to `highest` this process picks among: under vitest, its worker's own slice (VITEST_POOL_ID,
 * from 1), so two workers never pick one port between one's check and its bind (a receiver once failed EADDRINUSE on
 * a port another worker's test had picked free at the same moment); the whole range otherwise.
 */
export function portSlice(lowest: number, highest: number): [number, number] {
  const worker = Number(process.env.VITEST_POOL_ID);
  if (!Number.isInteger(worker) || worker < 1) return [lowest, highest];
  const width = Math.floor((highest - lowest + 1) / PORT_SLICES);
  const start = lowest + ((worker - 1) % PORT_SLICES) * width;
  return [start, start + width - 1];
}

/**
 * A TCP port free on 127.0.0.1, below the kernel's ephemeral range and never given to this process
 * before; with `consecutive` above 1, the ports after it are free and not given too (zeromq-pubsub
 * binds its port and the next one). Random, so two processes seldom pick alike.
 */
export async function freePort(consecutive = 1): Promise<number> {
  ephemeralStart ??= readEphemeralRangeStart();
  const [lowest, highest] = portSlice(LOWEST_FREE_PORT, Math.min(ephemeralStart, 65_536) - consecutive);
  if (highest - lowest < 1000)
    throw new ItbError(ErrorCode.setup, `no room for free ports between ${lowest} and the ephemeral range`);
  for (let attempt = 0; attempt < FREE_PORT_ATTEMPTS; attempt++) {
    const port = lowest + Math.floor(Math.random() * (highest - lowest + 1));
    const ports = Array.from({ length: consecutive }, (_, i) => port + i);
    if (ports.some((p) => givenPorts.has(p))) continue;
    // Taken before the first await, so a call running beside this one cannot pick them too (a
    // port found busy stays taken: there are thousands more).
    for (const p of ports) givenPorts.add(p);
    let free = true;
    for (const p of ports) free = free && (await portIsFree(p));
    if (free) return port;
  }
  throw new ItbError(
    ErrorCode.setup,
    `no free port found in ${FREE_PORT_ATTEMPTS} attempts between ${LOWEST_FREE_PORT} and ${highest}`,
  );
}

/**
 * An IPv4 peer as Node reports it on a dual-stack socket (`::ffff:10.0.0.2`) in its plain form (`10.0.0.2`); other
 * addresses unchanged.
 */
export function unmappedAddress(address: string): string {
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address) ? address.slice('::ffff:'.length) : address;
}
