import { describe, expect, it } from 'vitest';
import { InFlightTable, NOT_HELD } from '../../services/transmitter/in-flight.js';

// The transmitter's images in flight, in columns by seq: an image stuck in flight keeps its entry (moved aside) while
// newer seqs take its place in the ring, however many there are.

describe('InFlightTable', () => {
  it('holds an image from its stamp until it is forgotten', () => {
    const table = new InFlightTable(16);
    const entry = table.add(5, 123n, 2, Number.NaN);
    expect(table.entryOf(5)).toBe(entry);
    expect([table.stampNs[entry], table.clients[entry], table.held]).toEqual([123n, 2, 1]);
    expect(table.entryOf(21)).toBe(NOT_HELD);
    table.forget(entry);
    expect([table.entryOf(5), table.held]).toEqual([NOT_HELD, 0]);
  });

  it('moves images still held aside when newer seqs need their places, growing as many are stuck', () => {
    const table = new InFlightTable(16);
    const stuck: number[] = [];
    for (let seq = 0; seq < 2000; seq++) {
      const entry = table.add(seq, BigInt(seq), seq % 3, seq);
      table.ackedMask[entry] = seq;
      // Every tenth image stays (never acknowledged); the rest are forgotten at once.
      if (seq % 10 === 0) stuck.push(seq);
      else table.forget(entry);
    }
    expect(table.held).toBe(stuck.length);
    for (const seq of stuck) {
      const entry = table.entryOf(seq);
      expect(entry).not.toBe(NOT_HELD);
      expect([table.seqs[entry], table.stampNs[entry], table.clients[entry], table.ackedMask[entry]]).toEqual([
        seq,
        BigInt(seq),
        seq % 3,
        seq,
      ]);
      table.forget(entry);
    }
    expect(table.held).toBe(0);
  });
});
