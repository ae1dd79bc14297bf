import WebSocket from 'ws';
import { ackSeq, ceilingAck, headerSeq } from '../ceiling-contract.js';

// ws on both sides, as the websocket transport: each image is two binary messages, the 40-byte
// header then the image, permessage-deflate off; the receiver sends the 12-byte ack back as a
// binary message as soon as the image message is in. ws hands every message over whole, so the
// receiver never assembles anything. The client masks what it sends (RFC 6455): that copy is
// ws's own (through bufferutil), as in the transport. The transport's receiver is fastify +
// @fastify/websocket, which hands the upgrade to a ws WebSocketServer: the ceiling takes that
// server directly.

/** Path of the images' WebSocket, as the transport's. */
export const PATH = '/images';
/** How long close() waits for the peer's close handshake before dropping the connection. */
export const CLOSE_HANDSHAKE_MS = 1000;

/**
 * Pairs `socket`'s messages (header, then image), tells `arrived`, acks each image at once and hands it to `onImage`;
 * shared with websocket-push.
 */
export function receiveImages(
  socket: WebSocket,
  arrived: (seq: number) => void,
  onImage: ((seq: number, image: Buffer) => void) | undefined,
): void {
  let header: Buffer | undefined;
  socket.on('message', (data: Buffer) => {
    if (header === undefined) {
      header = data;
      return;
    }
    const seq = headerSeq(header);
    header = undefined;
    arrived(seq);
    socket.send(ceilingAck(seq));
    onImage?.(seq, data);
  });
  // ws closes the socket after any error; close() on either side ends it anyway.
  socket.on('error', () => {});
}

/** Closes `ws` with the close handshake, dropping it when the peer does not answer within CLOSE_HANDSHAKE_MS. */
export async function closeSocket(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return;
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  ws.close();
  const timer = setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS);
  await closed;
  clearTimeout(timer);
}

/**
 * Reports acks (12-byte binary messages) and the link's end on a connected `ws`; returns the close that ends it
 * quietly.
 */
export function senderSide(
  ws: WebSocket,
  onAck: (seq: number) => void,
  onFailure: (reason: string) => void,
  label: string,
): () => Promise<void> {
  let closing = false;
  ws.on('message', (data: Buffer) => onAck(ackSeq(data)));
  ws.on('error', () => {}); // reported through 'close'
  ws.on('close', (code) => {
    if (!closing) onFailure(`${label}: closed by the receiver (code ${code})`);
  });
  return () => {
    closing = true;
    return closeSocket(ws);
  };
}
