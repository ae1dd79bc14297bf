import { randomFillSync } from 'node:crypto';
import { xxh3, xxh64 } from '@node-rs/xxhash';
import { describe, expect, it } from 'vitest';
import { CHECKSUM_CANDIDATES, partsOf } from '../../scripts/bench/hash.js';

// The verify part's candidates must compute what they are named: a candidate whose part-by-part
// form differed from its whole form, or from the reference, would be timed doing other work.

const sizes = [0, 1, 64 * 1024, 64 * 1024 + 1, 545_792];

describe('checksum candidates', () => {
  it('cut an image into 64 KiB parts that join back into it', () => {
    const image = randomFillSync(Buffer.alloc(200_000));
    const parts = partsOf(image);
    expect(parts.map((part) => part.length)).toEqual([65_536, 65_536, 65_536, 3_392]);
    expect(Buffer.concat(parts).equals(image)).toBe(true);
  });

  for (const candidate of CHECKSUM_CANDIDATES)
    it(`${candidate.name}: the same sum whole and in parts, at ${sizes.join(', ')} bytes`, () => {
      for (const size of sizes) {
        const image = randomFillSync(Buffer.alloc(size));
        expect(candidate.parts(partsOf(image)), `${size} bytes`).toBe(candidate.whole(image));
      }
    });

  it('are the algorithms they are named after (reference values)', () => {
    const [xxhash64, xxh3OneShot, xxh3Streaming, crc32c] = CHECKSUM_CANDIDATES;
    const image = randomFillSync(Buffer.alloc(100_000));
    expect(xxhash64!.whole(image)).toBe(xxh64(image));
    expect(xxh3OneShot!.whole(image)).toBe(xxh3.xxh64(image));
    expect(xxh3Streaming!.whole(image)).toBe(xxh3.xxh64(image));
    // CRC-32C's check value (RFC 3720, iSCSI): "123456789" gives 0xE3069283.
    expect(crc32c!.whole(Buffer.from('123456789'))).toBe(0xe3069283);
  });
});
