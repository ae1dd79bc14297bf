import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket, { WebSocketServer } from 'ws';
import { ErrorCode, ItbError } from '../../core/errors.js';
import { hostPort } from '../../shared/net.js';
import {
  CEILING_ACK_BYTES,
  CEILING_HEADER_BYTES,
  type CeilingPair,
  type CeilingReceiveOptions,
} from '../ceiling-contract.js';
import { closeSocket, PATH, receiveImages, senderSide } from '../kit/ceiling-websocket.js';

// ws the other way round, as the websocket-push transport: the sender runs the WebSocketServer
// and the receiver dials it, so the images go server → client unmasked (ws writes each frame's
// few header bytes and the caller's image with no copy). Otherwise as the websocket pair: two
// binary messages per image, header then image, permessage-deflate off, the 12-byte ack back as a
// binary message (masked by the receiver, as a client must).

/**
 * Bound on the sender's wait for the receiver to dial in, and on the receiver's dialling: as the bench's start bound.
 */
const DIAL_IN_MS = 15_000;
/** Pause between the receiver's dial attempts while the sender's server is not up yet. */
const DIAL_RETRY_MS = 25;

/**
 * One dial attempt: the open WebSocket, already receiving, or the attempt's error. The images'
 * handler goes on before the open: the sender starts as soon as it has the connection, so its
 * first frames can come in the same read as the upgrade's answer and ws emits them right after 'open'.
 */
function dial(
  url: string,
  maxPayload: number,
  arrived: CeilingReceiveOptions['arrived'],
  onImage: CeilingReceiveOptions['onImage'],
): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload });
  receiveImages(ws, arrived, onImage);
  return new Promise((resolve, reject) => {
    const refused = (err: Error): void => {
      ws.terminate();
      reject(err);
    };
    ws.once('error', refused);
    ws.once('open', () => {
      ws.off('error', refused);
      resolve(ws);
    });
  });
}

/** The websocket-push transport's ceiling: the sender's WebSocketServer pushes to the receiver that dialled it. */
export const websocketPushCeiling: CeilingPair = {
  transport: 'websocket-push',
  how:
    "ws: the receiver dials the sender's WebSocketServer, which pushes ws.send(header), ws.send(image) unmasked; " +
    'acks ws.send(ack) back',
  senderListens: true,
  async receive(options) {
    const url = `ws://${hostPort(options.bindHost, options.port)}${PATH}`;
    const deadline = Date.now() + DIAL_IN_MS;
    let ws: WebSocket | undefined;
    while (ws === undefined) {
      try {
        ws = await dial(url, options.maxImageBytes + CEILING_HEADER_BYTES, options.arrived, options.onImage);
      } catch (err) {
        // The sender's server is not up yet (refused): try again until the bound.
        if (Date.now() + DIAL_RETRY_MS > deadline)
          throw new ItbError(
            ErrorCode.transport,
            `websocket-push: no server at ${url} within ${DIAL_IN_MS} ms: ${(err as Error).message}`,
          );
        await sleep(DIAL_RETRY_MS);
      }
    }
    const open = ws;
    return { port: options.port, close: () => closeSocket(open) };
  },
  async connect(options) {
    // Acks are all the receiver sends.
    const wss = new WebSocketServer({
      host: options.host,
      port: options.port,
      path: PATH,
      perMessageDeflate: false,
      maxPayload: CEILING_ACK_BYTES,
      clientTracking: false,
    });
    const closeServer = (): Promise<void> => new Promise((resolve) => wss.close(() => resolve()));
    let ws: WebSocket;
    try {
      ws = await new Promise<WebSocket>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`websocket-push: no receiver dialled in within ${DIAL_IN_MS} ms`)),
          DIAL_IN_MS,
        );
        wss.once('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
        // The link has one receiver: any later connection is turned away.
        let taken = false;
        wss.on('connection', (socket) => {
          if (taken) return socket.terminate();
          taken = true;
          clearTimeout(timer);
          resolve(socket);
        });
      });
    } catch (err) {
      await closeServer();
      throw err;
    }
    const closeLink = senderSide(ws, options.onAck, options.onFailure, 'websocket-push');
    return {
      send(_seq, header, image) {
        ws.send(header);
        ws.send(image);
      },
      async close() {
        await closeLink();
        await closeServer();
      },
    };
  },
};
