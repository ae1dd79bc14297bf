import { credentialMatches, type SectionCredential } from '../core/wire/auth.js';
import type { Door, DoorPass } from '../transports/contract.js';
import { MAX_CONNECTIONS_PER_LISTENER } from '../transports/kit/door.js';

// Who gets in, and how much a peer can make the receiver hold, decided in one place for every
// transport. Only the open section's transmitter gets in, on that section's transport, with the
// connections of its links, one per client (each one connection, or as many as the transport's
// connectionsPerLink asks, never more than MAX_LINKS_PER_SECTION); everything else is refused
// before any of its payload is held. So the memory held for incomplete messages is bounded by
// configuration: one image of MAX_IMAGE_SIZE per admitted connection, plus a small, fixed amount
// for each connection still proving itself, of which a listener keeps at most
// MAX_CONNECTIONS_PER_LISTENER besides the admitted ones.

/**
 * Most connections (or calls) one link holds: a transmitter opens one link per client per
 * section, and a link holds one connection unless its transport asks for more (gRPC unary's calls).
 */
export const MAX_LINKS_PER_SECTION = 16;

/**
 * Most a connection still proving itself can make a listener hold: HTTP headers before a
 * WebSocket upgrade (16 KiB), the HTTP/2 flow-control window before a gRPC call is admitted
 * (64 KiB), a ZMTP handshake, a TCP hello (40 bytes).
 */
export const UNPROVEN_CONNECTION_BYTES = 64 * 1024;

/**
 * The bound on memory held for incomplete messages over `listenerCount` listeners whose
 * connections prove themselves: the open section's `sectionConnections` admitted connections,
 * each with one image of MAX_IMAGE_SIZE under way, and every listener full of connections still
 * proving themselves.
 */
export function incompleteMessageBoundBytes(
  maxImageBytes: number,
  listenerCount: number,
  sectionConnections = 1,
): number {
  return sectionConnections * maxImageBytes + listenerCount * MAX_CONNECTIONS_PER_LISTENER * UNPROVEN_CONNECTION_BYTES;
}

/**
 * Connections `transport`'s link holds in a section of `window`: what its door admits, within MAX_LINKS_PER_SECTION.
 */
export function connectionsPerSection(
  transport: { traits: { connectionsPerLink?(window: number): number } },
  window: number,
): number {
  return Math.max(1, Math.min(MAX_LINKS_PER_SECTION, transport.traits.connectionsPerLink?.(window) ?? 1));
}

/**
 * Reports a refused connection: the transport's name, why (worded with where it came from), and how many this
 * doorkeeper has refused so far, this one included.
 */
export type RefusalSink = (transport: string, reason: string, refusedConnections: number) => void;

interface OpenSection {
  transport: string;
  credential: SectionCredential;
  /** Connections the section admits at once. */
  connections: number;
  passes: Set<{ drop: () => void }>;
}

/** The receiver's doorkeeper: which section is open, on which transport, and the links it admitted. */
export class Doorkeeper {
  private open: OpenSection | undefined;
  private refused = 0;

  constructor(private readonly onRefused: RefusalSink) {}

  /** Connections refused since the receiver started, for GET /health. */
  get refusedConnections(): number {
    return this.refused;
  }

  /**
   * Admits up to `connections` connections at once presenting `credential` on `transport` from
   * now on (connectionsPerSection); the previous section's connections are dropped.
   */
  openSection(transport: string, credential: SectionCredential, connections = 1): void {
    this.closeSection();
    this.open = { transport, credential, connections, passes: new Set() };
  }

  /** Drops every link of the open section and admits nothing until the next one opens. */
  closeSection(): void {
    const open = this.open;
    this.open = undefined;
    for (const pass of open?.passes ?? []) pass.drop();
  }

  /** The door of `transport`'s listener. */
  door(transport: string): Door {
    return {
      admit: (presented, from, drop) => this.admit(transport, presented, from, drop),
      refuse: (from, reason) => this.refuse(transport, `${from}: ${reason}`),
      sectionConnections: () => (this.open?.transport === transport ? this.open.connections : 0),
    };
  }

  private admit(
    transport: string,
    presented: string | undefined,
    from: string,
    drop: () => void,
  ): DoorPass | undefined {
    const open = this.open;
    const refusal =
      presented === undefined
        ? 'presented no credential'
        : open === undefined
          ? 'no section is open'
          : open.transport !== transport
            ? `the open section is ${open.transport}'s, not ${transport}'s`
            : !credentialMatches(presented, open.credential)
              ? "credential is not the open section's"
              : open.passes.size >= open.connections
                ? `the section already has its ${open.connections} connection${open.connections === 1 ? '' : 's'}`
                : undefined;
    if (refusal !== undefined || open === undefined) {
      this.refuse(transport, `${from}: connection refused: ${refusal}`);
      return undefined;
    }
    const pass = { drop };
    open.passes.add(pass);
    return { release: () => open.passes.delete(pass) };
  }

  private refuse(transport: string, reason: string): void {
    this.refused++;
    this.onRefused(transport, reason, this.refused);
  }
}
