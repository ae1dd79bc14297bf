import type http2 from 'node:http2';

// HTTP/2 flow control as both gRPC libraries' transports and ceiling pairs set it. A receiver that
// keeps HTTP/2's 65,535-byte default makes a large image wait a round trip for every 64 KiB it
// sends (a window update), which on a real link costs more than the bytes themselves.

/** HTTP/2's default window, and the least one we set: RFC 9113's 65,535 bytes. */
export const DEFAULT_WINDOW_BYTES = 65_535;
/** HTTP/2's largest window (RFC 9113, 6.9.1). */
export const MAX_WINDOW_BYTES = 2 ** 31 - 1;
/** gRPC's prefix before every message: a compressed flag and a 4-byte length. */
export const GRPC_PREFIX_BYTES = 5;

/**
 * The receive window (stream and connection) that lets `window` messages of `messageBytes` be in
 * flight at once, so no image waits a round trip for a WINDOW_UPDATE; within HTTP/2's limits.
 */
export function receiveWindowBytes(window: number, messageBytes: number): number {
  return Math.min(MAX_WINDOW_BYTES, Math.max(DEFAULT_WINDOW_BYTES, window * (messageBytes + GRPC_PREFIX_BYTES)));
}

/**
 * Opens `session`'s receive windows to `bytes`: SETTINGS_INITIAL_WINDOW_SIZE for every stream (HTTP/2
 * applies a new one to the streams already open) and the connection's own window.
 */
export function openReceiveWindows(session: http2.Http2Session, bytes: number): void {
  if (session.destroyed || session.closed) return;
  session.settings({ initialWindowSize: bytes });
  session.setLocalWindowSize(bytes);
}
