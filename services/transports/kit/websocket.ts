import type WebSocket from 'ws';
import { encodeAck, type FrameHeader } from '../../core/wire/frame.js';
import type { FrameGate } from './gate.js';
import { lazyLibrary } from './library.js';
import type { WriteFrame } from './send-queue.js';

// What the WebSocket transports (websocket: the transmitter dials, websocket-push: the receiver
// dials) share: the ws library, the images' path, and how a side writes an image as two binary
// messages, pairs them on arrival and closes a socket. Each transport file keeps who dials whom
// and who lets whom in.

/**
 * ws (its WebSocket class, which also carries WebSocketServer), loaded when a WebSocket transport is first used
 * (kit/library.ts).
 */
export const wsLibrary = lazyLibrary<typeof WebSocket & Pick<typeof import('ws'), 'WebSocketServer'>>('ws');

/** Path of the images' WebSocket (both transports'). */
export const PATH = '/images';
/** A close code from RFC 6455: the peer sent something this endpoint does not accept. */
export const POLICY_VIOLATION = 1008;
/** How long close() waits for the peer's close handshake before dropping the connection. */
export const CLOSE_HANDSHAKE_MS = 1000;

/**
 * A SendQueue's writer for `ws`: header and image as two binary messages, held back while ws holds over
 * `highWaterBytes` unsent.
 */
export function imageWriter(ws: WebSocket, highWaterBytes: number): WriteFrame {
  return (header, payload) => {
    ws.send(header, { binary: true });
    if (ws.bufferedAmount + payload.length <= highWaterBytes) {
      ws.send(payload, { binary: true });
      return undefined;
    }
    // Settles once this image is written to the socket (or the socket is gone: 'close' reports that).
    return new Promise<void>((resolve) => ws.send(payload, { binary: true }, () => resolve()));
  };
}

/** Closes `ws` with the close handshake, dropping it when the peer does not answer within CLOSE_HANDSHAKE_MS. */
export async function closeSocket(ws: WebSocket): Promise<void> {
  if (ws.readyState === wsLibrary().CLOSED) return;
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  ws.close();
  const timer = setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS);
  await closed;
  clearTimeout(timer);
}

/** Pairs `socket`'s binary messages (header, then image) through `gate` and sends each ack back at once. */
export function receiveImages(socket: WebSocket, gate: FrameGate): void {
  let header: FrameHeader | undefined;
  // After a text message or a bad header, header and image messages can no longer be paired.
  const refuse = (): void => socket.close(POLICY_VIOLATION, 'bad frame');
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    if (!isBinary) {
      gate.reject('text message where a binary frame was expected');
      refuse();
      return;
    }
    if (header === undefined) {
      header = gate.header(data);
      if (header === undefined) refuse();
      return;
    }
    // A dropped image leaves the message pairing intact: the connection goes on.
    const ack = gate.take(header, data);
    header = undefined;
    if (ack !== undefined) socket.send(encodeAck(ack));
  });
  // ws reports oversize messages (over maxPayload) and protocol errors here, then closes.
  socket.on('error', (err) => gate.reject(err.message));
}
