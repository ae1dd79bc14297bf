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
