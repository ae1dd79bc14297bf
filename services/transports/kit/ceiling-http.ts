import type { FastifyInstance } from 'fastify';
import { fastify } from 'fastify';
import { Client } from 'undici';
import { hostPort } from '../../shared/net.js';
import type {
  CeilingConnectOptions,
  CeilingReceiveOptions,
  CeilingReceiver,
  CeilingSender,
} from '../ceiling-contract.js';
import { answerCollector, joined } from './http.js';

// fastify receives and undici sends, as the http transport: each image is one HTTP/1.1 POST of its
// raw bytes (application/octet-stream), the 40-byte header in the x-itb-frame request header
// (base64url), the 12-byte ack as the response body. One keep-alive connection, its requests
// pipelined WINDOW deep (undici pipelines only requests marked idempotent). undici writes the image
// Buffer itself (no copy); node's parser hands the body over as views of the socket's chunks,
// which the receiver only counts unless a test wants the image (onImage).

/** Path every image is posted to, as the transport's. */
export const PATH = '/images';
/** The request header that carries the 40-byte header, base64url, as the transport's. */
export const FRAME_HEADER_FIELD = 'x-itb-frame';
export const CONTENT_TYPE = 'application/octet-stream';

/** How one HTTP pair puts an image in a request and reads its ack from a 200 answer. */
export interface HttpCeilingFraming {
  /** The transport's name, for failure messages. */
  label: string;
  /** The request's headers, as undici's flat [name, value, ...] list, and its body. */
  request(header: Buffer, image: Buffer): { headers: string[]; body: Buffer };
  /** The seq of the ack in a 200 answer's whole body. */
  ackSeq(body: Buffer): number;
}

/** A fastify receiver on the options' address with `routes` added; close() drops its connections. */
export async function receiveHttp(
  options: CeilingReceiveOptions,
  bodyLimit: number,
  routes: (app: FastifyInstance) => void,
): Promise<CeilingReceiver> {
  // forceCloseConnections: close() ends keep-alive connections at once instead of waiting them out.
  const app = fastify({ logger: false, bodyLimit, forceCloseConnections: true });
  routes(app);
  await app.listen({ host: options.bindHost, port: options.port });
  const address = app.server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : options.port,
    close: () => app.close(),
  };
}

/**
 * An undici Client to the receiver, one connection pipelined `window` deep, POSTing each image as `framing` shapes it.
 */
export function connectHttp(options: CeilingConnectOptions, framing: HttpCeilingFraming): CeilingSender {
  const client = new Client(`http://${hostPort(options.host, options.port)}`, { pipelining: options.window });
  let closing = false;
  const fail = (reason: string): void => {
    if (!closing) options.onFailure(reason);
  };
  client.on('disconnect', (_origin, _targets, err) => fail(`${framing.label}: connection closed (${err.message})`));
  // One handler for every request: HTTP/1.1 answers a connection's requests one after the other,
  // in order, so one answer's state is never mixed with another's, and no closure is made per image.
  const answer = answerCollector(
    (status, parts) => {
      const body = joined(parts);
      if (status !== 200) return fail(`${framing.label}: the receiver answered HTTP ${status}: ${body.toString()}`);
      let seq: number;
      try {
        seq = framing.ackSeq(body);
      } catch (err) {
        return fail(`${framing.label}: malformed ack: ${(err as Error).message}`);
      }
      options.onAck(seq);
    },
    (err) => fail(`${framing.label}: request failed: ${err.message}`),
  );
  return {
    send(_seq, header, image) {
      const { headers, body } = framing.request(header, image);
      client.dispatch({ path: PATH, method: 'POST', idempotent: true, headers, body }, answer);
    },
    async close() {
      closing = true;
      await client.destroy();
    },
  };
}
