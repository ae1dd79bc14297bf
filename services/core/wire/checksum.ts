import { Xxh64, xxh3, xxh64 } from '@node-rs/xxhash';

// The frame's checksum (version 2 of the header): XXH3-64 of an image over XXH3_MIN_BYTES, xxHash64
// of a smaller one, both with seed 0, both from @node-rs/xxhash (native). Two algorithms because
// this package's XXH3 has a fixed cost of ~0.5 µs a call that its xxHash64 one-shot does not
// (`npm run bench -- verify`: 1 KB in 0.2 µs against 0.6 µs), while over large images XXH3 is the
// faster by nearly half (533 KiB in 64 KiB parts: 25 µs against 45 µs); the two cross near 16 KiB.
// The receiver hashes every image on the thread that stamps arrivals, so each µs is throughput.
// Version 1 of the header was xxHash64 at every size; a receiver refuses it by its version.
//
// XXH3 always goes through the streaming hasher: this package's one-shot xxh3.xxh64 took 241 µs
// for 533 KiB here, ten times its streaming hasher. A streaming hasher is reused (reset), as a new
// one costs ~1.3 µs; a small payload of one part (one socket read) goes through xxh64() at once.
//
// A byte-stream receiver sums a large image part by part as its socket hands the parts over
// (PartHasher, one per connection), each part while the kernel's copy of it is in cache, so that
// when an image's last byte is read only that part is left to hash after its stamp. A small image
// is left whole to the receiver's verifier: it is under one socket read, and xxh64()'s one-shot
// beats the streaming hasher on it.

/** Images larger than this (bytes) are summed with XXH3-64, the rest with xxHash64. */
export const XXH3_MIN_BYTES = 16 * 1024;

/** A checksum algorithm of the frame, by the name docs and reports give it. */
export type ChecksumAlgorithm = 'xxHash64' | 'XXH3-64';

/** The algorithm of an image of `sizeBytes`. */
export const checksumAlgorithmFor = (sizeBytes: number): ChecksumAlgorithm =>
  sizeBytes > XXH3_MIN_BYTES ? 'XXH3-64' : 'xxHash64';

const streaming64 = new Xxh64();
const streaming3 = xxh3.Xxh3.withSeed(0n);

/** The frame's 64-bit checksum of an image, whole or in the parts it arrived in. */
export function imageChecksum(payload: Buffer | readonly Buffer[]): bigint {
  const parts: readonly Buffer[] = Buffer.isBuffer(payload) ? [payload] : payload;
  let sizeBytes = 0;
  for (const part of parts) sizeBytes += part.length;
  // Synchronous from reset to digest: no other image can interleave on this one thread.
  if (sizeBytes > XXH3_MIN_BYTES) {
    streaming3.reset();
    for (const part of parts) streaming3.update(part);
    return streaming3.digest();
  }
  if (parts.length === 1) return xxh64(parts[0]!);
  streaming64.reset();
  for (const part of parts) streaming64.update(part);
  return streaming64.digest();
}

/** An image's checksum summed part by part as its parts were read, and what hashing them took. */
export interface PartsChecksum {
  /** The frame's checksum of the image (XXH3-64: only images over XXH3_MIN_BYTES are summed so). */
  value: bigint;
  /** Time spent hashing all its parts. */
  hashNs: bigint;
  /** The longest single part's hash: the most any read, and any stamp after it, waited for its hashing. */
  longestPartNs: bigint;
}

/** Sums one image at a time from its parts as they are read; one per connection, reused for every image. */
export interface PartHasher {
  /**
   * Starts an image of `sizeBytes`, dropping whatever the last one left; false when an image of that size is not summed
   * by parts (xxHash64 sizes: the receiver's verifier hashes it whole, after the read that completes it).
   */
  start(sizeBytes: number): boolean;
  /** Hashes the image's next part, in the order the parts arrive. */
  update(part: Buffer): void;
  /** The sum of the parts given since start(), and what hashing them took. */
  digest(): PartsChecksum;
}

/** The frame's checksum by parts: XXH3-64 through a streaming hasher of its own, each part's hash timed. */
export class ImagePartHasher implements PartHasher {
  // Its own hasher, never the module's: images of several connections interleave between reads.
  private readonly hasher = xxh3.Xxh3.withSeed(0n);
  private hashNs = 0n;
  private longestPartNs = 0n;

  start(sizeBytes: number): boolean {
    if (sizeBytes <= XXH3_MIN_BYTES) return false;
    this.hasher.reset();
    this.hashNs = 0n;
    this.longestPartNs = 0n;
    return true;
  }

  update(part: Buffer): void {
    const startNs = process.hrtime.bigint();
    this.hasher.update(part);
    const partNs = process.hrtime.bigint() - startNs;
    this.hashNs += partNs;
    if (partNs > this.longestPartNs) this.longestPartNs = partNs;
  }

  digest(): PartsChecksum {
    return { value: this.hasher.digest(), hashNs: this.hashNs, longestPartNs: this.longestPartNs };
  }
}
