import { randomFillSync } from 'node:crypto';
import { xxh3, xxh64 } from '@node-rs/xxhash';
import { describe, expect, it } from 'vitest';
import {
  checksumAlgorithmFor,
  ImagePartHasher,
  imageChecksum,
  XXH3_MIN_BYTES,
} from '../../services/core/wire/checksum.js';

// The frame's checksum is XXH3-64 of an image over 16 KiB and xxHash64 of a smaller one (seed 0),
// however the image arrived: whole, in one part, or in many. The streaming hashers are reused, so a
// sum must never carry a previous image. References: the package's one-shot functions, and the
// specification's own value for the empty input.

/** The reference sum of `image` by its size's algorithm (the one-shot functions, not the hashers under test). */
const reference = (image: Buffer): bigint =>
  checksumAlgorithmFor(image.length) === 'XXH3-64' ? xxh3.xxh64(image, 0n) : xxh64(image, 0n);

const cut = (image: Buffer, partBytes: number): Buffer[] => {
  const parts: Buffer[] = [];
  for (let at = 0; at < image.length; at += partBytes) parts.push(image.subarray(at, at + partBytes));
  return parts;
};

describe('imageChecksum', () => {
  it('picks XXH3-64 above 16 KiB and xxHash64 at or under it, whole or in parts', () => {
    expect(XXH3_MIN_BYTES).toBe(16_384);
    expect(checksumAlgorithmFor(16_384)).toBe('xxHash64');
    expect(checksumAlgorithmFor(16_385)).toBe('XXH3-64');
    const atLimit = randomFillSync(Buffer.alloc(16_384));
    const overLimit = randomFillSync(Buffer.alloc(16_385));
    expect(imageChecksum(cut(atLimit, 1000))).toBe(xxh64(atLimit));
    expect(imageChecksum(atLimit)).not.toBe(xxh3.xxh64(atLimit));
    expect(imageChecksum(cut(overLimit, 1000))).toBe(xxh3.xxh64(overLimit));
    expect(imageChecksum(overLimit)).not.toBe(xxh64(overLimit));
    // The specifications' values for the empty input: the small algorithm's is xxHash64's.
    expect(imageChecksum(Buffer.alloc(0))).toBe(0xef46db3751d8e999n);
    expect(xxh3.xxh64(Buffer.alloc(0))).toBe(0x2d06800538d394c2n);
  });

  it('is the algorithm of its size over the image whole, in one part and in parts of any size', () => {
    for (const size of [0, 1, 1000, 16_384, 16_385, 65_536, 545_792]) {
      const image = randomFillSync(Buffer.alloc(size));
      const expected = reference(image);
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
    expect(imageChecksum(cut(first, 65_536))).toBe(reference(first));
    expect(imageChecksum(cut(second, 65_536))).toBe(reference(second));
    expect(imageChecksum(cut(second, 65_536))).toBe(reference(second));
    const small = randomFillSync(Buffer.alloc(10_000));
    expect(imageChecksum(cut(small, 3000))).toBe(reference(small));
    expect(imageChecksum(cut(small, 3000))).toBe(reference(small));
  });

  it('tells one changed byte, by either algorithm', () => {
    for (const [size, at] of [
      [100_000, 77_777],
      [10_000, 7_777],
    ] as const) {
      const image = randomFillSync(Buffer.alloc(size));
      const sum = imageChecksum(cut(image, 3000));
      image[at] = image[at]! ^ 1;
      expect(imageChecksum(cut(image, 3000)), `${size} B`).not.toBe(sum);
    }
  });
});

describe('ImagePartHasher', () => {
  it("sums an image over 16 KiB part by part to the frame's checksum, afresh each image, timing each part", () => {
    const hasher = new ImagePartHasher();
    // An image of xxHash64's sizes is left whole to the receiver's verifier.
    expect(hasher.start(XXH3_MIN_BYTES)).toBe(false);
    for (const [size, partBytes] of [
      [XXH3_MIN_BYTES + 1, 7],
      [545_792, 65_536],
      [545_792, 1000],
      [200_000, 200_000],
    ] as const) {
      const image = randomFillSync(Buffer.alloc(size));
      expect(hasher.start(size)).toBe(true);
      const parts = cut(image, partBytes);
      for (const part of parts) hasher.update(part);
      const sum = hasher.digest();
      expect(sum.value, `${size} B in ${partBytes} B parts`).toBe(reference(image));
      expect(sum.value).toBe(imageChecksum(parts));
      // The parts' hashes add up; the longest is one of them.
      expect(sum.longestPartNs).toBeGreaterThan(0n);
      expect(sum.longestPartNs).toBeLessThanOrEqual(sum.hashNs);
    }
  });

  it('keeps its own state: the module-wide hasher used meanwhile (another connection) does not disturb it', () => {
    const hasher = new ImagePartHasher();
    const image = randomFillSync(Buffer.alloc(300_000));
    const other = randomFillSync(Buffer.alloc(300_000));
    hasher.start(image.length);
    hasher.update(image.subarray(0, 100_000));
    expect(imageChecksum(cut(other, 65_536))).toBe(reference(other));
    hasher.update(image.subarray(100_000));
    expect(hasher.digest().value).toBe(reference(image));
  });
});
