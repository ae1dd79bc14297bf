import type { FastifyReply, FastifyRequest } from 'fastify';
import { decodeAck, encodeAck, FRAME_HEADER_BYTES, type Ack, type FrameHeader } from '../../core/wire/frame.js';
import type { ReceiverListener, ReceiverOptions, Transport } from '../contract.js';
import {
  connectHttp,
  contentLength,
  DROPPED_STATUS,
  HTTP_COMMAND_LANE,
  listenHttp,
  PATH,
  type HttpFraming,
} from '../kit/http.js';

// Each image is one HTTP/1.1 POST of its raw bytes (application/octet-stream, Content-Length
// set); the 40-byte frame header rides in the `x-itb-frame` request header (base64url), so the
// body is the image and nothing else, and the 12-byte ack is the response body. fastify receives,
// an undici Client sends, on one keep-alive connection per link pipelined WINDOW deep, behind the
// door (both kit/http.ts's, shared with http-json).
//
// Copies: undici writes its header text and then the image Buffer itself to the socket (writev,
// no copy of the image); node's HTTP parser hands the body over as views of the socket's chunks,
// which are the image's parts, never concatenated.
//
// The frame header is checked in a hook of its own, right after the door's and before the body is
// read: a bad one is answered 400 and the connection closed (the body's bytes would otherwise be
// read to find the next request).

/** The request header that carries the 40-byte frame header, base64url. */
export const FRAME_HEADER_FIELD = 'x-itb-frame';
/** 40 bytes in unpadded base64url: exactly 54 characters of its alphabet. */
const FRAME_HEADER_PATTERN = /^[A-Za-z0-9_-]{54}$/;

/** The framing of `http`: the header in x-itb-frame, the image as the body, the 12-byte ack back. */
const rawFraming: HttpFraming = {
  contentType: 'application/octet-stream',
  request: (header, payload) => ({ headers: [FRAME_HEADER_FIELD, header.toString('base64url')], body: payload }),
  ack: decodeAck,
};

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  // The header each request announced, for its body's parser.
  const announced = new WeakMap<FastifyRequest, FrameHeader>();
  return listenHttp(options, 'http', options.maxImageBytes, (app, connections) => {
    // Everything about a frame that its request's head can say is checked here, before the body is read.
    const checkFrame = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
      const { gate } = connections.of(request);
      const encoded = request.headers[FRAME_HEADER_FIELD];
      if (typeof encoded !== 'string' || !FRAME_HEADER_PATTERN.test(encoded)) {
        gate.reject(`${FRAME_HEADER_FIELD} is not a ${FRAME_HEADER_BYTES}-byte frame header in base64url`);
        connections.refuse(request, reply, 400, `${FRAME_HEADER_FIELD} is not a frame header`);
        return;
      }
      const header = gate.header(Buffer.from(encoded, 'base64url'));
      if (header === undefined) {
        connections.refuse(request, reply, 400, 'bad frame header (the receiver reported why)');
        return;
      }
      const bodyBytes = contentLength(request);
      if (bodyBytes !== header.sizeBytes) {
        gate.reject(
          bodyBytes === undefined
            ? 'request without a plain Content-Length'
            : `body of ${bodyBytes} bytes, its header announces ${header.sizeBytes}`,
        );
        connections.refuse(
          request,
          reply,
          bodyBytes !== undefined && bodyBytes > options.maxImageBytes ? 413 : 400,
          'the body is not the image its frame header announces',
        );
        return;
      }
      if (request.headers['content-type'] !== rawFraming.contentType) {
        gate.reject(`content-type ${request.headers['content-type'] ?? '(none)'}, expected ${rawFraming.contentType}`);
        connections.refuse(request, reply, 415, `expected ${rawFraming.contentType}`);
        return;
      }
      announced.set(request, header);
      done();
    };
    // The body as the chunks the socket delivered; node's parser stops at Content-Length, which
    // the hook matched to the header, so the last chunk completes the image exactly.
    app.addContentTypeParser(rawFraming.contentType, (request, payload, done) => {
      const header = announced.get(request);
      if (header === undefined) {
        done(new Error('no frame header was checked for this request'), undefined);
        return;
      }
      const { gate } = connections.of(request);
      const parts: Buffer[] = [];
      let haveBytes = 0;
      let settled = false;
      const settle = (err: Error | null, ack: Ack | undefined): void => {
        if (settled) return;
        settled = true;
        done(err, ack);
      };
      if (header.sizeBytes === 0) {
        settle(null, gate.take(header, parts));
        return;
      }
      payload.on('data', (chunk: Buffer) => {
        parts.push(chunk);
        haveBytes += chunk.length;
        if (haveBytes === header.sizeBytes) settle(null, gate.take(header, parts));
      });
      // The connection broke in the middle of the image: nothing to answer, nothing delivered.
      payload.on('error', (err) => settle(err, undefined));
    });
    app.post(PATH, { onRequest: checkFrame }, (request, reply) => {
      const ack = request.body as Ack | undefined;
      if (ack === undefined)
        void reply.code(DROPPED_STATUS).type('text/plain').send('frame dropped (the receiver reported why)');
      else void reply.type(rawFraming.contentType).send(encodeAck(ack));
    });
  });
}

/** HTTP/1.1 POST of the raw image on one pipelined keep-alive connection: fastify receives, undici sends. */
export const httpTransport: Transport = {
  name: 'http',
  label: 'HTTP',
  summary: {
    libraries: 'fastify (receiver), undici (transmitter)',
    image: '`POST` of the raw bytes, header in `x-itb-frame`, on one keep-alive connection pipelined `WINDOW` deep',
    ack: 'the response body',
  },
  traits: {
    baseline: false,
    commandLane: HTTP_COMMAND_LANE,
  },
  library: {
    packages: ['fastify', 'undici'],
  },
  deployment: {
    defaultRun: false,
    setting: { kind: 'port', envVar: 'HTTP_PORT', defaultPort: 8083, description: 'HTTP listener (raw image bodies)' },
  },
  connect: (options) => connectHttp(options, 'HTTP', rawFraming),
  listen,
};
