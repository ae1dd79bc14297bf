import { ackSeq, CEILING_HEADER_BYTES, ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';
import {
  connectHttp,
  CONTENT_TYPE,
  FRAME_HEADER_FIELD,
  type HttpCeilingFraming,
  PATH,
  receiveHttp,
} from '../kit/ceiling-http.js';

/** A raw-body POST: the image as the body, the header in x-itb-frame; the ack is the response body. */
const rawFraming: HttpCeilingFraming = {
  label: 'http',
  request: (header, image) => ({
    headers: ['content-type', CONTENT_TYPE, FRAME_HEADER_FIELD, header.toString('base64url')],
    body: image,
  }),
  ackSeq,
};

/** The http transport's ceiling: raw-body POSTs from an undici Client to fastify. */
export const httpCeiling: CeilingPair = {
  transport: 'http',
  how:
    'undici Client.dispatch(POST raw image, x-itb-frame header) pipelined WINDOW deep → fastify raw-body route; ' +
    'ack as the response body',
  receive: (options) =>
    receiveHttp(options, options.maxImageBytes + CEILING_HEADER_BYTES, (app) => {
      // The body as the socket's chunks, counted to its Content-Length (undici always sets one for
      // a Buffer), kept only when a test wants the image.
      app.addContentTypeParser(CONTENT_TYPE, (request, payload, done) => {
        let remaining = Number(request.headers['content-length']);
        const parts: Buffer[] | undefined = options.onImage ? [] : undefined;
        if (remaining === 0) return done(null, parts);
        payload.on('data', (chunk: Buffer) => {
          parts?.push(chunk);
          remaining -= chunk.length;
          if (remaining === 0) done(null, parts);
        });
        payload.on('error', (err) => done(err, undefined));
      });
      app.post(PATH, (request, reply) => {
        const seq = headerSeq(Buffer.from(request.headers[FRAME_HEADER_FIELD] as string, 'base64url'));
        options.arrived(seq);
        void reply.send(ceilingAck(seq));
        const parts = request.body as Buffer[] | undefined;
        if (parts !== undefined) options.onImage?.(seq, Buffer.concat(parts));
      });
    }),
  connect: async (options) => connectHttp(options, rawFraming),
};
