import { Xxh64, xxh64 } from '@node-rs/xxhash';

// xxHash64 from @node-rs/xxhash (native): ~10 GB/s here, against ~3 GB/s for zlib.crc32, so
// verifying an image costs a small fraction of moving it even on the TCP baseline.

/** 64-bit checksum of an image, whole or in the parts it arrived in. */
export function imageChecksum(payload: Buffer | readonly Buffer[]): bigint {
  if (Buffer.isBuffer(payload)) return xxh64(payload);
  const hasher = new Xxh64();
  for (const part of payload) hasher.update(part);
  return hasher.digest();
}
