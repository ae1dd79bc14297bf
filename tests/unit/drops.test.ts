import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DropLedger } from '../../services/core/model/drops.js';

describe('DropLedger', () => {
  it('settles every open seq below an ack as lost, once', () => {
    const ledger = DropLedger.opened(10);
    expect(ledger.acknowledged(0)).toBe(0);
    expect(ledger.acknowledged(3)).toBe(2);
    expect(ledger.lost).toBe(2);
    expect(ledger.acknowledged(4)).toBe(0);
    expect(ledger.acknowledged(7)).toBe(2);
    expect(ledger.lost).toBe(4);
    expect(ledger.lostIn(0, 10)).toBe(4);
    expect(ledger.lostIn(2, 3)).toBe(1);
  });

  it('settles the tail on silence, up to the stamped seqs only', () => {
    const ledger = DropLedger.opened(10);
    expect(ledger.acknowledged(1)).toBe(1);
    expect(ledger.settleBelow(5)).toBe(3);
    expect(ledger.lost).toBe(4);
    expect(ledger.settleBelow(5)).toBe(0);
    // Seqs not yet stamped (5 and on) stay open until something settles them.
    expect(ledger.lostIn(5, 5)).toBe(0);
  });

  it(
    "never settles a seq it did not carry (another client's, or dropped at the sender) as lost, by an ack or by " +
      'silence',
    () => {
      const ledger = new DropLedger();
      for (const seq of [0, 2, 4, 5]) ledger.open(seq);
      expect(ledger.acknowledged(2)).toBe(1);
      expect(ledger.settleBelow(6)).toBe(2);
      expect([ledger.lost, ledger.lostIn(0, 6), ledger.lostIn(1, 1), ledger.lostIn(3, 1)]).toEqual([3, 3, 0, 0]);
    },
  );

  it('settles nothing on an ack that may have overtaken earlier ones (several clients): silence does', () => {
    const ledger = DropLedger.opened(6);
    expect(ledger.acknowledged(4, false)).toBe(0);
    expect(ledger.lost).toBe(0);
    expect(ledger.acknowledged(1, false)).toBe(0);
    expect(ledger.settleBelow(6)).toBe(4);
    expect(ledger.lostIn(0, 6)).toBe(4);
  });

  it('takes back a seq settled as lost whose ack comes after all', () => {
    const ledger = DropLedger.opened(6);
    ledger.settleBelow(4);
    expect(ledger.lost).toBe(4);
    expect(ledger.acknowledged(2)).toBe(0);
    expect(ledger.lost).toBe(3);
    expect(ledger.lostIn(0, 4)).toBe(3);
    expect(ledger.lostIn(2, 1)).toBe(0);
  });

  it('never settles beyond its seqs', () => {
    const ledger = DropLedger.opened(3);
    expect(ledger.settleBelow(100)).toBe(3);
    expect(ledger.lostIn(0, 100)).toBe(3);
  });

  it("holds a window's worth, not the section: 1,000,000 seqs acknowledged in order, WINDOW 8", () => {
    const ledger = new DropLedger();
    const window = 8;
    let mostHeld = 0;
    for (let seq = 0; seq < 1_000_000; seq++) {
      ledger.open(seq);
      if (seq >= window - 1) ledger.acknowledged(seq - window + 1);
      mostHeld = Math.max(mostHeld, ledger.heldEntries);
    }
    for (let seq = 1_000_000 - window + 1; seq < 1_000_000; seq++) ledger.acknowledged(seq);
    expect(ledger.lost).toBe(0);
    // The order list is compacted once over 4,096 acknowledged seqs lead it: a few thousand entries at most.
    expect(mostHeld).toBeLessThan(2 * 4096 + 2 * window);
    expect(ledger.heldEntries).toBeLessThan(4096 + window);
    // Nothing open is left: silence settles nothing.
    expect(ledger.settleBelow(1_000_000)).toBe(0);
  });

  it('for any in-order delivery with drops, lost = stamped - acknowledged once the tail is settled', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 200 }), (delivered) => {
        const ledger = DropLedger.opened(delivered.length);
        let acked = 0;
        delivered.forEach((arrives, seq) => {
          if (!arrives) return;
          ledger.acknowledged(seq);
          acked++;
        });
        ledger.settleBelow(delivered.length);
        expect(ledger.lost).toBe(delivered.length - acked);
        expect(ledger.lostIn(0, delivered.length)).toBe(delivered.filter((d) => !d).length);
      }),
    );
  });
});
