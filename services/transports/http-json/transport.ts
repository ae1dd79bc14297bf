import type { FastifyReply, FastifyRequest } from 'fastify';
import { ErrorCode, ItbError } from '../../core/errors.js';
import { ACK_STATUS_CODES, FRAME_HEADER_BYTES, type Ack, type AckStatus } from '../../core/wire/frame.js';
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

// What "HTTP+JSON" costs for binary data: each image is one HTTP/1.1 POST whose body is a JSON
// object carrying every field of the 40-byte frame header and the image in base64, and the ack
// comes back as a small JSON object. Everything else is shared with `http` (./kit/http.ts): one keep-alive
// connection per link pipelined WINDOW deep, the same door, the same limits.
//
// Copies, all forced by the format: the transmitter base64-encodes the image into a string (4/3
// of its size) and writes that into the request body's Buffer; the receiver's JSON parser
// (fastify's own) joins the body's chunks, decodes them to a string and parses it, and the image
// is then base64-decoded into a new Buffer. The strings are V8 heap objects: garbage collection
// is a large part of both sides' time (the transmitter's most of all). The transmitter writes the JSON text
// itself rather than through JSON.stringify: every value is digits or base64, which never need
// escaping, and JSON.stringify's scan of a 700 KB string cost 2 to 4 ms per 533 KB image on this
// host, more than the format's own encoding; the receiver parses it as any JSON.
//
// The header's fields travel by name: the 32-bit ones as JSON numbers, the 64-bit ones (size,
// checksum, send stamp) as decimal strings, since a JSON number loses precision above 2^53.
// The receiver checks each strictly, rebuilds the 40 header bytes and hands them to the frame
// gate, so the gate's checks (magic, version, size over MAX_IMAGE_SIZE, length) stay the one
// policy, and a bad magic arrives as a bad magic.
//
// The arrival stamp: the gate stamps when it takes the frame, after the JSON parse, the field
// checks and the base64 decode, which are part of this transport's cost and so inside every
// image's time.

/**
 * The frame header's fields in their wire order (services/core/wire/frame.ts's layout, big-endian): name, offset,
 * width.
 */
const HEADER_FIELDS = [
  ['magic', 0, 'u32'],
  ['version', 4, 'u16'],
  ['headerBytes', 6, 'u16'],
  ['sectionId', 8, 'u32'],
  ['seq', 12, 'u32'],
  ['sizeBytes', 16, 'u64'],
  ['checksum', 24, 'u64'],
  ['sentAtNs', 32, 'u64'],
] as const;
const IMAGE_FIELD = 'image';
const BODY_KEYS = [...HEADER_FIELDS.map(([name]) => name), IMAGE_FIELD].sort().join(',');
const CONTENT_TYPE = 'application/json';
/** A decimal u64 as text: no sign, no leading zero, at most 20 digits (range checked apart). */
const DECIMAL_U64_PATTERN = /^(?:0|[1-9][0-9]{0,19})$/;
const U64_MAX = 2n ** 64n - 1n;
/** Most the JSON around the image can take: nine keys and their values, with room for whitespace. */
const JSON_OVERHEAD_BYTES = 1024;

/** Characters of `sizeBytes` bytes in padded base64. */
function base64Length(sizeBytes: number): number {
  return Math.ceil(sizeBytes / 3) * 4;
}

/** The largest request body the receiver reads: an image of `maxImageBytes` in base64, and its JSON. */
export function jsonBodyLimitBytes(maxImageBytes: number): number {
  return base64Length(maxImageBytes) + JSON_OVERHEAD_BYTES;
}

/** The JSON text of one frame, written straight into the body's Buffer. */
function frameJson(header: Buffer, payload: Buffer): Buffer {
  let head = '{';
  for (const [name, offset, width] of HEADER_FIELDS) {
    const value =
      width === 'u16'
        ? header.readUInt16BE(offset)
        : width === 'u32'
          ? header.readUInt32BE(offset)
          : `"${header.readBigUInt64BE(offset)}"`;
    head += `"${name}":${value},`;
  }
  head += `"${IMAGE_FIELD}":"`;
  const image = payload.toString('base64');
  const body = Buffer.allocUnsafe(head.length + image.length + 2);
  // Every character is ASCII: latin1 writes each as the one byte it is in UTF-8.
  let at = body.write(head, 0, 'latin1');
  at += body.write(image, at, 'latin1');
  body.write('"}', at, 'latin1');
  return body;
}

/** Reads a JSON ack; throws ITB_ERR_FRAME on anything else. */
function decodeJsonAck(body: Buffer): Ack {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString());
  } catch {
    parsed = undefined;
  }
  const { sectionId, seq, status } = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<
    string,
    unknown
  >;
  if (!isUint(sectionId, 0xffff_ffff) || !isUint(seq, 0xffff_ffff) || !ACK_STATUS_CODES.includes(status as AckStatus)) {
    throw new ItbError(ErrorCode.frame, `malformed JSON ack: ${body.subarray(0, 200).toString()}`);
  }
  return { sectionId, seq, status: status as AckStatus };
}

function isUint(value: unknown, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;
}

const jsonFraming: HttpFraming = {
  contentType: CONTENT_TYPE,
  request: (header, payload) => ({ headers: [], body: frameJson(header, payload) }),
  ack: decodeJsonAck,
};

/** A parsed body's frame: the 40 header bytes rebuilt from its fields and the decoded image, or why it is not one. */
function frameOf(body: unknown): { headerBytes: Buffer; image: Buffer } | string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'body is not a JSON object';
  const fields = body as Record<string, unknown>;
  const keys = Object.keys(fields).sort().join(',');
  if (keys !== BODY_KEYS) return `body has the fields ${keys}, expected ${BODY_KEYS}`;
  const headerBytes = Buffer.alloc(FRAME_HEADER_BYTES);
  for (const [name, offset, width] of HEADER_FIELDS) {
    const value = fields[name];
    if (width === 'u64') {
      if (typeof value !== 'string' || !DECIMAL_U64_PATTERN.test(value) || BigInt(value) > U64_MAX)
        return `${name} is not a 64-bit unsigned integer in a decimal string`;
      headerBytes.writeBigUInt64BE(BigInt(value), offset);
    } else if (width === 'u32') {
      if (!isUint(value, 0xffff_ffff)) return `${name} is not a 32-bit unsigned integer`;
      headerBytes.writeUInt32BE(value, offset);
    } else {
      if (!isUint(value, 0xffff)) return `${name} is not a 16-bit unsigned integer`;
      headerBytes.writeUInt16BE(value, offset);
    }
  }
  const encoded = fields[IMAGE_FIELD];
  if (typeof encoded !== 'string' || encoded.length % 4 !== 0) return `${IMAGE_FIELD} is not padded base64`;
  const image = Buffer.from(encoded, 'base64');
  // node's decoder skips characters outside the alphabet: each skipped one shortens the image.
  // (It also takes base64url's - and _: a scan of every character would cost more than the decode.)
  const padding = encoded.endsWith('==') ? 2 : encoded.endsWith('=') ? 1 : 0;
  if (image.length !== (encoded.length / 4) * 3 - padding) return `${IMAGE_FIELD} is not padded base64`;
  return { headerBytes, image };
}

async function listen(options: ReceiverOptions): Promise<ReceiverListener> {
  const bodyLimitBytes = jsonBodyLimitBytes(options.maxImageBytes);
  return listenHttp(options, 'http-json', bodyLimitBytes, (app, connections) => {
    // fastify's own JSON parser, without its two scans of the text for "__proto__" and
    // "constructor" keys (13 % of the receiver's time at 533 KB, on top of the parse's 15 %): a
    // body is taken only with exactly the frame's keys (frameOf), so such a key is refused anyway.
    app.removeContentTypeParser(CONTENT_TYPE);
    app.addContentTypeParser(CONTENT_TYPE, { parseAs: 'string' }, app.getDefaultJsonParser('ignore', 'ignore'));
    // What the request's head can say (its type and size) is checked before the body is read.
    const checkRequest = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
      const { gate } = connections.of(request);
      const bodyBytes = contentLength(request);
      if (bodyBytes === undefined || bodyBytes > bodyLimitBytes) {
        gate.reject(
          bodyBytes === undefined
            ? 'request without a plain Content-Length'
            : `body of ${bodyBytes} bytes, over the ${bodyLimitBytes}-byte limit for an image of MAX_IMAGE_SIZE ` +
                `(${options.maxImageBytes} bytes) in JSON`,
        );
        connections.refuse(
          request,
          reply,
          bodyBytes === undefined ? 411 : 413,
          'the body is not a frame this receiver takes',
        );
        return;
      }
      if (request.headers['content-type'] !== CONTENT_TYPE) {
        gate.reject(`content-type ${request.headers['content-type'] ?? '(none)'}, expected ${CONTENT_TYPE}`);
        connections.refuse(request, reply, 415, `expected ${CONTENT_TYPE}`);
        return;
      }
      done();
    };
    app.post(
      PATH,
      {
        onRequest: checkRequest,
        // A body that does not parse: the whole of it was read, but fastify closes the connection anyway.
        errorHandler: (error, request, reply) => {
          connections.of(request).gate.reject(`body is not JSON: ${error.message}`);
          void reply.code(400).header('connection', 'close').type('text/plain').send('the body is not JSON');
        },
      },
      (request, reply) => {
        const { gate } = connections.of(request);
        const frame = frameOf(request.body);
        // The whole body was read, so the next request starts cleanly: the connection goes on.
        let ack: Ack | undefined;
        if (typeof frame === 'string') gate.reject(frame);
        else ack = gate.frame(frame.headerBytes, frame.image);
        if (ack === undefined)
          void reply.code(DROPPED_STATUS).type('text/plain').send('frame dropped (the receiver reported why)');
        else void reply.send({ sectionId: ack.sectionId, seq: ack.seq, status: ack.status } satisfies Ack);
      },
    );
  });
}

/** HTTP/1.1 POST of a JSON body (header fields, image in base64), on http's pipelined connection. */
export const httpJsonTransport: Transport = {
  name: 'http-json',
  label: 'HTTP+JSON',
  summary: {
    libraries: 'fastify, undici',
    image: "`POST` of a JSON body: the header's fields and the image in base64",
    ack: 'a JSON response',
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
    setting: {
      kind: 'port',
      envVar: 'HTTP_JSON_PORT',
      defaultPort: 8084,
      description: 'HTTP listener (JSON bodies, the image in base64)',
    },
  },
  connect: (options) => connectHttp(options, 'HTTP+JSON', jsonFraming),
  listen,
};
