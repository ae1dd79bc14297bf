import type { SectionCredential } from '../core/wire/auth.js';

// The hostile suite (tests/integration/hostile.test.ts) holds a partial message of nearly MAX_IMAGE_SIZE open on every
// port a receiver listens on, without the secret and then with the section's credential, and checks that the receiver
// refuses or bounds it. What that message is on a transport's wire is the transport's to say, in its folder's
// hostile.ts, typed here; the suite supplies the clients that speak each wire by hand
// (tests/helpers/hostile-clients.ts), because the real libraries never send a partial message.

/** One connection held open partway through a message, until the caller or the peer ends it. */
export interface HostileConnection {
  /** Resolves true when the peer closed/reset the connection (or refused it), false if still open; never rejects. */
  closed: Promise<boolean>;
  /** True once the peer accepted the credential/handshake/upgrade (set as soon as known). */
  admitted(): boolean;
  /** Bytes of the partial message written so far (after admission). */
  sentBytes(): number;
  /** Destroys the connection. Idempotent. */
  close(): void;
  /** HTTP status of the WebSocket upgrade response (websocketPartial only). */
  status?(): number | undefined;
  /** grpc-status the server answered with, if any (grpcPartial only). */
  grpcStatus?(): number | undefined;
}

/** What every hostile client is told: where, with which credential, and how much of how large a message. */
export interface PartialMessageOptions {
  /** Port on 127.0.0.1. */
  port: number;
  /** Text credential (per protocol); undefined presents none. */
  credential?: string;
  /** Size the message claims. */
  announcedBytes: number;
  /** Bytes of it actually written (< announcedBytes), in 1 MiB chunks that respect backpressure. */
  sendBytes: number;
  /**
   * Bound on each single wait (connect, handshake reply, drain); when it passes the client resolves anyway. Default
   * 5000.
   */
  timeoutMs?: number;
  /**
   * Where a refusal is only ever a close or an answer, how long silence must last to count as admission; default
   * VERDICT_GRACE_MS. A caller that expects a refusal gives a long one: the refusal ends the wait at once, so only a
   * wrong admission costs the time, and a loaded machine's slow refusal is not taken for one.
   */
  verdictGraceMs?: number;
}

/**
 * tcpPartial's options: `hello` (or else the credential as 80 hex chars) goes first, then `header`, then the payload.
 */
export type TcpPartialOptions = PartialMessageOptions & { hello?: Buffer; header: Buffer };

/** websocketPartial's options: the upgrade request's path. */
export type WebsocketPartialOptions = PartialMessageOptions & { path: string };

/** grpcPartial's options: the method path, e.g. '/itb.ImageTransfer/Transfer'. */
export type GrpcPartialOptions = PartialMessageOptions & { path: string };

/**
 * zeromqPartial's options: `header` is the message's first part, the partial payload its second; `socketType` the ZMTP
 * peer it claims to be (DEALER unless given).
 */
export type ZeromqPartialOptions = PartialMessageOptions & { header: Buffer; socketType?: string };

/** httpPartial's options: the POST's path, content type and any further request headers. */
export type HttpPartialOptions = PartialMessageOptions & {
  path: string;
  contentType: string;
  headers?: Readonly<Record<string, string>>;
};

/** The hand-made clients a hostile.ts picks from, one per wire the transports share. */
export interface PartialMessageClients {
  tcp(options: TcpPartialOptions): Promise<HostileConnection>;
  websocket(options: WebsocketPartialOptions): Promise<HostileConnection>;
  grpc(options: GrpcPartialOptions): Promise<HostileConnection>;
  http(options: HttpPartialOptions): Promise<HostileConnection>;
  zeromq(options: ZeromqPartialOptions): Promise<HostileConnection>;
}

/** One attack on one port, as the suite makes it: the message's size and credential, and the section's frame header. */
export interface HostileAttack {
  /** Port, the credential's text (none: undefined), the size claimed, the bytes sent and the verdict grace. */
  message: PartialMessageOptions;
  /** The section's credential itself, for a wire that presents it other than as text (TCP's hello record). */
  credential: SectionCredential | undefined;
  /** The frame header announcing message.announcedBytes for the attacked section. */
  header: Buffer;
}

/** What the hostile suite sends to a transport's port: a partial message made with one of its clients. */
export type HostileClient = (attack: HostileAttack, clients: PartialMessageClients) => Promise<HostileConnection>;
