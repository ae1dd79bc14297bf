import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import { startPrivateMosquitto } from '../../services/transports/kit/mqtt.js';
import { mqttTransport, publishPacketBytes, sectionTopics } from '../../services/transports/mqtt/transport.js';
import { brokerLinkOptions, listenThrough, privateBrokerForFile, type BrokerListening } from '../helpers/broker.js';
import { activeResources, leakedResources } from '../helpers/handles.js';
import { eventually, stampedHeader, testDoor, type TestDoor } from '../helpers/harness.js';

// Only what is PARTICULAR to MQTT. The contract every transport shares (delivery of every size,
// handles after close, connect() timeout, bad headers, a delivery that throws, the broker going
// away as one failure of the link) is tested for MQTT too by the shared suite in
// transports.test.ts. Here, each against a private mosquitto of its own: the transmitter never has
// more PUBLISHes in flight than the broker's Receive Maximum (counted on the wire by a relay); an
// image over the broker's advertised packet size fails in connect() with the limit named; the
// broker killed mid-section fails the link and the listener with the reason, quickly; a broker with
// a password file takes the right password and refuses a wrong one, naming the broker and never the
// password; a section nobody reads is named; and the private broker leaves nothing on disk.

const mosquitto = privateBrokerForFile(() => startPrivateMosquitto());

/** A listener on `url` open for `section`, recording what it delivered, rejected and how it failed. */
function listenFor(url: string, section: TestDoor, password?: string): Promise<BrokerListening> {
  return listenThrough(mqttTransport, url, section, { password });
}

/**
 * Calls `onPacket` with the type (upper four bits of the first byte) of every whole MQTT packet in
 * the bytes fed to it, in order.
 */
function packetReader(onPacket: (type: number) => void): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      let length = 0;
      let at = 1;
      let complete = false;
      for (let shift = 0; at < pending.length && at <= 4; shift += 7) {
        const byte = pending[at++]!;
        length += (byte & 0x7f) << shift;
        if ((byte & 0x80) === 0) {
          complete = true;
          break;
        }
      }
      if (!complete || pending.length < at + length) return;
      onPacket(pending[0]! >> 4);
      pending = pending.subarray(at + length);
    }
  };
}

/**
 * A relay in front of the broker that counts, on the wire, the PUBLISHes a client sent and the
 * PUBACKs it was handed back, keeping the peak difference; it hands the broker's bytes on after
 * `delayMs`, so that PUBACKs come late and PUBLISHes would pile up if nothing held them.
 */
async function countingRelay(brokerUrl: string, delayMs: number) {
  const broker = new URL(brokerUrl);
  const counts = { inFlight: 0, peak: 0, published: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(broker.port), broker.hostname);
    sockets.add(client).add(upstream);
    const fromClient = packetReader((type) => {
      if (type !== 3) return; // PUBLISH
      counts.published += 1;
      counts.inFlight += 1;
      counts.peak = Math.max(counts.peak, counts.inFlight);
    });
    const toClient = packetReader((type) => {
      if (type === 4) counts.inFlight -= 1; // PUBACK
    });
    client.on('data', (chunk: Buffer) => {
      fromClient(chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      setTimeout(() => {
        toClient(chunk);
        if (!client.destroyed) client.write(chunk);
      }, delayMs);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `mqtt://127.0.0.1:${port}`,
    counts,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A logger whose lines are kept, to read what the link stated. */
function recordingLog(): { log: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), lines };
}

describe('mqtt transport: MQTT specifics', () => {
  it("never has more PUBLISHes in flight than the broker's Receive Maximum (4) with WINDOW 16; all images " +
    'arrive, and the link states its cap', async () => {
    const small = await startPrivateMosquitto({ maxInflightMessages: 4 });
    const relay = await countingRelay(small.url, 20);
    const section = testDoor('mqtt');
    const { listener, delivered, rejects } = await listenFor(small.url, section);
    const seen = { acks: [] as number[], failures: [] as Error[] };
    const { log, lines } = recordingLog();
    const images = Array.from({ length: 48 }, () => randomBytes(1000));
    try {
      const link = await mqttTransport.connect(brokerLinkOptions(relay.url, section.credential, 1000, seen, { log }));
      try {
        let next = 0;
        const sendNext = (): void => {
          if (next >= images.length) return;
          const image = images[next]!;
          link.send(stampedHeader(image, next), image);
          next += 1;
        };
        // The caller's window: 16 unacknowledged images; one more for every ack.
        for (let i = 0; i < 16; i++) sendNext();
        let handled = 0;
        await eventually(() => {
          while (handled < seen.acks.length) {
            handled += 1;
            sendNext();
          }
          return seen.acks.length === images.length || seen.failures.length > 0;
        }, 20_000);
      } finally {
        await link.close();
      }
      expect(seen.failures).toEqual([]);
      expect(seen.acks).toEqual(images.map((_, seq) => seq));
      expect(delivered.map((f) => f.header.seq)).toEqual(images.map((_, seq) => seq));
      expect(rejects).toEqual([]);
      expect(relay.counts.published).toBe(images.length);
      // Held at the cap, and the cap was reached: the relay's delay would have let 16 pile up.
      expect(relay.counts.peak).toBe(4);
      expect(lines.join('')).toContain("at most 4 PUBLISHes in flight: min(WINDOW 16, the broker's Receive Maximum 4)");
    } finally {
      await listener.close();
      await relay.close();
      await small.close();
    }
  }, 90_000);

  it("fails connect() with the limit named, before anything is sent, when an image is over the broker's " +
    'maximum packet size; one that fits exactly goes through', async () => {
    const limit = 64 * 1024;
    const small = await startPrivateMosquitto({ maxPacketBytes: limit });
    const section = testDoor('mqtt');
    const { listener, delivered, rejects } = await listenFor(small.url, section);
    try {
      const before = activeResources();
      const seen = { acks: [] as number[], failures: [] as Error[] };
      const outcome = await mqttTransport.connect(brokerLinkOptions(small.url, section.credential, limit, seen)).then(
        () => new Error('connect() resolved'),
        (err: unknown) => err,
      );
      expect(outcome).toMatchObject({ code: ErrorCode.transport });
      const message = (outcome as Error).message;
      expect(message).toContain(`over the maximum packet size of ${limit} bytes that MQTT at ${small.url} advertises`);
      expect(message).toContain('max_packet_size');
      expect(await leakedResources(before)).toEqual([]);

      // The largest image whose PUBLISH is exactly the limit (the ack topic is 16 base64url characters after its
      // prefix).
      const topics = sectionTopics(section.credential);
      const ackTopic = `${topics.acks}/${'x'.repeat(16)}`;
      let imageBytes = limit - publishPacketBytes(topics.frames, ackTopic, 0);
      while (publishPacketBytes(topics.frames, ackTopic, imageBytes) > limit) imageBytes -= 1;
      expect(publishPacketBytes(topics.frames, ackTopic, imageBytes)).toBe(limit);
      const image = randomBytes(imageBytes);
      const link = await mqttTransport.connect(brokerLinkOptions(small.url, section.credential, imageBytes, seen));
      try {
        link.send(stampedHeader(image, 0), image);
        await eventually(() => seen.acks.length === 1 || seen.failures.length > 0);
      } finally {
        await link.close();
      }
      expect(seen.failures).toEqual([]);
      expect(delivered[0] && Buffer.concat([delivered[0].payload].flat()).equals(image)).toBe(true);
      expect(rejects).toEqual([]);
    } finally {
      await listener.close();
      await small.close();
    }
  }, 15_000);

  it('fails the link and the listener with the reason, within a short IMAGE_TIMEOUT_MS, when the broker is ' +
    'killed mid-section', async () => {
    const imageTimeoutMs = 2000;
    const doomed = await startPrivateMosquitto();
    const section = testDoor('mqtt', 7, imageTimeoutMs);
    const { listener, failures } = await listenFor(doomed.url, section);
    const seen = { acks: [] as number[], failures: [] as Error[] };
    const link = await mqttTransport.connect(brokerLinkOptions(doomed.url, section.credential, 1000, seen));
    try {
      const image = randomBytes(1000);
      link.send(stampedHeader(image, 0), image);
      await eventually(() => seen.acks.length === 1);
      const killedAt = Date.now();
      await doomed.close();
      link.send(stampedHeader(image, 1), image);
      await eventually(() => seen.failures.length > 0 && failures.length > 0, imageTimeoutMs);
      expect(Date.now() - killedAt).toBeLessThan(imageTimeoutMs);
      expect(seen.failures).toHaveLength(1);
      expect(seen.failures[0]!.message).toContain(`MQTT link through ${doomed.url}`);
      expect(seen.failures[0]!.message).toMatch(/connection closed|disconnected/);
      expect(failures).toHaveLength(1);
      expect(failures[0]).toContain(`lost its connection to MQTT at ${doomed.url}`);
      expect(seen.acks).toEqual([0]);
    } finally {
      await link.close();
      await listener.close();
      await doomed.close();
    }
  }, 15_000);

  it('with a password file: the right password (apart from the URL, as MQTT_PASSWORD gives it) works; a wrong ' +
    'one is refused naming the broker, never the password', async () => {
    const password = 'right-password-4711';
    const wrong = 'wrong-password-0815';
    const guarded = await startPrivateMosquitto({ auth: { user: 'itb', password } });
    const url = guarded.url.replace('mqtt://', 'mqtt://itb@');
    const shown = guarded.url.replace('mqtt://', 'mqtt://***@');
    const section = testDoor('mqtt');
    const { listener, delivered } = await listenFor(url, section, password);
    try {
      const seen = { acks: [] as number[], failures: [] as Error[] };
      const link = await mqttTransport.connect(brokerLinkOptions(url, section.credential, 1000, seen, { password }));
      try {
        const image = randomBytes(1000);
        link.send(stampedHeader(image, 0), image);
        await eventually(() => seen.acks.length === 1 || seen.failures.length > 0);
      } finally {
        await link.close();
      }
      expect(seen.failures).toEqual([]);
      expect(delivered.map((f) => f.header.seq)).toEqual([0]);

      for (const given of [
        { url, password: wrong },
        { url: guarded.url, password: undefined },
      ]) {
        const before = Date.now();
        const outcome = await mqttTransport
          .connect(brokerLinkOptions(given.url, section.credential, 1000, seen, { password: given.password }))
          .then(
            () => new Error('connect() resolved'),
            (err: unknown) => err,
          );
        expect(outcome).toMatchObject({ code: ErrorCode.refused });
        const message = (outcome as Error).message;
        expect(message).toContain(`MQTT at ${given.password === undefined ? guarded.url : shown}`);
        expect(message).toMatch(/Not authorized|Bad User Name or Password/);
        expect(message).not.toContain(wrong);
        expect(message).not.toContain(password);
        // Refused at once, not retried until connectTimeoutMs.
        expect(Date.now() - before).toBeLessThan(2000);
      }
      await expect(listenFor(url, testDoor('mqtt'), wrong)).rejects.toMatchObject({ code: ErrorCode.refused });
    } finally {
      await listener.close();
      await guarded.close();
    }
  }, 20_000);

  it('fails the link as "no receiver is reading this section" when nobody subscribes to its topic', async () => {
    const section = testDoor('mqtt');
    const seen = { acks: [] as number[], failures: [] as Error[] };
    const link = await mqttTransport.connect(brokerLinkOptions(mosquitto.url, section.credential, 1000, seen));
    try {
      const image = randomBytes(1000);
      link.send(stampedHeader(image, 0), image);
      await eventually(() => seen.failures.length > 0);
      expect(seen.failures[0]).toMatchObject({
        code: ErrorCode.receiverUnreachable,
        message: expect.stringContaining('no receiver is reading this section'),
      });
      expect(seen.acks).toEqual([]);
    } finally {
      await link.close();
    }
  }, 10_000);

  it('fails at once, naming MQTT_URL, when it is not set', async () => {
    const seen = { acks: [] as number[], failures: [] as Error[] };
    await expect(
      mqttTransport.connect({ ...brokerLinkOptions('', testDoor('mqtt').credential, 1000, seen), url: undefined }),
    ).rejects.toMatchObject({ code: ErrorCode.config, message: expect.stringContaining('MQTT_URL is not set') });
  });

  it('starts its private broker from a config in a temporary directory and removes it at close', async () => {
    const own = await startPrivateMosquitto({ auth: { user: 'u', password: 'p' } });
    expect(existsSync(own.configDir)).toBe(true);
    await own.close();
    expect(existsSync(own.configDir)).toBe(false);
    await own.close(); // safe twice
  }, 10_000);
});
