import { describe, expect, it } from 'vitest';
import {
  admitStream,
  checkStreamCaps,
  leastReadStream,
  type StreamReading,
} from '../../services/core/live/stream-admission.js';
import { clientAddress } from '../../services/receiver/events-route.js';

// Who gets a GET /events stream: the per-address cap, and which stream a newcomer at the total cap
// evicts (the one that has read least), each rule alone and in its place in the order.

/** A stream of `address` that keeps up, opened `openedOrder`th, with `changes` on top. */
function stream(address: string, openedOrder: number, changes: Partial<StreamReading> = {}): StreamReading {
  return { address, backedUpMs: 0, pendingBytes: 0, openedOrder, ...changes };
}

const CAPS = { maxStreams: 4, maxStreamsPerAddress: 2 };

describe('leastReadStream', () => {
  it('is undefined with no stream open', () => {
    expect(leastReadStream([])).toBeUndefined();
  });

  it.each([
    {
      rule: 'the stream backed up longest first, whatever its pending bytes, address or age',
      open: [
        stream('a', 0, { backedUpMs: 200, pendingBytes: 900_000 }),
        stream('b', 1, { backedUpMs: 4_000, pendingBytes: 20_000 }),
        stream('c', 2, { pendingBytes: 2_000_000 }),
      ],
      evicted: 1,
    },
    {
      rule: 'then the most bytes written and not taken by its socket',
      open: [
        stream('a', 0, { pendingBytes: 16_384 }),
        stream('a', 1),
        stream('b', 2, { pendingBytes: 65_536 }),
        stream('c', 3, { pendingBytes: 4_096 }),
      ],
      evicted: 2,
    },
    {
      rule: 'then, among streams that keep up, one of the address holding the most',
      open: [stream('lone', 0), stream('flood', 1), stream('flood', 2), stream('other', 3)],
      evicted: 1,
    },
    {
      rule: 'then the oldest',
      open: [stream('a', 7), stream('b', 3), stream('c', 5)],
      evicted: 1,
    },
  ])('$rule', ({ open, evicted }) => {
    expect(leastReadStream(open)).toBe(evicted);
  });
});

describe('admitStream', () => {
  it('opens a stream while there is room in all and for its address', () => {
    expect(admitStream([], 'a', CAPS)).toEqual({ action: 'open' });
    expect(admitStream([stream('a', 0), stream('b', 1), stream('b', 2)], 'a', CAPS)).toEqual({ action: 'open' });
  });

  it('refuses a client whose address holds its cap, even with room in all', () => {
    expect(admitStream([stream('a', 0), stream('a', 1)], 'a', CAPS)).toEqual({ action: 'refuse' });
  });

  it('at the total cap, lets a newcomer in in place of the stream that has read least', () => {
    const open = [stream('x', 0), stream('y', 1), stream('y', 2), stream('z', 3, { pendingBytes: 10 })];
    expect(admitStream(open, 'new', CAPS)).toEqual({ action: 'evict', index: 3 });
    // Its own address's streams count among the candidates: the oldest of the pair goes.
    const keepingUp = [stream('x', 0), stream('y', 1), stream('y', 2), stream('z', 3)];
    expect(admitStream(keepingUp, 'x', CAPS)).toEqual({ action: 'evict', index: 1 });
  });

  it('refuses by address before it evicts', () => {
    const full = [stream('x', 0), stream('x', 1), stream('y', 2), stream('z', 3, { backedUpMs: 50 })];
    expect(admitStream(full, 'x', CAPS)).toEqual({ action: 'refuse' });
  });
});

describe('checkStreamCaps', () => {
  it.each([
    { maxStreams: 32, maxStreamsPerAddress: 8, valid: true },
    { maxStreams: 1, maxStreamsPerAddress: 1, valid: true },
    { maxStreams: 4, maxStreamsPerAddress: 0, valid: false },
    { maxStreams: 4, maxStreamsPerAddress: 5, valid: true },
    { maxStreams: 0, maxStreamsPerAddress: 1, valid: false },
    { maxStreams: 4.5, maxStreamsPerAddress: 2, valid: false },
  ])('$maxStreams in all, $maxStreamsPerAddress per address: valid $valid', ({ valid, ...caps }) => {
    if (valid) expect(() => checkStreamCaps(caps)).not.toThrow();
    else expect(() => checkStreamCaps(caps)).toThrow(RangeError);
  });
});

describe('clientAddress (how GET /events keys a client)', () => {
  it('counts an IPv4-mapped IPv6 peer as its IPv4 address, and leaves other addresses as they are', () => {
    expect(['::ffff:10.0.0.2', '10.0.0.2', '::1', '2001:db8::7', undefined].map(clientAddress)).toEqual([
      '10.0.0.2',
      '10.0.0.2',
      '::1',
      '2001:db8::7',
      '?',
    ]);
  });
});
