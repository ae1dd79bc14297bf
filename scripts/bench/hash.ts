import { randomFillSync } from 'node:crypto';
import { crc32c } from '@node-rs/crc32';
import { Xxh64, xxh3, xxh64 } from '@node-rs/xxhash';
import { renderTable } from '../../services/core/report/text/format.js';
import { formatSize } from '../../services/core/config/size.js';
import { fixed, median } from './format.js';

// The checksum candidates of the verify part, measured in this process: how long each takes per
// image, the image whole or in the 64 KiB parts a socket hands over, from cache (the same image
// again: the receiver hashes bytes the kernel has just copied) and from memory (a pool eight times
// the size of this machine's last-level cache, each image read once per pass: the memory traffic
// included). Rounds interleave the candidates, so drift hits them alike; the median is reported.

/** A checksum the frame could carry: whole-image and part-by-part forms, which must agree. */
export interface Candidate {
  name: string;
  whole(image: Buffer): bigint | number;
  parts(parts: readonly Buffer[]): bigint | number;
}

const xxh3Hasher = xxh3.Xxh3.withSeed();
/** XXH3-64 (seed 0) through one reused streaming hasher: a new one per image costs ~3 µs. */
function streamXxh3(parts: readonly Buffer[]): bigint {
  xxh3Hasher.reset();
  for (const part of parts) xxh3Hasher.update(part);
  return xxh3Hasher.digest();
}

/** The candidates: xxHash64 and XXH3-64 (the frame's, by image size) from one package, and CRC32C (SSE4.2 if any). */
export const CHECKSUM_CANDIDATES: readonly Candidate[] = [
  {
    name: 'xxHash64 (@node-rs/xxhash)',
    whole: (image) => xxh64(image),
    parts: (parts) => {
      const hasher = new Xxh64();
      for (const part of parts) hasher.update(part);
      return hasher.digest();
    },
  },
  {
    // The package's one-shot xxh3.xxh64() does not take the SIMD path its streaming hasher takes: both are shown.
    name: 'XXH3-64 one-shot (@node-rs/xxhash)',
    whole: (image) => xxh3.xxh64(image),
    parts: (parts) => streamXxh3(parts),
  },
  {
    name: 'XXH3-64 streaming (@node-rs/xxhash)',
    whole: (image) => streamXxh3([image]),
    parts: (parts) => streamXxh3(parts),
  },
  {
    name: 'CRC32C (@node-rs/crc32)',
    whole: (image) => crc32c(image),
    parts: (parts) => {
      let crc = 0;
      for (const part of parts) crc = crc32c(part, crc);
      return crc;
    },
  },
];

const PART_BYTES = 64 * 1024;
const POOL_BYTES = 256 * 1024 * 1024;
const ROUNDS = 7;
/** Bytes hashed per round from cache (the same image again), as many as one pass over the pool from memory. */
const HOT_BYTES = 256 * 1024 * 1024;

/** One candidate's medians: µs per image for each form and place. */
export interface HashFigures {
  name: string;
  hotWholeUs: number;
  hotPartsUs: number;
  coldWholeUs: number;
  coldPartsUs: number;
}

/** The image cut as a socket hands it over. */
export function partsOf(image: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  for (let at = 0; at < image.length; at += PART_BYTES) parts.push(image.subarray(at, at + PART_BYTES));
  return parts;
}

/** µs per hash of `hash` over `images` (in order, `times` passes). */
function timeUs<T>(images: readonly T[], times: number, hash: (image: T) => unknown): number {
  let sink = 0;
  const startNs = process.hrtime.bigint();
  for (let pass = 0; pass < times; pass++) for (const image of images) sink ^= Number(hash(image)) & 1;
  const elapsedNs = Number(process.hrtime.bigint() - startNs);
  if (sink === 2) console.log(sink); // keeps the results alive
  return elapsedNs / 1000 / (images.length * times);
}

/** Measures every candidate on images of `imageBytes`; see the module comment. */
export function measureHashes(imageBytes: number): HashFigures[] {
  const poolCount = Math.max(1, Math.floor(POOL_BYTES / imageBytes));
  const pool = Array.from({ length: poolCount }, () => randomFillSync(Buffer.allocUnsafe(imageBytes)));
  const poolParts = pool.map(partsOf);
  const hot = pool[0]!;
  const hotHashes = Math.max(1, Math.floor(HOT_BYTES / imageBytes));
  const hotParts = poolParts[0]!;
  for (const candidate of CHECKSUM_CANDIDATES)
    if (candidate.whole(hot) !== candidate.parts(hotParts)) throw new Error(`${candidate.name}: parts disagree`);
  const samples = CHECKSUM_CANDIDATES.map(() => ({
    hotWhole: [] as number[],
    hotParts: [] as number[],
    coldWhole: [] as number[],
    coldParts: [] as number[],
  }));
  for (let round = 0; round < ROUNDS; round++) {
    // Rotated each round: no candidate always runs first, on a cache another left behind.
    for (let turn = 0; turn < CHECKSUM_CANDIDATES.length; turn++) {
      const index = (turn + round) % CHECKSUM_CANDIDATES.length;
      const candidate = CHECKSUM_CANDIDATES[index]!;
      const own = samples[index]!;
      own.hotWhole.push(timeUs([hot], hotHashes, candidate.whole));
      own.hotParts.push(timeUs([hotParts], hotHashes, candidate.parts));
      own.coldWhole.push(timeUs(pool, 1, candidate.whole));
      own.coldParts.push(timeUs(poolParts, 1, candidate.parts));
    }
  }
  return CHECKSUM_CANDIDATES.map((candidate, index) => {
    const own = samples[index]!;
    return {
      name: candidate.name,
      hotWholeUs: median(own.hotWhole) ?? Number.NaN,
      hotPartsUs: median(own.hotParts) ?? Number.NaN,
      coldWholeUs: median(own.coldWhole) ?? Number.NaN,
      coldPartsUs: median(own.coldParts) ?? Number.NaN,
    };
  });
}

/** The candidates' table: µs per image and GB/s, from cache and from memory. */
export function hashLines(imageBytes: number, figures: readonly HashFigures[]): string[] {
  const gbps = (us: number): string => fixed(imageBytes / us / 1000, 1);
  return [
    `Checksum candidates on ${formatSize(imageBytes)} images, in this process: µs per image (GB/s), whole and in ` +
      `${formatSize(PART_BYTES)} parts, from cache and from a ${formatSize(POOL_BYTES)} pool (memory); median of ` +
      `${ROUNDS} rounds.`,
    renderTable(
      ['Checksum', 'cache whole', 'cache parts', 'memory whole', 'memory parts'],
      figures.map((f) => [
        f.name,
        `${fixed(f.hotWholeUs, 1)} (${gbps(f.hotWholeUs)})`,
        `${fixed(f.hotPartsUs, 1)} (${gbps(f.hotPartsUs)})`,
        `${fixed(f.coldWholeUs, 1)} (${gbps(f.coldWholeUs)})`,
        `${fixed(f.coldPartsUs, 1)} (${gbps(f.coldPartsUs)})`,
      ]),
      false,
    ),
  ];
}
