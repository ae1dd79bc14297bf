import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { hostPort } from '../../shared/net.js';
import { CEILING_HEADER_BYTES, type CeilingPair } from '../ceiling-contract.js';
import { PATH, receiveImages, senderSide } from '../kit/ceiling-websocket.js';

/** The websocket transport's ceiling: a ws client sending to a ws WebSocketServer. */
export const websocketCeiling: CeilingPair = {
  transport: 'websocket',
  how: 'ws: client ws.send(header), ws.send(image) (masked) → WebSocketServer; acks ws.send(ack) back',
  async receive(options) {
    const wss = new WebSocketServer({
      host: options.bindHost,
      port: options.port,
      path: PATH,
      perMessageDeflate: false,
      maxPayload: options.maxImageBytes + CEILING_HEADER_BYTES,
    });
    await new Promise<void>((resolve, reject) => {
      wss.once('listening', resolve);
      wss.once('error', reject);
    });
    wss.on('connection', (socket) => receiveImages(socket, options.arrived, options.onImage));
    return {
      port: (wss.address() as AddressInfo).port,
      async close() {
        // ws's close() leaves open connections alone: end them first, then the server closes at once.
        for (const socket of wss.clients) socket.terminate();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
      },
    };
  },
  async connect(options) {
    const ws = new WebSocket(`ws://${hostPort(options.host, options.port)}${PATH}`, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.removeAllListeners('error');
    const close = senderSide(ws, options.onAck, options.onFailure, 'websocket');
    return {
      send(_seq, header, image) {
        ws.send(header);
        ws.send(image);
      },
      close,
    };
  },
};
