import { describe, expect, it } from 'vitest';
import { freePort } from '../../services/shared/net.js';

describe('freePort', () => {
  it('never gives this process the same port twice, even before the first taker binds it', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 200; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) expect(port).toBeGreaterThan(0);
  });
});
