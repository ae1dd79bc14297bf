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

/** Asks the OS for a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = boundPort(server.address());
  await new Promise((resolve) => server.close(resolve));
  return port;
}
