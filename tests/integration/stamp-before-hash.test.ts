import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ImagePartHasher, imageChecksum, type PartHasher } from '../../services/core/wire/checksum.js';
import type { ReceivedFrame } from '../../services/transports/contract.js';
import { transportByName } from '../../services/transports/index.js';
import { Verifier } from '../../services/receiver/verifier.js';
import { eventually, openPair, stampedHeader } from '../helpers/harness.js';

// No arrival stamp waits for more than one part's hash. The hash is made slow on purpose (a busy
// wait), and every hash takes a marker from inside it; the stamps are compared with those markers,
// never with wall times, so a loaded machine cannot make the test pass or fail. Byte streams (tcp,
// unix) sum a large image's parts as they read them: every part but the last is hashed before the
// image's stamp, the last after it, and a stamp never follows more than one of the previous image's
// part hashes. Message transports hand the image whole: its hash runs after its stamp (and after
// every stamp of the same callback), and before the next one, never a whole loop turn's run.

/** How long each slow hash keeps the thread: far over what the reads and the ack between two stamps take. */
const SLOW_HASH_MS = 4;
/** Images over XXH3_MIN_BYTES (summed part by part), several socket reads each. */
const IMAGE_BYTES = 200 * 1024;
/** Sent at once: the bytes of the later ones wait in the kernel while the earlier ones are hashed. */
const IMAGE_COUNT = 6;

/** One slow hash: of which image (in the order they came), its marker (taken inside it, at its start) and its end. */
interface HashMark {
  image: number;
  startNs: bigint;
  endNs: bigint;
}

/** Keeps the thread for SLOW_HASH_MS, marking the hash it stands for. */
function slowly(marks: HashMark[], image: number): void {
  const startNs = process.hrtime.bigint();
  const untilNs = startNs + BigInt(SLOW_HASH_MS * 1e6);
  while (process.hrtime.bigint() < untilNs);
  marks.push({ image, startNs, endNs: process.hrtime.bigint() });
}

/** The receiver app's part hasher, each part's hash made slow and marked. */
function slowPartHasher(marks: HashMark[]): PartHasher {
  const real = new ImagePartHasher();
  let image = -1;
  return {
    start(sizeBytes) {
      image++;
      return real.start(sizeBytes);
    },
    update(part) {
      slowly(marks, image);
      real.update(part);
    },
    digest: () => real.digest(),
  };
}

/** Sends IMAGE_COUNT images at once over a pair, and waits for every ack; the images. */
async function sendAll(pair: Awaited<ReturnType<typeof openPair>>): Promise<Buffer[]> {
  const images = Array.from({ length: IMAGE_COUNT }, () => randomBytes(IMAGE_BYTES));
  for (const [seq, image] of images.entries()) pair.link.send(stampedHeader(image, seq), image);
  await eventually(() => pair.seen.acks.length === IMAGE_COUNT || pair.seen.failures.length > 0, 20_000);
  expect(pair.seen.failures).toEqual([]);
  expect(pair.seen.delivered.map((f) => f.header.seq)).toEqual(images.map((_, seq) => seq));
  return images;
}

describe('a byte stream sums the parts as it reads them, and stamps before the last part is hashed', () => {
  for (const name of ['tcp', 'unix']) {
    it(`${name}: each image's earlier parts are hashed before its stamp, its last part after`, async () => {
      const marks: HashMark[] = [];
      const pair = await openPair(transportByName(name), { partHasher: () => slowPartHasher(marks) });
      try {
        const images = await sendAll(pair);
        const stamps = pair.seen.delivered.map((f) => f.arrivalNs);
        for (const [seq, frame] of pair.seen.delivered.entries()) {
          // The sum is the image's, and it came with the image: nothing is left for the receiver to hash.
          expect(frame.partsChecksum?.value, `seq ${seq}`).toBe(imageChecksum(images[seq]!));
          const own = marks.filter((m) => m.image === seq);
          // Read in several parts, each hashed as it came.
          expect(own.length, `seq ${seq}: parts hashed`).toBeGreaterThan(1);
          const last = own.at(-1)!;
          // The stamp is taken before the slow hash of the last part starts, after every earlier part's hash ended.
          expect(stamps[seq]! < last.startNs, `seq ${seq}: stamp before its last part's hash`).toBe(true);
          for (const earlier of own.slice(0, -1))
            expect(earlier.endNs < stamps[seq]!, `seq ${seq}: earlier part hashed before its stamp`).toBe(true);
          // Of this image's hashes, only the last part's runs after its stamp, and it is over before the next stamp.
          expect(own.filter((m) => m.startNs > stamps[seq]!)).toEqual([last]);
          if (seq + 1 < stamps.length)
            expect(last.endNs < stamps[seq + 1]!, `seq ${seq}: before next stamp`).toBe(true);
        }
        // Between two stamps, at most one part of an earlier image was hashed: the one that completed it.
        for (let seq = 1; seq < stamps.length; seq++) {
          const between = marks.filter((m) => m.image < seq && m.startNs > stamps[seq - 1]! && m.endNs < stamps[seq]!);
          expect(between.length, `hashes of earlier images before stamp ${seq}`).toBeLessThanOrEqual(1);
        }
      } finally {
        await pair.close();
      }
    }, 30_000);
  }

  it('tcp: without a part hasher (VERIFY=false, or a test of the transport alone), nothing is summed', async () => {
    const pair = await openPair(transportByName('tcp'));
    try {
      await sendAll(pair);
      expect(pair.seen.delivered.map((f) => f.partsChecksum)).toEqual(Array(IMAGE_COUNT).fill(undefined));
    } finally {
      await pair.close();
    }
  }, 30_000);
});

describe('a message transport hands the image whole: its hash runs after its stamp and before the next', () => {
  for (const name of ['websocket', 'zeromq', 'grpc']) {
    it(`${name}: every image's hash starts after its stamp, and no stamp follows more than one hash`, async () => {
      const marks: HashMark[] = [];
      const stamps: bigint[] = [];
      const verdicts: boolean[] = [];
      // As the receiver's session does: the image is queued for the verifier inside deliver.
      const verifier = new Verifier(undefined, (payload) => {
        slowly(marks, verdicts.length);
        return imageChecksum(payload);
      });
      const onDeliver = (frame: ReceivedFrame): void => {
        stamps.push(frame.arrivalNs);
        verifier.enqueue(frame.payload, frame.header.checksum, (ok) => verdicts.push(ok));
      };
      const pair = await openPair(transportByName(name), { onDeliver, partHasher: () => new ImagePartHasher() });
      try {
        await sendAll(pair);
        await eventually(() => verdicts.length === IMAGE_COUNT);
        expect(verdicts).toEqual(Array(IMAGE_COUNT).fill(true));
        expect(pair.seen.delivered.map((f) => f.partsChecksum)).toEqual(Array(IMAGE_COUNT).fill(undefined));
        for (let seq = 0; seq < IMAGE_COUNT; seq++) {
          const own = marks.filter((m) => m.image === seq);
          expect(own).toHaveLength(1);
          expect(stamps[seq]! < own[0]!.startNs, `seq ${seq}: stamp before its hash`).toBe(true);
        }
        for (let seq = 1; seq < IMAGE_COUNT; seq++) {
          const between = marks.filter((m) => m.startNs > stamps[seq - 1]! && m.endNs < stamps[seq]!);
          expect(between.length, `hashes before stamp ${seq}`).toBeLessThanOrEqual(1);
        }
      } finally {
        await pair.close();
      }
    }, 30_000);
  }
});
