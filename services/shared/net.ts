import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';

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

/** The port a server actually bound (the OS picks one for port 0); throws when it has none. */
export function boundPort(address: AddressInfo | string | null): number {
  if (address === null || typeof address === 'string' || !Number.isInteger(address.port) || address.port <= 0) {
    throw new Error(`server has no TCP port (address ${JSON.stringify(address)})`);
  }
  return address.port;
}

// Ports this process was given: a port is free again the moment its probe closes, so the OS may
// offer it twice before the first taker binds it (a test's CONTROL_PORT once equalled the
// GRPC_PORT chosen just before it).
const givenPorts = new Set<number>();
/** Attempts before a port already given is returned anyway: the OS has tens of thousands to offer. */
const FREE_PORT_ATTEMPTS = 50;

/** Asks the OS for a free TCP port on 127.0.0.1, one this process was not given before. */
export async function freePort(): Promise<number> {
  let port = 0;
  for (let attempt = 0; attempt < FREE_PORT_ATTEMPTS && (port === 0 || givenPorts.has(port)); attempt++) {
    const server = net.createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = boundPort(server.address());
    await new Promise((resolve) => server.close(resolve));
  }
  givenPorts.add(port);
  return port;
}
