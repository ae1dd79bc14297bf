import { randomBytes } from 'node:crypto';
import diagnosticsChannel from 'node:diagnostics_channel';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import type { Door, ReceivedFrame, ReceiverListener, Transport } from '../../services/transports/contract.js';
import { httpJsonTransport } from '../../services/transports/http-json/transport.js';
import { FRAME_HEADER_FIELD, httpTransport } from '../../services/transports/http/transport.js';
import { PATH } from '../../services/transports/kit/http.js';
import {
  eventually,
  openPair,
  stampedHeader,
  testDoor,
  testLog,
  transferThrough,
  type TestDoor,
} from '../helpers/harness.js';

// Only what is PARTICULAR to the HTTP transports. The contract every transport shares (delivery of
// every size, in order; handles after close; connect() timeout; bad magic and oversize headers; a
// delivery that throws; a receiver that goes away; connecting before the receiver listens) is
// tested for both by the shared suite in transports.test.ts. Here: the door in front of every
// request (before its body is read), the frame header checked before the body, bodies over
// MAX_IMAGE_SIZE refused unread, one pipelined connection per link, a silent connection closed,
// and http-json's strict field checks. Raw sockets play the peer where a real client would
// refuse to misbehave.

const MIB = 1024 * 1024;

/**
 * A listener of `transport` behind a door open for section 7, recording what it delivered and rejected, and whom the
 * door admitted.
 */
async function listenFor(
  transport: Transport,
  options: { maxImageBytes?: number; idleTimeoutMs?: number; window?: number } = {},
): Promise<{
  listener: ReceiverListener;
  section: TestDoor;
  delivered: ReceivedFrame[];
  rejects: string[];
  admitted: string[];
}> {
  const section = testDoor(transport.name, 7, options.idleTimeoutMs ?? 10_000, options.window ?? 64);
  const delivered: ReceivedFrame[] = [];
  const rejects: string[] = [];
  const admitted: string[] = [];
  const door: Door = {
    admit(presented, from, drop) {
      const pass = section.door.admit(presented, from, drop);
      if (pass !== undefined) admitted.push(from);
      return pass;
    },
    refuse: (from, reason) => section.door.refuse(from, reason),
    sectionConnections: () => section.door.sectionConnections(),
  };
  const listener = await transport.listen({
    host: '127.0.0.1',
    bindHost: '127.0.0.1',
    port: 0,
    url: undefined,
    maxImageBytes: options.maxImageBytes ?? MIB,
    log: testLog,
    door,
    idleTimeoutMs: section.idleTimeoutMs,
    deliver(frame) {
      delivered.push(frame);
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'accepted' };
    },
    onReject: (reason) => rejects.push(reason),
  });
  opened.push(listener);
  return { listener, section, delivered, rejects, admitted };
}

const opened: ReceiverListener[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.close()));
});

/** What a raw peer got back: the bytes the receiver answered, and whether the receiver closed the connection. */
interface RawOutcome {
  answer: string;
  closedByReceiver: boolean;
}

/**
 * Opens a raw connection and writes each of `writes`, the next once an answer to the previous one
 * came (so each request is read on its own); then waits up to `closeWaitMs` for the receiver to
 * close. The connection is always destroyed before it returns.
 */
async function rawExchange(port: number, writes: (string | Buffer)[], closeWaitMs = 300): Promise<RawOutcome> {
  const socket = net.connect({ host: '127.0.0.1', port });
  socket.on('error', () => {});
  let answer = '';
  let closedByReceiver = false;
  socket.on('data', (chunk: Buffer) => {
    answer += chunk.toString('latin1');
  });
  socket.on('close', () => {
    closedByReceiver = true;
  });
  try {
    for (const chunk of writes) {
      if (closedByReceiver) break;
      const answeredBefore = statuses(answer).length;
      socket.write(chunk);
      await eventually(() => closedByReceiver || statuses(answer).length > answeredBefore, 3000);
    }
    await eventually(() => closedByReceiver, closeWaitMs).catch(() => {});
    return { answer, closedByReceiver };
  } finally {
    socket.destroy();
  }
}

/** The head of a POST to PATH. */
function postHead(fields: Record<string, string>): string {
  return `POST ${PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\n${Object.entries(fields)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;
}

/** The status codes of every answer in `answer`, in order. */
function statuses(answer: string): number[] {
  return [...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
}

for (const transport of [httpTransport, httpJsonTransport]) {
  describe(`${transport.name} door`, () => {
    it('refuses a request without a credential, or with a wrong one, with 401 before reading its body; nothing is ' +
      'delivered', async () => {
      const { listener, section, delivered, rejects } = await listenFor(transport);
      const image = randomBytes(1000);
      const frameFields: Record<string, string> =
        transport === httpTransport
          ? {
              [FRAME_HEADER_FIELD]: stampedHeader(image, 0).toString('base64url'),
              'content-type': 'application/octet-stream',
            }
          : { 'content-type': 'application/json' };
      for (const authorization of [undefined, 'Bearer 7.wrong-key', `Bearer ${section.credential.text}x`]) {
        // It announces a 1 MB body and sends 100 bytes of it: an answer at all proves the receiver did not wait for the
        // rest.
        const head = postHead({
          ...frameFields,
          'content-length': '1000000',
          ...(authorization === undefined ? {} : { authorization }),
        });
        const outcome = await rawExchange(listener.port, [Buffer.concat([Buffer.from(head), randomBytes(100)])]);
        expect(statuses(outcome.answer)).toEqual([401]);
        expect(outcome.closedByReceiver).toBe(true);
      }
      expect(section.refusals).toHaveLength(3);
      expect(section.refusals[0]).toMatch(
        new RegExp(`^${transport.name} from 127\\.0\\.0\\.1:\\d+: connection refused: presented no credential$`),
      );
      expect(section.refusals[1]).toMatch(/connection refused: credential is not the open section's/);
      expect(section.refusals[2]).toMatch(/connection refused: credential is not the open section's/);
      expect(delivered).toEqual([]);
      expect(rejects).toEqual([]);
    }, 10_000);

    it('refuses and closes an admitted connection whose later request presents another credential', async () => {
      const { listener, section } = await listenFor(transport);
      const probe = (authorization: string): string =>
        `GET ${PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${authorization}\r\n\r\n`;
      const outcome = await rawExchange(listener.port, [
        probe(`Bearer ${section.credential.text}`),
        probe('Bearer 7.another'),
      ]);
      expect(statuses(outcome.answer)).toEqual([204, 401]);
      expect(outcome.closedByReceiver).toBe(true);
      expect(section.refusals).toEqual([
        expect.stringMatching(/presented another credential than the connection was admitted with/),
      ]);
    }, 10_000);

    it("admits one connection per link: a second one with the section's credential is refused while the first is " +
      'open', async () => {
      const pair = await openPair(transport, { window: 8 });
      try {
        const outcome = await rawExchange(pair.listener.port, [
          `GET ${PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${pair.section.credential.text}\r\n\r\n`,
        ]);
        expect(statuses(outcome.answer)).toEqual([401]);
        expect(pair.section.refusals).toEqual([expect.stringMatching(/the section already has its 1 connection/)]);
        // The link itself goes on.
        const image = randomBytes(100);
        pair.link.send(stampedHeader(image, 0), image);
        await eventually(() => pair.seen.acks.length === 1);
        expect(pair.seen.failures).toEqual([]);
      } finally {
        await pair.close();
      }
    }, 10_000);

    it("connect() with another section's credential is refused at once with ITB_ERR_REFUSED, not retried until the " +
      'timeout', async () => {
      const { listener, section } = await listenFor(transport);
      const startedMs = Date.now();
      const outcome = await transport
        .connect({
          host: '127.0.0.1',
          bindHost: '127.0.0.1',
          port: listener.port,
          url: undefined,
          maxImageBytes: MIB,
          log: testLog,
          connectTimeoutMs: 8000,
          imageBytes: 1000,
          window: 4,
          credential: testDoor(transport.name, 8).credential,
          onAck() {},
          onFailure() {},
        })
        .then(
          () => new Error('connect() resolved'),
          (err: unknown) => err,
        );
      expect(outcome).toMatchObject({
        code: ErrorCode.refused,
        message: expect.stringMatching(/answered HTTP 401: this connection does not belong to the open section/),
      });
      expect(Date.now() - startedMs).toBeLessThan(4000);
      expect(section.refusals).toEqual([expect.stringMatching(/credential is not the open section's/)]);
    }, 10_000);

    it('closes a connection silent for IMAGE_TIMEOUT_MS and reports it', async () => {
      const { listener, section } = await listenFor(transport, { idleTimeoutMs: 300 });
      const socket = net.connect({ host: '127.0.0.1', port: listener.port });
      socket.on('error', () => {});
      let closed = false;
      socket.once('close', () => {
        closed = true;
      });
      try {
        await eventually(() => closed, 5000);
        expect(section.refusals).toEqual([
          expect.stringMatching(/nothing sent or received for 300 ms \(IMAGE_TIMEOUT_MS\): connection closed$/),
        ]);
      } finally {
        socket.destroy();
      }
    }, 10_000);
  });
}

describe('http transport', () => {
  it('rejects and reports a bad x-itb-frame header before reading the body, and closes the connection', async () => {
    const { listener, section, delivered, rejects } = await listenFor(httpTransport);
    const auth = {
      authorization: `Bearer ${section.credential.text}`,
      'content-type': 'application/octet-stream',
      'content-length': '1000',
    };
    const badMagic = stampedHeader(randomBytes(1000), 0);
    badMagic.writeUInt32BE(0xdeadbeef, 0);
    const cases: [Record<string, string>, RegExp][] = [
      [{}, /x-itb-frame is not a 40-byte frame header in base64url$/],
      [{ [FRAME_HEADER_FIELD]: 'not a header' }, /x-itb-frame is not a 40-byte frame header in base64url$/],
      [{ [FRAME_HEADER_FIELD]: badMagic.toString('base64url') }, /bad frame magic 0xdeadbeef$/],
    ];
    for (const [fields, reason] of cases) {
      rejects.length = 0;
      // Only the head is sent: the answer comes without the body.
      const outcome = await rawExchange(listener.port, [postHead({ ...auth, ...fields })]);
      expect(statuses(outcome.answer)).toEqual([400]);
      expect(outcome.closedByReceiver).toBe(true);
      expect(rejects).toEqual([expect.stringMatching(new RegExp(`^http from 127\\.0\\.0\\.1:\\d+: ${reason.source}`))]);
    }
    expect(delivered).toEqual([]);
  }, 10_000);

  it('refuses a body over MAX_IMAGE_SIZE, or other than its header announces, before reading it', async () => {
    const maxImageBytes = 64 * 1024;
    const { listener, section, delivered, rejects } = await listenFor(httpTransport, { maxImageBytes });
    const image = randomBytes(1000);
    const auth = { authorization: `Bearer ${section.credential.text}`, 'content-type': 'application/octet-stream' };
    const cases: [Record<string, string>, number, RegExp][] = [
      // The header announces more than MAX_IMAGE_SIZE.
      [
        {
          [FRAME_HEADER_FIELD]: stampedHeader(image, 0, { sizeBytes: maxImageBytes + 1 }).toString('base64url'),
          'content-length': String(maxImageBytes + 1),
        },
        400,
        /over MAX_IMAGE_SIZE \(65536 bytes\)$/,
      ],
      // The header is fine, the body is over MAX_IMAGE_SIZE.
      [
        { [FRAME_HEADER_FIELD]: stampedHeader(image, 0).toString('base64url'), 'content-length': String(100 * MIB) },
        413,
        /body of 104857600 bytes, its header announces 1000$/,
      ],
      // A chunked body, whose length nothing bounds in advance.
      [
        { [FRAME_HEADER_FIELD]: stampedHeader(image, 0).toString('base64url'), 'transfer-encoding': 'chunked' },
        400,
        /request without a plain Content-Length$/,
      ],
    ];
    for (const [fields, status, reason] of cases) {
      rejects.length = 0;
      const outcome = await rawExchange(listener.port, [postHead({ ...auth, ...fields })]);
      expect(statuses(outcome.answer)).toEqual([status]);
      expect(outcome.closedByReceiver).toBe(true);
      expect(rejects).toEqual([expect.stringMatching(reason)]);
    }
    expect(delivered).toEqual([]);
    // Exactly MAX_IMAGE_SIZE passes.
    const outcome = await transferThrough(httpTransport, [randomBytes(maxImageBytes)], { window: 1, maxImageBytes });
    expect(outcome.rejects).toEqual([]);
    expect(outcome.acks).toEqual([{ sectionId: 7, seq: 0, status: 'accepted' }]);
  }, 10_000);

  it('pipelines a window of requests on one connection: ' +
    'written before any answer, all from one port, in order', async () => {
    const written: unknown[] = [];
    const events: string[] = [];
    const onSent = (message: unknown): void => {
      written.push((message as { socket: unknown }).socket);
      events.push('sent');
    };
    const onAnswered = (): void => {
      events.push('answered');
    };
    const { listener, section, delivered, admitted } = await listenFor(httpTransport, { window: 8 });
    const seqs: number[] = [];
    const failures: Error[] = [];
    const link = await httpTransport.connect({
      host: '127.0.0.1',
      bindHost: '127.0.0.1',
      port: listener.port,
      url: undefined,
      maxImageBytes: MIB,
      log: testLog,
      connectTimeoutMs: 5000,
      imageBytes: 545_792,
      window: 8,
      credential: section.credential,
      onAck: (ack) => seqs.push(ack.seq),
      onFailure: (err) => failures.push(err),
    });
    diagnosticsChannel.subscribe('undici:client:sendHeaders', onSent);
    diagnosticsChannel.subscribe('undici:request:headers', onAnswered);
    try {
      // 533 KB images, 5 windows of 8: the size at which several connections side by side deliver out of order.
      const images = Array.from({ length: 40 }, () => randomBytes(545_792));
      for (let window = 0; window < 5; window++) {
        for (let seq = window * 8; seq < window * 8 + 8; seq++)
          link.send(stampedHeader(images[seq]!, seq), images[seq]!);
        await eventually(() => seqs.length === window * 8 + 8);
        // undici writes a window's requests in one go (after one check of the idle connection), before any answer is
        // read.
        expect(events.slice(window * 16, window * 16 + 8)).toEqual(Array.from({ length: 8 }, () => 'sent'));
      }
      expect(failures).toEqual([]);
      expect(new Set(written).size).toBe(1);
      expect(admitted).toHaveLength(1);
      expect(delivered.map((f) => f.header.seq)).toEqual(images.map((_, i) => i));
      expect(seqs).toEqual(images.map((_, i) => i));
    } finally {
      diagnosticsChannel.unsubscribe('undici:client:sendHeaders', onSent);
      diagnosticsChannel.unsubscribe('undici:request:headers', onAnswered);
      await link.close();
    }
  }, 10_000);

  it('fails the link once, with the status, when the receiver refuses it mid-way (the section ended)', async () => {
    const pair = await openPair(httpTransport, { window: 4 });
    try {
      pair.section.doorkeeper.closeSection();
      await eventually(() => pair.seen.failures.length > 0);
      expect(pair.seen.failures).toHaveLength(1);
      expect(pair.seen.failures[0]?.message).toMatch(/connection closed by the receiver/);
    } finally {
      await pair.close();
    }
  }, 10_000);
});

describe('http-json transport', () => {
  /** A JSON frame body as the transmitter writes it, with `changes` applied. */
  function jsonFrame(image: Buffer, seq: number, changes: Record<string, unknown> = {}): string {
    const header = stampedHeader(image, seq);
    return JSON.stringify({
      magic: header.readUInt32BE(0),
      version: header.readUInt16BE(4),
      headerBytes: header.readUInt16BE(6),
      sectionId: header.readUInt32BE(8),
      seq: header.readUInt32BE(12),
      sizeBytes: String(header.readBigUInt64BE(16)),
      checksum: String(header.readBigUInt64BE(24)),
      sentAtNs: String(header.readBigUInt64BE(32)),
      image: image.toString('base64'),
      ...changes,
    });
  }

  it('checks every field strictly: a bad one is reported and answered 422, and the connection goes on', async () => {
    const { listener, section, delivered, rejects } = await listenFor(httpJsonTransport);
    const image = randomBytes(1000);
    const request = (body: string): string =>
      postHead({
        authorization: `Bearer ${section.credential.text}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      }) + body;
    const cases: [string, RegExp][] = [
      [jsonFrame(image, 0, { sizeBytes: 1000 }), /sizeBytes is not a 64-bit unsigned integer in a decimal string$/],
      [
        jsonFrame(image, 0, { checksum: '18446744073709551616' }),
        /checksum is not a 64-bit unsigned integer in a decimal string$/,
      ],
      [jsonFrame(image, 0, { seq: -1 }), /seq is not a 32-bit unsigned integer$/],
      [jsonFrame(image, 0, { extra: 1 }), /body has the fields .*extra.*, expected/],
      [jsonFrame(image, 0, { image: `${image.toString('base64').slice(0, -4)}!!!!` }), /image is not padded base64$/],
      [jsonFrame(image, 0, { magic: 1 }), /bad frame magic 0x00000001$/],
      ['[1, 2]', /body is not a JSON object$/],
    ];
    // All on one connection, then a good frame on it.
    const outcome = await rawExchange(listener.port, [
      ...cases.map(([body]) => request(body)),
      request(jsonFrame(image, 3)),
    ]);
    expect(statuses(outcome.answer)).toEqual([...cases.map(() => 422), 200]);
    expect(outcome.answer).toContain('{"sectionId":7,"seq":3,"status":"accepted"}');
    expect(rejects).toHaveLength(cases.length);
    cases.forEach(([, reason], i) => {
      expect(rejects[i]).toMatch(reason);
    });
    expect(delivered.map((f) => f.header.seq)).toEqual([3]);
    expect(Buffer.isBuffer(delivered[0]!.payload) && delivered[0]!.payload.equals(image)).toBe(true);
  }, 10_000);

  it('refuses a body over the JSON limit for MAX_IMAGE_SIZE ' +
    'before reading it, and a body that is not JSON after', async () => {
    const maxImageBytes = 64 * 1024;
    const { listener, section, delivered, rejects } = await listenFor(httpJsonTransport, { maxImageBytes });
    const fields = { authorization: `Bearer ${section.credential.text}`, 'content-type': 'application/json' };
    const over = await rawExchange(listener.port, [postHead({ ...fields, 'content-length': String(100 * MIB) })]);
    expect(statuses(over.answer)).toEqual([413]);
    expect(over.closedByReceiver).toBe(true);
    expect(rejects).toEqual([
      expect.stringMatching(
        /body of 104857600 bytes, over the \d+-byte limit for an image of MAX_IMAGE_SIZE \(65536 bytes\) in JSON$/,
      ),
    ]);
    const notJson = await rawExchange(listener.port, [`${postHead({ ...fields, 'content-length': '5' })}{"a":`]);
    expect(statuses(notJson.answer)).toEqual([400]);
    expect(rejects[1]).toMatch(/body is not JSON/);
    expect(delivered).toEqual([]);
  }, 10_000);
});
