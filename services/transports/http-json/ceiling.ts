import { ackSeq, CEILING_HEADER_BYTES, ceilingAck, headerSeq, type CeilingPair } from '../ceiling-contract.js';
import { connectHttp, PATH, receiveHttp, type HttpCeilingFraming } from '../kit/ceiling-http.js';

// The http pair with a JSON body, as the http-json transport: each image is one POST of
// {"header": <the 40 bytes in base64>, "image": <the image in base64>}, parsed by fastify's own
// JSON parser, and the ack comes back as {"ack": <the 12 bytes in base64>}; one undici connection
// pipelined WINDOW deep. The transport sends the header's fields by name; that spelling is its
// frame format's, so here the header is one base64 field. The copies are the format's and the
// transport's: the sender encodes the image to a base64 string and writes the JSON text into one
// Buffer itself (every character is ASCII, nothing needs escaping), the receiver parses the
// text and decodes the image into a new Buffer.

const CONTENT_TYPE = 'application/json';
/** undici's request headers, the same for every image. */
const REQUEST_HEADERS = ['content-type', CONTENT_TYPE];
/** Room for the JSON around the two base64 strings. */
const JSON_OVERHEAD_BYTES = 64;

/** Characters of `bytes` bytes in padded base64. */
function base64Length(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

const jsonFraming: HttpCeilingFraming = {
  label: 'http-json',
  request(header, image) {
    const head = `{"header":"${header.toString('base64')}","image":"`;
    const encoded = image.toString('base64');
    const body = Buffer.allocUnsafe(head.length + encoded.length + 2);
    // Every character is ASCII: latin1 writes each as the one byte it is in UTF-8.
    let at = body.write(head, 0, 'latin1');
    at += body.write(encoded, at, 'latin1');
    body.write('"}', at, 'latin1');
    return { headers: REQUEST_HEADERS, body };
  },
  ackSeq: (body) => ackSeq(Buffer.from((JSON.parse(body.toString()) as { ack: string }).ack, 'base64')),
};

/** The http-json transport's ceiling: JSON POSTs (image in base64) from an undici Client to fastify. */
export const httpJsonCeiling: CeilingPair = {
  transport: 'http-json',
  how:
    'undici Client.dispatch(POST JSON {header, image} in base64) pipelined WINDOW deep → fastify JSON route; ack ' +
    'as a JSON answer',
  receive: (options) =>
    receiveHttp(
      options,
      base64Length(options.maxImageBytes) + base64Length(CEILING_HEADER_BYTES) + JSON_OVERHEAD_BYTES,
      (app) => {
        // fastify's own parser without its scans for "__proto__" and "constructor" keys, as the transport's.
        app.removeContentTypeParser(CONTENT_TYPE);
        app.addContentTypeParser(CONTENT_TYPE, { parseAs: 'string' }, app.getDefaultJsonParser('ignore', 'ignore'));
        app.post(PATH, (request, reply) => {
          const { header, image } = request.body as { header: string; image: string };
          const seq = headerSeq(Buffer.from(header, 'base64'));
          // The image in hand is the decoded one: decoding is the format's cost, paid whether a test looks or not.
          const bytes = Buffer.from(image, 'base64');
          options.arrived(seq);
          void reply.send({ ack: ceilingAck(seq).toString('base64') });
          options.onImage?.(seq, bytes);
        });
      },
    ),
  connect: async (options) => connectHttp(options, jsonFraming),
};
