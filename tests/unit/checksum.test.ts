import { randomFillSync } from 'node:crypto';
import { xxh64 } from '@node-rs/xxhash';
import { describe, expect, it } from 'vitest';
import { imageChecksum } from '../../services/core/wire/checksum.js';

// The frame's checksum is xxHash64 (seed 0) of the image, however the image arrived: whole, in one
// part, or in many. The streaming hasher is reused, so a sum must never carry a previous image.

const cut = (image: Buffer, partBytes: number): Buffer[] => {
  const parts: Buffer[] = [];
  for (let at = 0; at < image.length; at += partBytes) parts.push(image.subarray(at, at + partBytes));
  return parts;
};

describe('imageChecksum', () => {
  it('is xxHash64 of the image whole, in one part and in parts of any size', () => {
    for (const size of [0, 1, 1000, 65_536, 545_792]) {
      const image = randomFillSync(Buffer.alloc(size));
      const expected = xxh64(image);
      expect(imageChecksum(image), `${size} B whole`).toBe(expected);
      expect(imageChecksum([image]), `${size} B in one part`).toBe(expected);
      for (const partBytes of [1, 7, 4096, 65_536])
        if (size / partBytes < 5000)
          expect(imageChecksum(cut(image, partBytes)), `${size} B in ${partBytes} B parts`).toBe(expected);
    }
  });

  it('carries nothing from one image to the next (the reused hasher starts afresh)', () => {
    const first = randomFillSync(Buffer.alloc(200_000));
    const second = randomFillSync(Buffer.alloc(200_000));
    expect(imageChecksum(cut(first, 65_536))).toBe(xxh64(first));
    expect(imageChecksum(cut(second, 65_536))).toBe(xxh64(second));
    expect(imageChecksum(cut(second, 65_536))).toBe(xxh64(second));
  });

  it('tells one changed byte', () => {
    const image = randomFillSync(Buffer.alloc(100_000));
    const sum = imageChecksum(cut(image, 30_000));
    image[77_777] = image[77_777]! ^ 1;
    expect(imageChecksum(cut(image, 30_000))).not.toBe(sum);
  });
});
