import { imageChecksum } from '../wire/checksum.js';
import { decodeAck, decodeFrameHeader, encodeAck, encodeFrameHeader } from '../wire/frame.js';
import type { SectionPlan } from './section.js';
import { SectionRecorder } from './recorder.js';

// The code every section shares, run on made-up frames before a run's first section on both
// sides: frame header and ack codecs, the section record and its summary, and hashing. V8
// compiles a function for speed only after it has run a while; without this, whichever transport
// runs first pays for compiling the shared paths inside its warm-up and its cold start.

/** Frames run through the shared paths: V8's optimising tiers have long kicked in by then. */
export const SHARED_PATH_FRAMES = 5000;
/** Bytes hashed at most: enough rounds of the hash for its native binding to be warm, bounded for huge images. */
const HASHED_BYTES_LIMIT = 64 * 1024 * 1024;

/**
 * Runs the shared paths on `image` (any bytes of the run's image size); returns a count so that nothing is optimised
 * away.
 */
export function exerciseSharedPaths(image: Buffer, frames = SHARED_PATH_FRAMES): number {
  const plan: SectionPlan = {
    sectionId: 1,
    transport: 'shared paths',
    label: 'shared paths',
    baseline: false,
    repeat: 1,
    imageCount: frames,
    warmup: { mode: 'images', images: 0 },
    imageSizeBytes: image.length,
    window: 1,
    ratePerSecond: null,
    clients: 1,
    receivers: 1,
    receiverIndex: 0,
    clock: null,
  };
  const recorder = new SectionRecorder(plan);
  recorder.beginRecording({ images: 0, ms: 0, steady: null, mediansMs: null }, 0n);
  const roundTrips = new Float64Array(frames * 3);
  const checksum = imageChecksum(image);
  let accepted = 0;
  for (let seq = 0; seq < frames; seq++) {
    const sentAtNs = BigInt(seq) * 1000n;
    const header = decodeFrameHeader(
      encodeFrameHeader({ sectionId: plan.sectionId, seq, sizeBytes: image.length, checksum, sentAtNs }),
      image.length,
    );
    const status = recorder.record(header, sentAtNs + 500n);
    recorder.verified(seq, true);
    roundTrips.set([seq + 1, 1000, Number.NaN], seq * 3);
    if (decodeAck(encodeAck({ sectionId: header.sectionId, seq: header.seq, status })).status === 'accepted')
      accepted++;
  }
  recorder.roundTrips(roundTrips);
  const hashRounds = Math.max(1, Math.min(20, Math.floor(HASHED_BYTES_LIMIT / Math.max(1, image.length))));
  for (let round = 0; round < hashRounds; round++) if (imageChecksum(image) === checksum) accepted++;
  return accepted + recorder.result(null).okCount;
}
