import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivateRedis, type PrivateRedis } from '../../services/shared/redis-server.js';
import { transports } from '../../services/transports/index.js';
import { activeResources, leakedResources } from '../helpers/handles.js';
import { transferThrough } from '../helpers/harness.js';

// One suite, every transport, real sockets on loopback and a real redis-server: the same
// assertions must hold whatever carries the bytes.

let redis: PrivateRedis;
beforeAll(async () => {
  redis = await startPrivateRedis();
});
afterAll(async () => {
  await redis?.close();
});

const cases = [
  { name: '1-byte images', sizeBytes: 1, count: 5, window: 1 },
  { name: '1 KB images, window 8', sizeBytes: 1000, count: 40, window: 8 },
  { name: '533 KB images, window 4', sizeBytes: 545_792, count: 12, window: 4 },
  { name: '12 MB images (over gRPC\'s 4 MB default)', sizeBytes: 12_000_000, count: 3, window: 2 },
];

for (const transport of transports) {
  describe(transport.name, () => {
    for (const c of cases) {
      it(`delivers ${c.name} intact, in order, with positive times`, async () => {
        const images = Array.from({ length: c.count }, () => randomBytes(c.sizeBytes));
        const outcome = await transferThrough(transport, images, { window: c.window, redisUrl: redis.url });
        expect(outcome.rejects).toEqual([]);
        expect(outcome.received.map((r) => r.seq)).toEqual(images.map((_, i) => i));
        for (const r of outcome.received) {
          expect(r.bytes.equals(images[r.seq]!)).toBe(true);
          expect(r.arrivalNs).toBeGreaterThan(r.sentAtNs);
        }
        expect(outcome.acks.map((a) => [a.seq, a.status])).toEqual(images.map((_, i) => [i, 'ok']));
      }, 60_000);
    }

    it('leaves no open handle after close, and close is safe twice', async () => {
      const before = activeResources();
      const outcome = await transferThrough(transport, [randomBytes(2048)], { window: 1, redisUrl: redis.url, closeTwice: true });
      expect(outcome.acks).toHaveLength(1);
      expect(await leakedResources(before)).toEqual([]);
    }, 30_000);
  });
}
