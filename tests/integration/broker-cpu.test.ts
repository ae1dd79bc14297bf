import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/shared/net.js';
import { readProcess } from '../../services/shared/process-reading.js';
import { brokerAddress, brokerProcessReader } from '../../services/transports/kit/broker.js';
import { transports } from '../../services/transports/index.js';
import { LocalServers, openPair, pump } from '../helpers/harness.js';

// The brokers whose protocol carries no CPU counter (NATS, Mosquitto, RabbitMQ) are read from
// /proc of the process listening on their port (kit/broker.ts brokerProcessReader). Redis reports
// its own (INFO), tested in redis.test.ts.

const readFromProc = transports.filter(
  (t) => t.deployment.localServer !== undefined && t.deployment.setting.envVar !== 'REDIS_URL',
);
const servers = new LocalServers();

beforeAll(async () => {
  await servers.startFor(readFromProc);
}, 120_000);

afterAll(async () => {
  await servers.closeAll();
});

describe('broker CPU from /proc', () => {
  it('covers every broker transport but the Redis ones', () => {
    expect(readFromProc.map((t) => t.name).sort()).toEqual(['amqp', 'mqtt', 'nats', 'nats-jetstream']);
  });

  // What /proc names each private broker's process (RabbitMQ's is the Erlang VM).
  const processNames: Record<string, string> = {
    nats: 'nats-server',
    'nats-jetstream': 'nats-server',
    mqtt: 'mosquitto',
    amqp: 'beam.smp',
  };

  for (const transport of readFromProc) {
    it(`${transport.name}: reads the private broker's own process, whose CPU grows as images go through`, async () => {
      const url = servers.urlFor(transport)!;
      const found: { pid?: number; command?: string }[] = [];
      const log = pino({ level: 'info' }, { write: (line: string) => void found.push(JSON.parse(line)) });
      const reader = await brokerProcessReader(brokerAddress(url, undefined), 0, log);
      const { pid, command } = found[0] ?? {};
      expect(command).toBe(processNames[transport.name]);
      expect(pid).not.toBe(process.pid);
      const pair = await openPair(transport, { url, imageBytes: 545_792, window: 8 });
      try {
        // The listener reads the same process: the same memory as the broker's /proc says.
        expect(pair.listener.readBroker).toBeTypeOf('function');
        const [direct, listened] = [await readProcess(pid!), await pair.listener.readBroker!()];
        expect(Math.abs(listened.rssBytes - direct.rssBytes)).toBeLessThan(direct.rssBytes / 10);
        const before = await reader.readBroker!();
        // A running broker holds more than a megabyte; ticks of 10 ms are whole multiples of 10,000 µs.
        expect(before.rssBytes).toBeGreaterThan(1024 * 1024);
        expect(before.cpuUserMicros % 10_000).toBe(0);
        await pump(pair, randomBytes(545_792), 0, 120, 8); // ~65 MB through the broker
        const after = await reader.readBroker!();
        const cpuMicros = (r: typeof before): number => r.cpuUserMicros + r.cpuSystemMicros;
        expect(cpuMicros(after)).toBeGreaterThan(cpuMicros(before));
        expect(after.cpuUserMicros).toBeGreaterThanOrEqual(before.cpuUserMicros);
        expect(after.cpuSystemMicros).toBeGreaterThanOrEqual(before.cpuSystemMicros);
        expect(pair.seen.failures).toEqual([]);
      } finally {
        await pair.close();
      }
    }, 60_000);
  }

  it('reads nothing, and says why, for a broker on another host or with no process on its port', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line).msg) });
    expect(await brokerProcessReader(brokerAddress('nats://192.0.2.1:4222', undefined), 4222, log)).toEqual({});
    const unused = await freePort();
    expect(await brokerProcessReader(brokerAddress(`mqtt://127.0.0.1:${unused}`, undefined), 1883, log)).toEqual({});
    expect(lines).toEqual([
      'broker CPU not reported: 192.0.2.1 is not this host, so its process is not in /proc',
      `broker CPU not reported: no process listening on port ${unused} can be seen in /proc`,
    ]);
  });
});
