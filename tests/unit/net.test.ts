import { readFileSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, portIsFree, portSlice, singleListenHost } from '../../services/shared/net.js';

describe('freePort', () => {
  it('never gives this process the same port twice, even before the first taker binds it', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 200; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) expect(port).toBeGreaterThan(0);
  });

  it('tells a taken port from a free one without throwing (EADDRINUSE is an answer, not an error)', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await expect(portIsFree(port)).resolves.toBe(false);
    await new Promise((resolve) => server.close(resolve));
    await expect(portIsFree(port)).resolves.toBe(true);
  });

  it('never gives the same port to calls running at once, next ports included', async () => {
    const runs = await Promise.all(Array.from({ length: 100 }, (_, i) => freePort(1 + (i % 2))));
    const ports = runs.flatMap((port, i) => (i % 2 === 1 ? [port, port + 1] : [port]));
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('chooses below the ephemeral range, where no outgoing connection can take the port first', async () => {
    const [rangeStart] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    for (let i = 0; i < 50; i++) {
      const port = await freePort(2);
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port + 1).toBeLessThan(rangeStart!);
    }
  });
});

describe('portSlice', () => {
  it("gives each vitest worker its own eighth of the range, the whole range outside vitest's workers", () => {
    const pool = process.env.VITEST_POOL_ID;
    const slice = (id: string | undefined): [number, number] => {
      if (id === undefined) delete process.env.VITEST_POOL_ID;
      else process.env.VITEST_POOL_ID = id;
      return portSlice(10_000, 32_767);
    };
    try {
      expect([slice('1'), slice('3'), slice('8'), slice('9'), slice(undefined), slice('0'), slice('x')]).toEqual([
        [10_000, 12_845],
        [15_692, 18_537],
        [29_922, 32_767],
        [10_000, 12_845],
        [10_000, 32_767],
        [10_000, 32_767],
        [10_000, 32_767],
      ]);
    } finally {
      if (pool === undefined) delete process.env.VITEST_POOL_ID;
      else process.env.VITEST_POOL_ID = pool;
    }
  });
});

describe('singleListenHost', () => {
  it(
    'resolves localhost (any case) to the one address dns.lookup gives, so fastify binds a single server its caps ' +
      'hold on',
    async () => {
      const { address } = await lookup('localhost');
      expect(await singleListenHost('localhost')).toBe(address);
      expect(await singleListenHost('LocalHost')).toBe(address);
    },
  );

  it('passes every other host through untouched', async () => {
    for (const host of ['127.0.0.1', '::1', '0.0.0.0', '::', 'receiver'])
      expect(await singleListenHost(host)).toBe(host);
  });
});
