import { describe, expect, it } from 'vitest';
import { SeenSet } from '../../services/core/model/seen.js';

// The receiver's record of which seqs arrived: duplicates refused, holes listed in order at the
// section's end, and memory that stays a chunk or two however long the section runs.

/** Seqs per chunk in seen.ts: 8 KiB of bits. */
const CHUNK_SEQS = 65_536;

describe('SeenSet', () => {
  it('takes each seq once and refuses it again', () => {
    const seen = new SeenSet();
    expect([seen.add(5), seen.add(0), seen.add(5), seen.add(CHUNK_SEQS + 5)]).toEqual([true, true, false, true]);
    expect(seen.size).toBe(3);
    expect([seen.has(5), seen.has(0), seen.has(1), seen.has(CHUNK_SEQS + 5), seen.has(5 + 2 * CHUNK_SEQS)]).toEqual([
      true,
      true,
      false,
      true,
      false,
    ]);
  });

  it('lists the holes between two seqs in order, across chunks, and nothing outside them', () => {
    const seen = new SeenSet();
    for (let seq = 0; seq < 2 * CHUNK_SEQS + 10; seq++)
      if (![3, 7, CHUNK_SEQS - 1, CHUNK_SEQS, 2 * CHUNK_SEQS + 4].includes(seq)) seen.add(seq);
    expect([...seen.missing(0, 2 * CHUNK_SEQS + 12)]).toEqual([
      3,
      7,
      CHUNK_SEQS - 1,
      CHUNK_SEQS,
      2 * CHUNK_SEQS + 4,
      2 * CHUNK_SEQS + 10,
      2 * CHUNK_SEQS + 11,
    ]);
    expect([...seen.missing(4, 7)]).toEqual([]);
    expect([...seen.missing(7, 8)]).toEqual([7]);
  });

  it('drops a chunk once every seq in it came: refuses its seqs still, and skips it when listing holes', () => {
    const seen = new SeenSet();
    for (let seq = 0; seq < CHUNK_SEQS; seq++) seen.add(seq);
    expect(seen.heldBytes).toBe(0);
    expect([seen.has(0), seen.has(CHUNK_SEQS - 1), seen.add(17), seen.size]).toEqual([true, true, false, CHUNK_SEQS]);
    seen.add(CHUNK_SEQS + 1);
    expect(seen.heldBytes).toBe(CHUNK_SEQS / 8);
    expect([...seen.missing(0, CHUNK_SEQS + 3)]).toEqual([CHUNK_SEQS, CHUNK_SEQS + 2]);
  });

  it('holds one chunk, not the section, after 1,000,000 seqs in order', () => {
    const seen = new SeenSet();
    let mostBytes = 0;
    for (let seq = 0; seq < 1_000_000; seq++) {
      seen.add(seq);
      if (seq % 1000 === 0) mostBytes = Math.max(mostBytes, seen.heldBytes);
    }
    expect(seen.size).toBe(1_000_000);
    // 1,000,000 seqs as a bitmap would be 125,000 bytes; the full chunks are gone.
    expect(mostBytes).toBeLessThanOrEqual(CHUNK_SEQS / 8);
    expect(seen.heldBytes).toBeLessThanOrEqual(CHUNK_SEQS / 8);
    expect([...seen.missing(0, 1_000_003)]).toEqual([1_000_000, 1_000_001, 1_000_002]);
  });
});
