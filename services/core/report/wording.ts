import {
  COMPARABLE_RUN_IMAGES,
  MIN_STABLE_IMAGES,
  MIN_STABLE_SPAN_MS,
  OVERLOAD_RATE_SHARE,
  type SectionResult,
} from '../model/section.js';
import { MIN_STABLE_REPEATS, STABLE_SPREAD_SHARE, type HostFacts, type RunInfo } from './report.js';

// What output.log (text/) and report.html (html/) both say, word for word: the definitions of the
// figures, titles, notes. Kept in one place so the two renderers never drift apart.

/** The timing definitions, printed in output.log's header exactly as measured. */
export const TIMING_DEFINITIONS = [
  'WINDOW = the number of images stamped and not yet acknowledged. An image is stamped when the window admits ' +
    'it; any wait for library or kernel backpressure is inside its time.',
  'Transmission time of image i = receiver monotonic clock when the last byte of image i is in hand − ' +
    'transmitter monotonic clock when image i was stamped.',
  'Round trip of image i = transmitter monotonic clock when the ack of image i is processed − when image i was ' +
    'stamped.',
  'Across two kernels (two hosts, two clocks), stamps are moved onto the receiver clock by the offset estimated ' +
    'before each section: every one-way time then reads ± x ms, the bound on its clock error (the uncertainty of ' +
    'the offset, widened by its drift until the end of the section), and the round trip beside it, on the ' +
    'transmitter clock alone, is the clock-free figure.',
  `RATE (open loop) = image i of a section is due at its start + i ÷ RATE, whatever the acks do; one due while ` +
    `WINDOW are unacknowledged waits for a slot and goes late. Figures from due time add the stamp − due time of ` +
    `each image, that wait included: coordinated omission corrected, as wrk2 does. A section is OVERLOADED when ` +
    `its images went out or arrived at under ${OVERLOAD_RATE_SHARE * 100} % of RATE; its MB/s is the load it ` +
    `delivered, not a capacity.`,
  'Frame age (under RATE, the headline) = receiver monotonic clock when the last byte of a frame is in hand − when ' +
    'the frame was due: its time on the link plus any wait before it was handed to the link. A frame is late when ' +
    'its age exceeds DEADLINE_MS (default one frame interval, 1000 ÷ RATE); a section MISSED ITS DEADLINE when ' +
    'its late frames and those never delivered intact are over DEADLINE_MISS_PERCENT (default 1 %) of those sent. ' +
    'Gap = time between two consecutive arrivals; jitter = |gap − frame interval|.',
  'Through a broker that stamps each message as it stores it (NATS JetStream: ns; Redis streams: the ' +
    'entry ID, ms), transmission time = to the broker (stamp → the broker stamp) + from the broker ' +
    '(broker stamp → last byte in hand): one stamp cannot tell the time in the broker from the way out, ' +
    'so both are in the from part. The broker stamp is its wall clock, mapped onto the receiver monotonic ' +
    'clock by pairing the two at the section start and end: each part reads ± x ms (half the stamp step ' +
    'plus the mapping error), and is split only on one kernel (transmitter, receiver and broker on one ' +
    'clock). The other brokers (MQTT, AMQP, core NATS, Redis lists and pub/sub) stamp nothing: their time ' +
    'is not split.',
  'Total transfer time of a transport = arrival of its last image − stamp of its first (warm-up images excluded).',
  'The receiver stamps an image as soon as it is in hand, before any hash of it, and verifies it on the same ' +
    'thread: TCP and Unix sockets sum a large image part by part as they read it (the last part after the stamp), ' +
    'the other transports hash it once the callback that delivered it returns. Bytes that arrive during a hash are ' +
    'stamped after it, so when the receiver is busy (a full window) one-way times, round trips and MB/s include ' +
    'waiting behind hashing. Each section gives the share of the receiver thread busy time spent hashing; ' +
    'VERIFY=false measures without it.',
  'Cold start = a new connection: the time its connect took, and the first image sent on it (one-way and round ' +
    'trip), before any warm-up; apart from the steady figures.',
  `MB/s marked ~ is indicative: one section cannot say how far its MB/s moves from run to run ` +
    `(docs/measurement.md, Warm-up and sample size: how far it moved here), so the MB/s of a summary is unmarked ` +
    `only when REPEAT gave at least ${MIN_STABLE_REPEATS} completed repeats within ±${STABLE_SPREAD_SHARE * 100} % ` +
    `of their median; a section under ${MIN_STABLE_IMAGES} images or ${MIN_STABLE_SPAN_MS} ms is marked whatever ` +
    `the repeats.`,
] as const;

/**
 * Transports whose broker stamps nothing a receiver can read (MQTT, AMQP without a plugin, core NATS, Redis lists and
 * pub/sub): their sections say so where a stamping broker's are split. Kept beside the transport table by a test.
 */
export const BROKERS_STAMPING_NOTHING: ReadonlySet<string> = new Set([
  'mqtt',
  'amqp',
  'nats',
  'redis-list',
  'redis-pubsub',
  'redis-kv',
]);

/** "Node v20.20.2", with the flags the process ran with after it ("Node v20.20.2 --no-concurrent-marking"). */
export function nodeDescription(host: Pick<HostFacts, 'nodeVersion' | 'nodeFlags'>): string {
  return ['Node', host.nodeVersion, ...(host.nodeFlags ?? [])].join(' ');
}

/** Title of a section: its label, "(baseline)" for the floor the others are compared against. */
export function sectionTitle(section: Pick<SectionResult, 'label' | 'baseline'>): string {
  return section.baseline ? `${section.label} (baseline)` : section.label;
}

/** Below the tables when a section's percentiles come from a short run. */
export const SHORT_RUN_NOTE =
  `Short run: fewer than ` +
  COMPARABLE_RUN_IMAGES.toLocaleString('en-US') +
  ` images per section, so even the p50 is not comparable with another run's: from one process pair to the next ` +
  `it moves by more than transports differ (docs/measurement.md, Warm-up and sample size). Compare runs of ` +
  `IMAGE_COUNT=${COMPARABLE_RUN_IMAGES} or more with REPEAT=${MIN_STABLE_REPEATS}.`;

/** Who took part: one transmitter with its clients, one receiver. */
export function peersText(run: Pick<RunInfo, 'config' | 'receivers'>): string {
  const clients = run.config.clients ?? 1;
  const receivers = run.receivers ?? 1;
  return (
    `one transmitter` +
    (clients > 1
      ? ` with ${clients} clients (connections) per transport, each with its own window`
      : ', one connection per transport') +
    `; ${receivers > 1 ? `${receivers} receivers, every image to each` : 'one receiver'}`
  );
}
