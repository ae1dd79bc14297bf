import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import type { ReceiverListener, TransmitterLink, TransmitterOptions } from '../../services/transports/contract.js';
import { amqpTransport, sectionQueues } from '../../services/transports/amqp/transport.js';
import {
  RABBITMQ_3_MAX_MESSAGE_BYTES,
  startPrivateRabbit,
  type PrivateRabbit,
} from '../../services/transports/kit/amqp.js';
import { brokerLinkOptions, listenThrough, privateBrokerForFile, type LinkSeen } from '../helpers/broker.js';
import { eventually, stampedHeader, testDoor, type TestDoor } from '../helpers/harness.js';

// Only what is PARTICULAR to AMQP. The contract every transport shares (delivery of every size, a
// 12 MB image included, connect() timeout, bad headers, a delivery that throws, the broker going
// away as one failure of the link) is tested for amqp too by the shared suite in
// transports.test.ts. Here: the receiver's consumer has a prefetch of WINDOW, so the broker never
// hands it more than WINDOW unacknowledged images; an image over the broker's max_message_size
// fails its section with the limit named; the broker killed mid-section fails the link and the
// listener with a reason well within a short IMAGE_TIMEOUT_MS; a wrong password fails naming the
// broker, never the password; a section nobody reads fails at connect; and the private server
// keeps nothing on disk. One private RabbitMQ serves the file (it takes seconds to start), with a
// small max_message_size and a user of its own; the kill test starts another.

const MIB = 1024 * 1024;
const USER = 'itb-test';
const PASSWORD = 'right-pass-5e1f';
/** The broker's max_message_size in this file. */
const SMALL_MAX_BYTES = MIB;

const rabbit = privateBrokerForFile(
  () => startPrivateRabbit({ maxMessageBytes: SMALL_MAX_BYTES, auth: { user: USER, password: PASSWORD } }),
  90_000,
);
/** The broker's URL with the user (the password goes apart, as AMQP_PASSWORD gives it). */
let url: string;
beforeAll(() => {
  url = rabbit.url.replace('amqp://', `amqp://${USER}@`);
});

/** rabbitmqctl against a private node (its cookie is in the server's HOME); returns its output. */
async function rabbitmqctl(server: PrivateRabbit, ...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(
    '/usr/lib/rabbitmq/bin/rabbitmqctl',
    ['-n', server.nodeName, '-q', ...args],
    { env: { ...process.env, HOME: server.dir, RABBITMQ_CONF_ENV_FILE: path.join(server.dir, 'rabbitmq-env.conf') } },
  );
  return stdout;
}

/** Options of a link through `linkUrl` with `section`'s credential, recording acks and failures in `seen`. */
function linkOptions(
  linkUrl: string,
  section: TestDoor,
  seen: LinkSeen,
  overrides: Partial<TransmitterOptions> = {},
): TransmitterOptions {
  return brokerLinkOptions(linkUrl, section.credential, 1000, seen, { password: PASSWORD, ...overrides });
}

/** A listener through `listenUrl` (with `password`) open for `section` at `window`, recording failures. */
async function listenFor(
  listenUrl: string,
  section: TestDoor,
  window: number,
  password: string | undefined,
  failures: string[] = [],
): Promise<{ listener: ReceiverListener; delivered: number[] }> {
  const { listener, seqs } = await listenThrough(amqpTransport, listenUrl, section, { window, password, failures });
  return { listener, delivered: seqs };
}

describe('amqp transport: RabbitMQ specifics', () => {
  it("consumes the section's queue with manual acks and a prefetch of WINDOW", async () => {
    const section = testDoor('amqp');
    const { listener } = await listenFor(url, section, 5, PASSWORD);
    try {
      const consumers = await rabbitmqctl(rabbit, 'list_consumers', 'queue_name', 'ack_required', 'prefetch_count');
      const row = consumers
        .split('\n')
        .map((line) => line.trim().split(/\s+/))
        .find((fields) => fields[0] === sectionQueues(section.credential).frames);
      expect(row).toEqual([sectionQueues(section.credential).frames, 'true', '5']);
    } finally {
      await listener.close();
    }
  }, 90_000);

  it("fails the section naming the broker's max_message_size when an image is over it; one under it goes " +
    'through', async () => {
    const section = testDoor('amqp');
    const { listener, delivered } = await listenFor(url, section, 16, PASSWORD);
    const seen = { acks: [] as number[], failures: [] as Error[] };
    const link = await amqpTransport.connect(linkOptions(url, section, seen, { imageBytes: SMALL_MAX_BYTES }));
    try {
      const fits = randomBytes(SMALL_MAX_BYTES - 1);
      link.send(stampedHeader(fits, 0), fits);
      await eventually(() => seen.acks.length === 1);
      const over = randomBytes(SMALL_MAX_BYTES + 1);
      link.send(stampedHeader(over, 1), over);
      await eventually(() => seen.failures.length > 0);
      expect(seen.failures[0]).toMatchObject({ code: ErrorCode.transport });
      const message = seen.failures[0]!.message;
      expect(message).toContain(
        `message size ${SMALL_MAX_BYTES + 1} is larger than configured max size ${SMALL_MAX_BYTES}`,
      );
      expect(message).toContain(`max_message_size (RabbitMQ's default is ${RABBITMQ_3_MAX_MESSAGE_BYTES} bytes`);
      expect(seen.failures).toHaveLength(1);
      expect(delivered).toEqual([0]);
      expect(seen.acks).toEqual([0]);
    } finally {
      await link.close();
      await listener.close();
    }
  }, 20_000);

  it('fails the link and the listener with the reason, well within IMAGE_TIMEOUT_MS, when the broker is killed ' +
    'mid-section', async () => {
    const imageTimeoutMs = 3000;
    const own = await startPrivateRabbit();
    const failures: string[] = [];
    const section = testDoor('amqp', 7, imageTimeoutMs);
    const seen = { acks: [] as number[], failures: [] as Error[] };
    let listener: ReceiverListener | undefined;
    let link: TransmitterLink | undefined;
    try {
      ({ listener } = await listenFor(own.url, section, 4, undefined, failures));
      link = await amqpTransport.connect({ ...linkOptions(own.url, section, seen), password: undefined });
      const image = randomBytes(1000);
      link.send(stampedHeader(image, 0), image);
      await eventually(() => seen.acks.length === 1);
      const pid = Number(await readFile(path.join(own.dir, 'rabbitmq.pid'), 'utf8'));
      const killedAt = Date.now();
      process.kill(pid, 'SIGKILL');
      link.send(stampedHeader(image, 1), image);
      await eventually(() => seen.failures.length > 0 && failures.length > 0, imageTimeoutMs);
      expect(Date.now() - killedAt).toBeLessThan(imageTimeoutMs);
      expect(seen.failures).toHaveLength(1);
      expect(seen.failures[0]).toMatchObject({ code: ErrorCode.transport });
      expect(seen.failures[0]!.message).toContain(`AMQP link through ${own.url}: connection`);
      expect(failures).toEqual([expect.stringContaining(`lost its connection to RabbitMQ at ${own.url}`)]);
    } finally {
      await link?.close();
      await listener?.close();
      await own.close();
    }
    // Nothing of it stays on disk.
    expect(existsSync(own.dir)).toBe(false);
  }, 90_000);

  it('refuses a wrong password at once, naming the broker and never the password', async () => {
    const section = testDoor('amqp');
    const seen = { acks: [] as number[], failures: [] as Error[] };
    const wrong = 'wrong-pass-9c2d';
    const startedAt = Date.now();
    const outcome = await amqpTransport
      .connect(linkOptions(url, section, seen, { password: wrong, connectTimeoutMs: 10_000 }))
      .then(
        () => new Error('connect() resolved'),
        (err: unknown) => err as Error,
      );
    // Not retried until the connect budget is spent: the same password would be refused again.
    expect(Date.now() - startedAt).toBeLessThan(5000);
    expect(outcome).toMatchObject({ code: ErrorCode.refused });
    expect(outcome.message).toContain(`RabbitMQ at amqp://***@127.0.0.1:${new URL(rabbit.url).port}`);
    expect(outcome.message).toMatch(/ACCESS.REFUSED/);
    expect(outcome.message).not.toContain(wrong);
    expect(outcome.message).not.toContain(PASSWORD);
  }, 20_000);

  it('fails connect() when nobody reads the section (no receiver declared its queue)', async () => {
    const section = testDoor('amqp', 11);
    const seen = { acks: [] as number[], failures: [] as Error[] };
    await expect(amqpTransport.connect(linkOptions(url, section, seen))).rejects.toMatchObject({
      code: ErrorCode.receiverUnreachable,
      message: expect.stringContaining('no receiver is reading this section on RabbitMQ'),
    });
  }, 20_000);

  it("fails the link with the broker's reason when the broker blocks its connection (a resource alarm)", async () => {
    const section = testDoor('amqp');
    const { listener } = await listenFor(url, section, 16, PASSWORD);
    const seen = { acks: [] as number[], failures: [] as Error[] };
    const link = await amqpTransport.connect(linkOptions(url, section, seen));
    try {
      // A memory watermark of (almost) nothing raises the memory alarm at once.
      await rabbitmqctl(rabbit, 'set_vm_memory_high_watermark', 'absolute', '1');
      const image = randomBytes(1000);
      // The broker blocks a connection when it publishes while the alarm is on.
      link.send(stampedHeader(image, 0), image);
      await eventually(() => seen.failures.length > 0, 10_000);
      expect(seen.failures[0]).toMatchObject({
        code: ErrorCode.transport,
        message: expect.stringContaining('the broker blocked the connection: low on memory'),
      });
    } finally {
      await rabbitmqctl(rabbit, 'set_vm_memory_high_watermark', '0.4');
      await link.close();
      await listener.close();
    }
  }, 90_000);

  it('fails at once, naming AMQP_URL, when it is not set', async () => {
    const section = testDoor('amqp');
    const seen = { acks: [] as number[], failures: [] as Error[] };
    await expect(amqpTransport.connect({ ...linkOptions('', section, seen), url: undefined })).rejects.toMatchObject({
      code: ErrorCode.config,
      message: expect.stringContaining('AMQP_URL is not set'),
    });
  });

  it('keeps everything of its private server in a temporary directory removed at close', async () => {
    expect(existsSync(path.join(rabbit.dir, 'rabbitmq.conf'))).toBe(true);
    expect(rabbit.nodeName).toMatch(/^itb-\d+-\d+@localhost$/);
    expect(new URL(rabbit.url).port).not.toBe('5672');
  });
});
