import { describe, expect, it } from 'vitest';
import {
  renderImageLine,
  renderOutputLog,
  renderOutputLogEnd,
  renderOutputLogHeader,
  renderSectionFooter,
  renderSectionHeading,
} from '../../services/core/report/text/output-log.js';
import {
  renderResultsJson,
  runSucceeded,
  summarizeTransports,
  type RunReport,
} from '../../services/core/report/report.js';
import { renderSummary } from '../../services/core/report/text/summary-tables.js';
import { fanOutOf, withFanOut, type ColdStart, type SectionResult } from '../../services/core/model/section.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import type { WarmupOutcome, WarmupPlan } from '../../services/core/model/warmup.js';
import { mergeLatency } from '../../services/core/model/stats.js';
import {
  collectingSink,
  fixturePlan,
  fixtureReport,
  fixtureSection,
  twoClockSection,
  resultWith,
  fixtureCost as cost,
} from '../helpers/fixtures.js';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';

const clock = { offsetNs: -12_000, uncertaintyNs: 150_000, roundTripNs: 300_000, samples: 8, applied: false };

const broker = {
  cpuUserMs: 1,
  cpuSystemMs: 1,
  cpuMs: 2,
  cpuMsPerImage: 1,
  peakRssBytes: 20 * 1024 * 1024,
  eventLoopUtilization: null,
};

/** WARMUP=auto with the default times and WINDOW=1. */
const steadyPlan: WarmupPlan = {
  mode: 'steady',
  minMs: 500,
  minImages: 128,
  maxMs: 10_000,
  maxImages: 100_000,
  blockImages: 32,
  blocks: 4,
  tolerance: 0.05,
};

/** The section as if it had warmed up under `plan` (outcome `warmedUp`) and its connection had this cold start. */
function warmed(
  section: SectionResult,
  plan: WarmupPlan,
  warmedUp: WarmupOutcome | null,
  coldStart: ColdStart,
): SectionResult {
  return { ...section, warmup: plan, warmedUp, coldStart };
}

function sampleReport(): RunReport {
  const report = fixtureReport([
    warmed(
      fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket', clock }), [2.413, 1.2], null, cost),
      steadyPlan,
      { images: 1234, ms: 812.4, steady: true, mediansMs: [0.301, 0.299] },
      {
        connectMs: 3.25,
        firstImageMs: 5.125,
        firstImageRttMs: 6.5,
      },
    ),
    warmed(
      fixtureSection(fixturePlan({ transport: 'redis', label: 'Redis' }), [1.5, 1.5], null, { ...cost, broker }),
      steadyPlan,
      { images: 100_000, ms: 10_000.6, steady: false, mediansMs: [1.6, 1.9] },
      {
        connectMs: 1.125,
        firstImageMs: 2.25,
        firstImageRttMs: 2.75,
      },
    ),
    warmed(
      fixtureSection(
        fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }),
        [0.5, null],
        'no acknowledgement for 10000 ms',
      ),
      steadyPlan,
      { images: 64, ms: 500.2, steady: true, mediansMs: [0.6, 0.6] },
      {
        connectMs: null,
        firstImageMs: 0.75,
        firstImageRttMs: null,
      },
    ),
  ]);
  report.run.warmup = steadyPlan;
  report.run.arrivalNotes = ['Redis: one reply holds several images'];
  report.sections[1]!.verifyMs = 0.125;
  report.sections[1]!.verifyLongestRunMs = 0.0625;
  report.sections[1]!.verifyBusyShare = 0.25;
  report.sections[0]!.imagesFile = 'images-01-websocket.csv';
  return report;
}

describe('renderOutputLog', () => {
  it(
    "renders header, each section's heading and figures (no per-image lines: those are streamed), and the summary " +
      'tables',
    () => {
      expect(renderOutputLog(sampleReport())).toBe(
        `image-transfer-bench results
Date: 2026-11-23T08:00:00.000Z
Transmitter host: tx (Test CPU, 2 cores, 24.0 GiB, linux-x64 6.1.0, Node v20.20.2 --no-concurrent-marking)
Receiver host: rx (Test CPU, 2 cores, 24.0 GiB, linux-x64 6.1.0, Node v20.20.2 --no-concurrent-marking)
Host load: read on the receiver's host over each section's measured span (1-minute load average, CPUs busy, ` +
          `steal, other processes' CPU): results.json's hostLoad, and report.html's header, which warns when ` +
          `the host ` +
          `was busy enough to move the times
Libraries: ws 8.23.0, zeromq 6.8.0
Image: assets/sample.png
Images per transport: 2 (533.0 KiB each); window 1; repeat 1
Peers: one transmitter, one connection per transport; one receiver
Link: loopback, not shaped
Send schedule: closed loop (the next image goes as soon as the window has room)
Warm-up of each section, on its connection before the recorded images: until steady: at least 500 ms and 128 images, ` +
          `then until no median round trip of the last 2 blocks of 32 images is more than 5 % below the lowest of ` +
          `the 2 before; at most 10,000 ms (WARMUP=auto)
Transports: websocket, redis, tcp
Definitions:
  WINDOW = the number of images stamped and not yet acknowledged. An image is stamped when the window admits it; any ` +
          `wait for library or kernel backpressure is inside its time.
  Transmission time of image i = receiver monotonic clock when the last byte of image i is in hand − transmitter ` +
          `monotonic clock when image i was stamped.
  Round trip of image i = transmitter monotonic clock when the ack of image i is processed − when image i was stamped.
  Across two kernels (two hosts, two clocks), stamps are moved onto the receiver clock by the offset estimated ` +
          `before each section: every one-way time then reads ± x ms, the bound on its clock error (the uncertainty ` +
          `of the offset, widened by its drift until the end of the section), and the round trip beside it, on the ` +
          `transmitter clock alone, is the clock-free figure.
  RATE (open loop) = image i of a section is due at its start + i ÷ RATE, whatever the acks do; one due while WINDOW ` +
          `are unacknowledged waits for a slot and goes late. Figures from due time add the stamp − due time of each ` +
          `image, that wait included: coordinated omission corrected, as wrk2 does. A section is OVERLOADED when its ` +
          `images went out or arrived at under 95 % of RATE; its MB/s is the load it delivered, not a capacity.
  Frame age (under RATE, the headline) = receiver monotonic clock when the last byte of a frame is in hand − when ` +
          `the frame was due: its time on the link plus any wait before it was handed to the link. A frame is late ` +
          `when its age exceeds DEADLINE_MS (default one frame interval, 1000 ÷ RATE); a section MISSED ITS DEADLINE ` +
          `when its late frames and those never delivered intact are over DEADLINE_MISS_PERCENT (default 1 %) of ` +
          `those sent. Gap = time between two consecutive arrivals; jitter = |gap − frame interval|.
  Through a broker that stamps each message as it stores it (NATS JetStream: ns; Redis streams: the entry ID, ms), ` +
          `transmission time = to the broker (stamp → the broker stamp) + from the broker (broker stamp → last byte ` +
          `in hand): one stamp cannot tell the time in the broker from the way out, so both are in the from part. ` +
          `The broker stamp is its wall clock, mapped onto the receiver monotonic clock by pairing the two at the ` +
          `section start and end: each part reads ± x ms (half the stamp step plus the mapping error), and is split ` +
          `only on one kernel (transmitter, receiver and broker on one clock). The other brokers (MQTT, AMQP, core ` +
          `NATS, Redis lists and pub/sub) stamp nothing: their time is not split.
  Total transfer time of a transport = arrival of its last image − stamp of its first (warm-up images excluded).
  The receiver stamps an image as soon as it is in hand, before any hash of it, and verifies it on the same thread: ` +
          `TCP and Unix sockets sum a large image part by part as they read it (the last part after the stamp), the ` +
          `other transports hash it once the callback that delivered it returns. Bytes that arrive during a hash are ` +
          `stamped after it, so when the receiver is busy (a full window) one-way times, round trips and MB/s ` +
          `include waiting behind hashing. Each section gives the share of the receiver thread busy time spent ` +
          `hashing; VERIFY=false measures without it.
  Cold start = a new connection: the time its connect took, and the first image sent on it (one-way and round trip), ` +
          `before any warm-up; apart from the steady figures.
  MB/s marked ~ is indicative: one section cannot say how far its MB/s moves from run to run (docs/measurement.md, ` +
          `Warm-up and sample size: how far it moved here), so the MB/s of a summary is unmarked only when REPEAT ` +
          `gave at least 3 completed repeats within ±10 % of their median; a section under 30 images or 200 ms is ` +
          `marked whatever the repeats.
Arrivals handed over in batches:
  Redis: one reply holds several images.
Times are milliseconds; percentiles come from an HDR histogram (3 significant digits), max, mean and sample sd (n − ` +
          `1) exact from the times as they came.
A percentile is shown only where the sample supports it: p90 from 10 times, p99 from 100, p99.9 from 1,000 (with ` +
          `fewer, the nearest-rank percentile is the max itself); - otherwise.
MB/s counts 10^6 bytes of intact images per second of total transfer time.
Integrity: every image verified by the receiver (size and checksum: XXH3-64 over 16 KiB, xxHash64 under), after its ` +
          `ack, on the thread that ` +
          `stamps arrivals (see Verification in each section).
Per-image lines are written as the images arrive (in arrival order; the lost ones when the section ends); each ` +
          `section's CSV (named below it) holds every image with its round trip.
Clock offset, receiver − transmitter, estimated before each section and again after its last ack (lowest of 8 round ` +
          `trips over the control endpoint; ± half that round trip): in each section.

=== WebSocket performance test: 2 images transfer (533.0 KiB each, window 1) ===
Per-image records: images-01-websocket.csv
Total transfer time: 3.713 ms
Latency: p50 1.200, p90 -, p99 -, p99.9 -, max 2.413, mean 1.806 ± 0.858 ms (sample sd); 2 times, too few for the ` +
          `percentiles shown as -
Throughput: ~294.0 MB/s, 538.6 images/s (indicative: 2 images over 3.713 ms; under 30 images or 200 ms a section's ` +
          `MB/s is indicative whatever its repeats: raise IMAGE_COUNT)
Round trip: p50 1.300, p90 -, p99 -, p99.9 -, max 2.513, mean 1.906 ± 0.858 ms (sample sd); 2 times, too few for the ` +
          `percentiles shown as -
Window: 1.00 images in flight on average of WINDOW = 1 (100.0 % full, by Little's law from the round trips; it shows ` +
          `the window stayed full, not that the times are right)
Warm-up: steady after 812 ms, 1,234 images (median round trips 0.301 → 0.299 ms)
Cold start (new connection, before the warm-up): connect 3.250 ms, first image 5.125 ms one-way, 6.500 ms round trip
Cost, transmitter: CPU 4.0 ms (user 3.0, system 1.0), 2.000 ms/image, peak RSS 100.0 MiB, event loop 50% busy
Cost, receiver: CPU 3.0 ms (user 2.0, system 1.0), 1.500 ms/image, peak RSS 80.0 MiB, event loop 25% busy
Clock: receiver − transmitter −0.012 ± 0.150 ms (same kernel, not applied)

=== Redis performance test: 2 images transfer (533.0 KiB each, window 1) ===
Total transfer time: 3.100 ms
Latency: p50 1.500, p90 -, p99 -, p99.9 -, max 1.500, mean 1.500 ± 0.000 ms (sample sd); 2 times, too few for the ` +
          `percentiles shown as -
Throughput: ~352.1 MB/s, 645.2 images/s (indicative: 2 images over 3.100 ms; under 30 images or 200 ms a section's ` +
          `MB/s is indicative whatever its repeats: raise IMAGE_COUNT)
Round trip: p50 1.600, p90 -, p99 -, p99.9 -, max 1.600, mean 1.600 ± 0.000 ms (sample sd); 2 times, too few for the ` +
          `percentiles shown as -
Window: 1.00 images in flight on average of WINDOW = 1 (100.0 % full, by Little's law from the round trips; it shows ` +
          `the window stayed full, not that the times are right)
Warm-up: NOT STEADY after 10,001 ms, 100,000 images, its cap (median round trips 1.600 → 1.900 ms)
Cold start (new connection, before the warm-up): connect 1.125 ms, first image 2.250 ms one-way, 2.750 ms round trip
Cost, transmitter: CPU 4.0 ms (user 3.0, system 1.0), 2.000 ms/image, peak RSS 100.0 MiB, event loop 50% busy
Cost, receiver: CPU 3.0 ms (user 2.0, system 1.0), 1.500 ms/image, peak RSS 80.0 MiB, event loop 25% busy
Cost, broker: CPU 2.0 ms (user 1.0, system 1.0), 1.000 ms/image, RSS 20.0 MiB (larger of its two readings)
Verification: 0.1 ms hashing the recorded images, each after its ack, on the receiver thread that stamps arrivals: ` +
          `25% of its busy time in the span, which images queued behind it wait for when the window is full; bytes ` +
          `that arrive during a hash are stamped after it (longest run 0.063 ms); VERIFY=false measures without
Clock: offset not estimated

=== TCP (baseline) performance test: 2 images transfer (533.0 KiB each, window 1) ===
Total transfer time: 0.500 ms
Latency: p50 0.500, p90 -, p99 -, p99.9 -, max 0.500, mean 0.500 ± 0.000 ms (sample sd); 1 time, too few for the ` +
          `percentiles shown as -
Throughput: ~1091.6 MB/s, 2000.0 images/s (indicative: 1 image over 0.500 ms; under 30 images or 200 ms a section's ` +
          `MB/s is indicative whatever its repeats: raise IMAGE_COUNT)
Round trip: p50 0.600, p90 -, p99 -, p99.9 -, max 0.600, mean 0.600 ± 0.000 ms (sample sd); 1 time, too few for the ` +
          `percentiles shown as -
Window: 1.00 images in flight on average of WINDOW = 1 (100.0 % full, by Little's law from the round trips; it shows ` +
          `the window stayed full, not that the times are right)
Warm-up: steady after 500 ms, 64 images (median round trips 0.600 → 0.600 ms)
Cold start (new connection, before the warm-up): connect - ms, first image 0.750 ms one-way, - ms round trip
Cost, transmitter: not measured
Cost, receiver: not measured
Clock: offset not estimated
FAILED: no acknowledgement for 10000 ms

=== Summary (finished 2026-11-23T08:00:01.000Z) ===
Times in ms; one-way: p50 … mean ± sample sd; RTT: round trip, stamp → ack processed:
Transport       OK  Lost  Corrupt  p50 ms  p90 ms  p99 ms  p99.9 ms  max ms   mean ± sd ms  RTT p50  RTT p99  Total ` +
          `ms    MB/s  images/s  Result
--------------  --  ----  -------  ------  ------  ------  --------  ------  -------------  -------  -------  ` +
          `--------  ------  --------  ------
WebSocket        2     0        0   1.200       -       -         -   2.413  1.806 ± 0.858    1.300        -     ` +
          `3.713  ~294.0    ~538.6  ok
Redis            2     0        0   1.500       -       -         -   1.500  1.500 ± 0.000    1.600        -     ` +
          `3.100  ~352.1    ~645.2  ok, warm-up NOT STEADY in 1 of 1
TCP (baseline)   1     1        0       -       -       -         -       -              -        -        -         ` +
          `-       -         -  FAILED: no acknowledgement for 10000 ms
p90, p99 and p99.9 show - below 10, 100 and 1,000 images: with fewer, the percentile is the max itself; raise ` +
          `IMAGE_COUNT.
Short run: fewer than 1,000 images per section, so even the p50 is not comparable with another run's: from one ` +
          `process pair to the next it moves by more than transports differ (docs/measurement.md, Warm-up and sample ` +
          `size). Compare runs of IMAGE_COUNT=1000 or more with REPEAT=3.
~ indicative: fewer than 3 completed repeats, or their MB/s beyond ±10 % of the median (or a section under 30 images ` +
          `or 200 ms): run with REPEAT=3 or more for a figure its repeats vouch for.

Cold start, a new connection before its warm-up (median of the repeats; not part of the figures above):
Transport       connect ms  first image ms  first image RTT ms
--------------  ----------  --------------  ------------------
WebSocket            3.250           5.125               6.500
Redis                1.125           2.250               2.750
TCP (baseline)           -           0.750                   -

Cost per side (TX transmitter, RX receiver, broker: the server the transport goes through, from its own counters ` +
          `or /proc; CPU = user + system from the first recorded image to the last ack):
Transport       TX CPU ms/img  RX CPU ms/img  Broker CPU ms/img  TX CPU ms  RX CPU ms  TX peak RSS MiB  RX peak RSS ` +
          `MiB  TX loop busy  RX loop busy
--------------  -------------  -------------  -----------------  ---------  ---------  ---------------  ` +
          `---------------  ------------  ------------
WebSocket               2.000          1.500                  -        4.0        3.0            100.0             ` +
          `80.0           50%           25%
Redis                   2.000          1.500              1.000        4.0        3.0            100.0             ` +
          `80.0           50%           25%
TCP (baseline)              -              -                  -          -          -                -               ` +
          ` -             -             -

Host load: not recorded
Result: FAILED: at least one transport lost, corrupted or failed to deliver images (see above).
`,
      );
    },
  );

  it("is the header, each section's heading and footer, and the end, as the receiver writes them one by one", () => {
    const report = sampleReport();
    const sections = report.sections.map(
      (section) => `${renderSectionHeading(section, 1)}\n${renderSectionFooter(section)}`,
    );
    // The header, written before any section, says where the host load goes; the end gives its range.
    expect(renderOutputLog(report)).toBe(
      [renderOutputLogHeader(report.run), ...sections, renderOutputLogEnd(report)].join('\n\n'),
    );
    expect(renderOutputLogEnd(report)).toContain('\nHost load: not recorded\nResult: ');
    expect(renderOutputLogHeader(report.run)).toContain(
      "\nHost load: read on the receiver's host over each section's measured span (",
    );
    // The verdict comes last, after the summary, which says when the run finished; the header no longer does.
    expect(renderOutputLogHeader(report.run)).not.toContain('finished');
    expect(renderOutputLogEnd(report)).toMatch(
      /^=== Summary \(finished 2026-11-23T08:00:01\.000Z\) ===\n[\s\S]*\nResult: FAILED: [^\n]*\n$/,
    );
  });

  it('says an incomplete run is incomplete in its verdict, not its header', () => {
    const report = { ...sampleReport(), stopReason: 'the transmitter went away' };
    expect(renderOutputLogEnd(report)).toMatch(
      /\nResult: INCOMPLETE: the transmitter went away\. Sections not listed above did not run\.\n$/,
    );
    expect(renderOutputLog(report)).not.toContain('RUN INCOMPLETE');
  });
});

describe("output.log's streamed pieces", () => {
  it.each([
    ['an intact image', 1, 2_413_000, 'ok', false, 'Image 1 transmission time: 2.413 ms'],
    ['to three decimals', 7, 1_234_567, 'ok', false, 'Image 7 transmission time: 1.235 ms'],
    [
      'a corrupt image',
      2,
      1_200_000,
      'corrupt',
      false,
      'Image 2 transmission time: 1.200 ms (CORRUPT: checksum or size mismatch)',
    ],
    ['a lost image', 3, null, 'lost', false, 'Image 3: LOST (never arrived)'],
    [
      'an image across two clocks',
      1,
      1_200_000,
      'ok',
      true,
      'Image 1 transmission time: 1.200 ms (two clocks: ± the bound below)',
    ],
    [
      'a corrupt image across two clocks',
      4,
      2_000_000,
      'corrupt',
      true,
      'Image 4 transmission time: 2.000 ms (two clocks: ± the bound below) (CORRUPT: checksum or size mismatch)',
    ],
    ['a lost image across two clocks', 5, null, 'lost', true, 'Image 5: LOST (never arrived)'],
  ] as const)('renderImageLine: %s', (_name, image, oneWayNs, status, twoClocks, line) => {
    expect(renderImageLine(image, oneWayNs, status, twoClocks)).toBe(line);
  });

  it('renderSectionHeading names a count of images, or a DURATION, and the repeat when there are several', () => {
    const plan = fixturePlan({ transport: 'grpc', label: 'gRPC', imageCount: 500, window: 4, clients: 2, repeat: 2 });
    expect(renderSectionHeading(plan, 3)).toBe(
      '=== gRPC performance test: 500 images transfer (533.0 KiB each, window 4, 2 clients, repeat 2/3) ===',
    );
    expect(renderSectionHeading({ ...plan, durationMs: 90_000, clients: 1 }, 1)).toBe(
      '=== gRPC performance test: images for 1m30s (533.0 KiB each, window 4) ===',
    );
  });

  it("renderSectionFooter names the section's CSV when it has one, and says its clock", () => {
    const section = fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }), [1, 1]);
    expect(renderSectionFooter(section)).not.toContain('Per-image records');
    const footer = renderSectionFooter({ ...section, imagesFile: 'images-03-tcp-repeat2.csv' }).split('\n');
    expect(footer[0]).toBe('Per-image records: images-03-tcp-repeat2.csv');
    expect(footer.at(-1)).toBe('Clock: offset not estimated');
  });
});

describe('renderOutputLog: a short run says its percentiles are not comparable', () => {
  const plan = fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true });
  const note = (count: number): boolean =>
    renderOutputLog(
      fixtureReport([fixtureSection({ ...plan, imageCount: count }, Array<number>(count).fill(0.5))]),
    ).includes('\nShort run: fewer than 1,000 images per section');
  it.each([
    [10, true],
    [999, true],
    [1000, false],
  ])('%d images: the note %s', (count, shown) => {
    expect(note(count)).toBe(shown);
  });
});

describe('renderOutputLog: warm-up, cold start and indicative throughput', () => {
  /**
   * `count` images of 0.9 ms each (acknowledged at 1 ms), sent 1 ms apart, the last one taking `lastMs`: total = count
   * − 1 + lastMs.
   */
  const times = (count: number, lastMs: number): number[] => [...Array<number>(count - 1).fill(0.9), lastMs];
  const section = (timesMs: number[]): SectionResult =>
    fixtureSection(
      fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, imageCount: timesMs.length }),
      timesMs,
      null,
      cost,
    );
  const lineOf = (text: string, prefix: string): string[] => text.split('\n').filter((l) => l.startsWith(prefix));
  const summaryRow = (text: string): string =>
    text.split('\n').find((l) => l.startsWith('TCP (baseline) ') && /\bok\b|FAILED/.test(l))!;

  const indicativeNote =
    '~ indicative: fewer than 3 completed repeats, or their MB/s beyond ±10 % of the median (or a section under ' +
    '30 images or 200 ms): run with REPEAT=3 or more for a figure its repeats vouch for.';

  it(
    'prints a section of 30 images over exactly 200 ms plainly, but marks its summary ~ with one repeat: one run ' +
      'cannot vouch for its MB/s',
    () => {
      const stable = section(times(30, 171));
      expect([stable.totalMs, stable.okCount, stable.throughputIndicative]).toEqual([200, 30, false]);
      const text = renderOutputLog(fixtureReport([stable]));
      expect(lineOf(text, 'Throughput:')).toEqual(['Throughput: 81.9 MB/s, 150.0 images/s']);
      expect(text).not.toContain('(indicative:');
      expect(summaryRow(text)).toMatch(/\s200\.000\s+~81\.9\s+~150\.0\s+ok$/);
      expect(text).toContain(`\n${indicativeNote}\n`);
    },
  );

  /** Three repeats of 30 images, the last image of each taking `lastMs` (total 29 + lastMs ms). */
  const repeats = (lastMs: readonly number[]): RunReport =>
    fixtureReport(
      lastMs.map((last, i) => ({ ...section(times(30, last)), repeat: i + 1 })),
      { repeat: lastMs.length },
    );

  it('unmarks the summary when three completed repeats lie within ±10 % of their median MB/s', () => {
    // Totals 200, 220 and 240 ms: 81.9, 74.5 and 68.2 MB/s, a half-range of 6.8, 9.2 % of the median 74.4.
    const report = repeats([171, 191, 211]);
    expect(report.transports[0]).toMatchObject({ completedRepeats: 3, throughputIndicative: false });
    const text = renderSummary(report);
    expect(text).toMatch(/^TCP \(baseline\) .*\s220\.000\s+74\.4\s+136\.4\s+ok$/m);
    expect(text).not.toContain('~');
  });

  it('keeps ~ when three repeats spread beyond ±10 %, or when only two completed', () => {
    // Totals 200, 220 and 260 ms: 81.9 to 62.9 MB/s, a half-range of 9.4, 12.7 % of the median 74.4.
    expect(repeats([171, 191, 231]).transports[0]).toMatchObject({ completedRepeats: 3, throughputIndicative: true });
    expect(repeats([171, 191]).transports[0]).toMatchObject({ completedRepeats: 2, throughputIndicative: true });
    expect(renderSummary(repeats([171, 191, 231]))).toContain(indicativeNote);
  });

  it.each([
    ['29 images over 300 ms', times(29, 272), '~52.8 MB/s, 96.7 images/s (indicative: 29 images over 300.000 ms'],
    ['30 images over 199.5 ms', times(30, 170.5), '~82.1 MB/s, 150.4 images/s (indicative: 30 images over 199.500 ms'],
  ])(
    'marks the throughput of %s indicative with ~ and says why, in the section and the summary',
    (_name, timesMs, figures) => {
      const text = renderOutputLog(fixtureReport([section(timesMs)]));
      expect(lineOf(text, 'Throughput:')).toEqual([
        `Throughput: ${figures}; under 30 images or 200 ms a section's MB/s is indicative whatever its repeats: ` +
          `raise IMAGE_COUNT)`,
      ]);
      expect(summaryRow(text)).toMatch(/\s~\d+\.\d\s+~\d+\.\d\s+ok$/);
      expect(text).toContain(`\n${indicativeNote}\n`);
    },
  );

  it('keeps ~ on a section under 30 images however tight its repeats', () => {
    const report = fixtureReport(
      [1, 2, 3].map((repeat) => ({ ...section(times(29, 272)), repeat })),
      { repeat: 3 },
    );
    expect(report.transports[0]).toMatchObject({ completedRepeats: 3, throughputIndicative: true });
  });

  it('describes a fixed warm-up, a cold one and one that never finished', () => {
    const fixed: WarmupPlan = { mode: 'images', images: 2 };
    const report = fixtureReport([
      warmed(
        section([1, 1]),
        fixed,
        { images: 2, ms: 3.4, steady: null, mediansMs: null },
        { connectMs: 0.5, firstImageMs: 1, firstImageRttMs: 1.25 },
      ),
      warmed(
        fixtureSection(fixturePlan({ transport: 'redis', label: 'Redis' }), [1, 1]),
        fixed,
        { images: 0, ms: 0, steady: null, mediansMs: null },
        { connectMs: null, firstImageMs: null, firstImageRttMs: null },
      ),
      warmed(
        fixtureSection(fixturePlan({ transport: 'grpc', label: 'gRPC' }), [null, null], 'connect ECONNREFUSED'),
        fixed,
        null,
        { connectMs: null, firstImageMs: null, firstImageRttMs: null },
      ),
    ]);
    report.run.warmup = fixed;
    const text = renderOutputLog(report);
    expect(lineOf(text, 'Warm-up')).toEqual([
      'Warm-up of each section, on its connection before the recorded images: 2 unrecorded images (WARMUP=2)',
      'Warm-up: 3 ms, 2 images',
      'Warm-up: none: cold',
      'Warm-up: did not finish',
    ]);
    expect(lineOf(text, 'Cold start (')).toEqual([
      'Cold start (new connection, before the warm-up): connect 0.500 ms, first image 1.000 ms one-way, 1.250 ' +
        'ms round trip',
      'Cold start (new connection, before the warm-up): connect - ms, first image - ms one-way, - ms round trip',
      'Cold start (new connection, before the warm-up): connect - ms, first image - ms one-way, - ms round trip',
    ]);
  });

  it('names no warm-up at all as a cold run in the header', () => {
    const text = renderOutputLog(fixtureReport([section([1, 1])]));
    expect(lineOf(text, 'Warm-up of each section')).toEqual([
      'Warm-up of each section, on its connection before the recorded images: none (WARMUP=0: a cold run)',
    ]);
    expect(lineOf(text, 'Warm-up:')).toEqual(['Warm-up: none: cold']);
  });
});

describe('summarizeTransports', () => {
  it(
    'picks the median completed repeat by total time, totals the counts over every repeat and gives the completed ' +
      "repeats' spread",
    () => {
      const plan = fixturePlan({ transport: 'grpc', label: 'gRPC' });
      const sections = [
        fixtureSection({ ...plan, repeat: 1 }, [3, 3]),
        fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }), [1, 1]),
        fixtureSection({ ...plan, repeat: 2 }, [1, 1]),
        fixtureSection({ ...plan, repeat: 3 }, [2, null], 'lost one'),
      ];
      const [grpc, tcp] = summarizeTransports(sections, ['grpc', 'tcp']);
      // Totals: repeat 1 is 6.1 ms (second image sent at the first's ack, 3.1 ms, + 3 ms), repeat 2
      // is 2.1 ms; repeat 3 (failed) is left out of the median and the spread: of two, the lower is the median.
      expect(grpc).toMatchObject({
        transport: 'grpc',
        repeats: 3,
        completedRepeats: 2,
        ok: false,
        failure: 'lost one',
        okCount: 5,
        lostCount: 1,
        corruptCount: 0,
        medianSection: 2,
      });
      expect(grpc?.spread.totalMs).toEqual({ min: 2.1, max: 6.1 });
      expect(grpc?.spread.p50Ms).toEqual({ min: 1, max: 3 });
      expect(grpc?.spread.rttP50Ms).toEqual({ min: 1.1, max: 3.1 });
      expect(tcp).toMatchObject({ repeats: 1, ok: true, medianSection: 1 });
    },
  );

  it(
    'gives the median of each cold-start figure over the ' + 'repeats that have it, and counts the repeats not steady',
    () => {
      const plan = fixturePlan({ transport: 'grpc', label: 'gRPC' });
      const outcome = (steady: boolean | null): WarmupOutcome => ({
        images: 100,
        ms: 600,
        steady,
        mediansMs: steady === null ? null : [1, 1.2],
      });
      const sections = [
        warmed(fixtureSection({ ...plan, repeat: 1 }, [1, 1]), steadyPlan, outcome(false), {
          connectMs: 3,
          firstImageMs: 5,
          firstImageRttMs: null,
        }),
        warmed(fixtureSection({ ...plan, repeat: 2 }, [1, 1]), steadyPlan, outcome(true), {
          connectMs: 1,
          firstImageMs: null,
          firstImageRttMs: null,
        }),
        warmed(fixtureSection({ ...plan, repeat: 3 }, [1, 1]), steadyPlan, outcome(false), {
          connectMs: 2,
          firstImageMs: 8,
          firstImageRttMs: null,
        }),
        // Failed before its warm-up ended: it adds its connect time, and is not counted as not steady.
        warmed(fixtureSection({ ...plan, repeat: 4 }, [null, null], 'reset'), steadyPlan, null, {
          connectMs: 10,
          firstImageMs: null,
          firstImageRttMs: null,
        }),
        warmed(
          fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }), [1, 1]),
          steadyPlan,
          outcome(true),
          { connectMs: 0.5, firstImageMs: 0.25, firstImageRttMs: 0.75 },
        ),
      ];
      const [grpc, tcp] = summarizeTransports(sections, ['grpc', 'tcp']);
      // connect: 1, 2, 3, 10 → the mean of the middle two; first image: 5 and 8 → 6.5; no round trip at all → null.
      expect(grpc?.coldStart).toEqual({ connectMs: 2.5, firstImageMs: 6.5, firstImageRttMs: null });
      expect(grpc?.notSteadyRepeats).toBe(2);
      expect(tcp?.coldStart).toEqual({ connectMs: 0.5, firstImageMs: 0.25, firstImageRttMs: 0.75 });
      expect(tcp?.notSteadyRepeats).toBe(0);
    },
  );

  it('says in the summary how many repeats were not steady, when the transport is otherwise ok', () => {
    const plan = fixturePlan({ transport: 'grpc', label: 'gRPC' });
    const outcome = (steady: boolean): WarmupOutcome => ({ images: 100, ms: 600, steady, mediansMs: [1, 1.2] });
    const none: ColdStart = { connectMs: null, firstImageMs: null, firstImageRttMs: null };
    const report = fixtureReport(
      [1, 2, 3].map((repeat) =>
        warmed(fixtureSection({ ...plan, repeat }, [1, 1]), steadyPlan, outcome(repeat !== 2), none),
      ),
      { repeat: 3 },
    );
    expect(renderSummary(report)).toMatch(/^gRPC\s.*\sok, warm-up NOT STEADY in 1 of 3$/m);
    const allSteady = fixtureReport(
      [1, 2, 3].map((repeat) => warmed(fixtureSection({ ...plan, repeat }, [1, 1]), steadyPlan, outcome(true), none)),
      { repeat: 3 },
    );
    expect(renderSummary(allSteady)).toMatch(/^gRPC\s.*\sok$/m);
  });

  it('has no median when no repeat got an image through', () => {
    const [only] = summarizeTransports(
      [fixtureSection(fixturePlan({ transport: 'redis', label: 'Redis' }), [null, null], 'down')],
      ['redis'],
    );
    expect(only?.medianSection).toBeNull();
    expect(only?.spread).toEqual({ totalMs: null, throughputMBps: null, p50Ms: null, p99Ms: null, rttP50Ms: null });
  });
});

describe('renderSummary with repeats', () => {
  it('says the figures are medians and adds the spread table', () => {
    const plan = fixturePlan({ transport: 'zeromq', label: 'ZeroMQ' });
    const report = fixtureReport(
      [fixtureSection({ ...plan, repeat: 1 }, [1, 1]), fixtureSection({ ...plan, repeat: 2 }, [2, 2])],
      { repeat: 2 },
    );
    const text = renderSummary(report);
    expect(text.split('\n')[0]).toBe(
      'Median of the completed repeats (every image intact) per transport, by total transfer time; ' +
        'OK/Lost/Corrupt count every repeat.',
    );
    expect(text).toContain('Spread across completed repeats (min–max):');
    // p99 of two images is withheld in each repeat, so it has no spread either.
    expect(text).toMatch(/^ZeroMQ\s+2\/2\s+266\.2–519\.8\s+1\.000–2\.000\s+-\s+1\.100–2\.100\s+2\.100–4\.100$/m);
  });
});

describe('runSucceeded and renderResultsJson', () => {
  it('says ok only when every section is ok', () => {
    const report = sampleReport();
    expect(runSucceeded(report)).toBe(false);
    expect(runSucceeded({ sections: [report.sections[0]!] })).toBe(true);
    expect(runSucceeded({ sections: [] })).toBe(false);
  });

  it(
    'parses back to the same report: each section names its ' + 'CSV and keeps its histograms, with no list per image',
    () => {
      const report = sampleReport();
      const parsed = JSON.parse(renderResultsJson(report)) as RunReport;
      expect(parsed).toEqual(report);
      const first = parsed.sections[0]!;
      expect(first.imagesFile).toBe('images-01-websocket.csv');
      expect(first).not.toHaveProperty('images');
      // The histograms are what the one-way times and round trips were summarized from: merged alone, they give the
      // same summaries.
      expect(mergeLatency([{ summary: first.latency, histogramNs: first.histograms.oneWayNs }])).toEqual(first.latency);
      expect(mergeLatency([{ summary: first.rtt, histogramNs: first.histograms.rttNs }])).toEqual(first.rtt);
      expect(first.latency).toMatchObject({ count: 2, minMs: 1.2, maxMs: 2.413 });
    },
  );

  it(
    'writes results.json that the published schema accepts: steady, not steady and unfinished warm-ups, cold ' +
      'starts and fixed plans',
    () => {
      const report = sampleReport();
      expect(resultsSchemaErrors(JSON.parse(renderResultsJson(report)))).toEqual([]);
      const fixed: WarmupPlan = { mode: 'images', images: 0 };
      const cold = fixtureReport([
        warmed(
          fixtureSection(
            fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }),
            [null, null],
            'connect ECONNREFUSED',
          ),
          fixed,
          null,
          { connectMs: null, firstImageMs: null, firstImageRttMs: null },
        ),
      ]);
      cold.run.warmup = fixed;
      expect(resultsSchemaErrors(JSON.parse(renderResultsJson(cold)))).toEqual([]);
    },
  );

  it("writes each section's host load to results.json, which the schema accepts read, unread or absent", () => {
    const report = sampleReport();
    report.sections[0]!.hostLoad = {
      transmitterOnHost: true,
      cores: 2,
      loadAverage1mStart: 0.5,
      loadAverage1mEnd: 1.5,
      spanMs: 2000,
      hostBusyShare: 0.425,
      stealShare: 0.05,
      unaccountedShare: 0.05,
      otherProcessesCores: 0.5,
    };
    // Without /proc (macOS): the load average alone.
    report.sections[1]!.hostLoad = {
      ...report.sections[0]!.hostLoad,
      transmitterOnHost: null,
      cores: 8,
      spanMs: null,
      hostBusyShare: null,
      stealShare: null,
      unaccountedShare: null,
      otherProcessesCores: null,
    };
    report.sections[2]!.hostLoad = null;
    const parsed = JSON.parse(renderResultsJson(report)) as RunReport;
    expect(parsed.sections.map((s) => s.hostLoad)).toEqual(report.sections.map((s) => s.hostLoad));
    expect(resultsSchemaErrors(parsed)).toEqual([]);
    parsed.sections[0]!.hostLoad!.hostBusyShare = 1.5;
    expect(resultsSchemaErrors(parsed).join('\n')).toContain('/sections/0/hostLoad');
  });
});

describe('an open-loop run (RATE)', () => {
  // Due every 10 ms. With `lateMs`, image 2 waited that long for a window slot and image 3 went 2 ms late.
  function openLoopReport(lateMs: number, images = collectingSink(), deadlineMs?: number): RunReport {
    const plan = fixturePlan({
      transport: 'tcp',
      label: 'TCP',
      baseline: true,
      imageCount: 3,
      ratePerSecond: 100,
      ...(deadlineMs === undefined ? {} : { deadline: { deadlineMs, allowedLateShare: 0.01 } }),
    });
    const recorder = new SectionRecorder(plan, images.sink);
    recorder.beginRecording({ images: 0, ms: 0, steady: null, mediansMs: null }, 0n);
    const lagsNs = lateMs === 0 ? [0, 0, 0] : [0, lateMs * 1e6, 2e6];
    lagsNs.forEach((lagNs, seq) => {
      const sentAtNs = BigInt(seq * 10_000_000 + lagNs);
      recorder.record(
        { sectionId: 1, seq, sizeBytes: plan.imageSizeBytes, checksum: 0n, sentAtNs },
        sentAtNs + 1_000_000n,
      );
      recorder.verified(seq, true);
    });
    const sentPerSecond = 2e9 / (20e6 + lagsNs[2]!);
    const section = resultWith(recorder, null, {
      rttNs: [1_500_000, 1_500_000, 1_500_000],
      dueLagNs: lagsNs,
      achievedRatePerSecond: sentPerSecond,
    });
    const report = fixtureReport([section]);
    return { ...report, run: { ...report.run, config: { ...report.run.config, ratePerSecond: 100 } } };
  }

  it(
    'says the schedule, counts a late image from its due time, says OVERLOADED with both rates, and labels MB/s ' +
      'as the load',
    () => {
      const images = collectingSink();
      const log = renderOutputLog(openLoopReport(8, images));
      expect(log).toContain(
        'Send schedule: open loop at RATE 100 images/s (WINDOW bounds the images in flight; the headline is each ' +
          "frame's age from its due time)",
      );
      expect(log).toContain(
        '=== TCP (baseline) performance test: 3 images transfer (533.0 KiB each, window 1, RATE 100 images/s) ===',
      );
      // The late image's own line counts from its stamp; its wait is in the figures from due and in its CSV record.
      const late = images.arrivals.find((a) => a.image === 2)!;
      expect(renderImageLine(late.image, late.oneWayNs, late.intact ? 'ok' : 'corrupt', false)).toBe(
        'Image 2 transmission time: 1.000 ms',
      );
      expect(images.calls.find((c) => c.image === 2)).toMatchObject({ status: 'ok', dueLagNs: 8_000_000 });
      expect(log).not.toContain('NOT SENT');
      // Sent at 0, 18 and 22 ms, arrived 1 ms later each: 2 images after the first in 22 ms, 90.9 images/s.
      expect(log).toContain(
        'Open loop: RATE 100 images/s offered, sent at 90.9 and delivered at 90.9 images/s: OVERLOADED (under 95 ' +
          '% of RATE;',
      );
      // Frame age, from due: 1, 9 and 3 ms; three times support no p90. It leads, the time on the link after it.
      expect(log).toMatch(
        new RegExp(
          /^Total transfer time: [^\n]+\nFrame age \(from due time\): p50 3\.000, p90 -, p99 -, p99\.9 -, /.source +
            /max 9\.000[^\n]*\nDeadline[^\n]*\nArrivals[^\n]*\nTime on the link \(from the handover stamp\): /.source +
            /p50 1\.000, p90 -, p99 -, p99\.9 -, max 1\.000/.source,
          'm',
        ),
      );
      // Arrivals at 1, 19 and 23 ms: gaps of 18 and 4 ms against a 10 ms interval, jitter 8 and 6.
      expect(log).toContain(
        'Deadline 10.000 ms (one frame interval): late 0 of 3 (0.0 %), older than three intervals 0 of 3 (0.0 %); ' +
          'met: at most 1.0 % allowed (DEADLINE_MISS_PERCENT)',
      );
      expect(log).toContain(
        'Arrivals: longest gap 18.000 ms (interval 10.000 ms); jitter, |gap − interval|: mean 7.000 ± 1.414 (sd), ' +
          'p99 -, max 8.000 ms',
      );
      expect(log).toMatch(/^Throughput \(delivered at the offered RATE: the load, not a capacity\): ~/m);
      expect(log).toMatch(
        new RegExp(
          /age p50 +age p90 +age p99 +age p99\.9 +age max +age mean ± sd +link p50 +link p99 +RTT /.source +
            /p50 +RTT p99 +Total ms +MB\/s at RATE +images\/s at RATE +Result\n/.source,
        ),
      );
      expect(log).toMatch(/^TCP \(baseline\) +3 +0 +0 +3\.000 +- +- +- +9\.000 +4\.333 ± 4\.163 +1\.000 +- /m);
      expect(log).toMatch(/^TCP \(baseline\) .* ok, OVERLOADED at RATE \(see Open loop\)$/m);
      expect(log).toMatch(
        new RegExp(
          /RATE\/s +sent\/s +delivered\/s +send lag p50 +send lag p99 +send lag max +RTT from due /.source +
            /p50 +RTT from due p99 +Load\n[- ]+\nTCP /.source +
            /\(baseline\) +100\.0 +90\.9 +90\.9 +2\.001 +- +8\.000 +3\.500 +- +OVERLOADED\n/.source,
        ),
      );
      expect(log).toMatch(
        /^TCP \(baseline\) +10\.000 +3 +0 +0\.0 +0 +0 +0\.0 +18\.000 +7\.000 +1\.414 +- +8\.000 +met$/m,
      );
      expect(log).toContain(
        'Result: every transport delivered every image intact; 1 section was OVERLOADED at RATE (see Open loop): ' +
          'their frame ages, not their MB/s, say what the load cost.',
      );
    },
  );

  it('says a section that kept up kept up, and gives the plain verdict', () => {
    const log = renderOutputLog(openLoopReport(0));
    expect(log).toContain(
      'Open loop: RATE 100 images/s offered, sent at 100.0 and delivered at 100.0 images/s: kept up',
    );
    expect(log).toMatch(/^TCP \(baseline\) +100\.0 +100\.0 +100\.0 +0\.000 +- +0\.000 +1\.500 +- +kept up$/m);
    expect(log).not.toMatch(/ok, OVERLOADED|: OVERLOADED|MISSED ITS DEADLINE:|MISSED DEADLINE/);
    expect(log).toContain('Result: every transport delivered every image intact.');
  });

  it('counts a frame older than DEADLINE_MS as late, and a section over its allowed share says MISSED', () => {
    // Ages 1, 9 and 3 ms against a 5 ms deadline: one late of three, 33.3 % over the 1 % allowed.
    const log = renderOutputLog(openLoopReport(8, collectingSink(), 5));
    expect(log).toContain(
      'Deadline 5.000 ms (0.50 frame intervals of 10.000 ms): late 1 of 3 (33.3 %), older than three intervals 0 of ' +
        '3 (0.0 %); MISSED ITS DEADLINE: 33.3 % of frames late or not delivered, over the 1.0 % allowed ' +
        '(DEADLINE_MISS_PERCENT)',
    );
    expect(log).toMatch(/^TCP \(baseline\) +5\.000 +3 +1 +33\.3 +0 +0 +33\.3 +18\.000 .* MISSED$/m);
    expect(log).toMatch(/^TCP \(baseline\) .* ok, OVERLOADED at RATE \(see Open loop\), MISSED DEADLINE \(see /m);
    expect(log).toContain(
      'Result: every transport delivered every image intact; 1 section was OVERLOADED at RATE (see Open loop): ' +
        'their frame ages, not their MB/s, say what the load cost; 1 section MISSED ITS DEADLINE (see Deadline and ' +
        'jitter).',
    );
  });

  it('writes results.json that its schema accepts', () => {
    for (const lateMs of [0, 8])
      expect(resultsSchemaErrors(JSON.parse(renderResultsJson(openLoopReport(lateMs))))).toEqual([]);
    expect(resultsSchemaErrors(JSON.parse(renderResultsJson(openLoopReport(8, collectingSink(), 5))))).toEqual([]);
  });
});

describe('a run across two hosts (two kernels, two clocks)', () => {
  // WebSocket crossed two clocks (offset applied); TCP ran on one kernel, its offset only reported.
  function twoHostReport(): RunReport {
    const oneKernel = { offsetNs: 12_000, uncertaintyNs: 50_000, roundTripNs: 100_000, samples: 8, applied: false };
    const tcp = fixtureSection(
      fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, clock: oneKernel }),
      [0.5, 0.5],
    );
    return fixtureReport([twoClockSection({ transport: 'websocket', label: 'WebSocket' }), tcp]);
  }

  it(
    'gives the one-way times their clock error bound below ' + 'their lines, and the clock-free round trip beside it',
    () => {
      const log = renderOutputLog(twoHostReport());
      // Each image's line points to the section's bound; its round trip is in the section's CSV.
      expect(renderImageLine(1, 1_200_000, 'ok', true)).toBe(
        'Image 1 transmission time: 1.200 ms (two clocks: ± the bound below)',
      );
      // Two images: no tail percentile, the max instead.
      expect(log).toContain(
        'Latency (one-way across two clocks: each figure ± 0.160 ms): p50 1.200, p90 -, p99 -, p99.9 -, max 2.000',
      );
      expect(log).toContain('Round trip (one clock: no offset): p50 1.500, p90 -, p99 -, p99.9 -, max 2.300');
      expect(log).toContain('first image 1.200 ms ± 0.160 ms one-way');
      // The offset before and after, and the bound both give, in each section's footer.
      expect(log).toMatch(
        new RegExp(
          /^=== WebSocket performance test:[^\n]*\n(?:(?!===)[^\n]*\n)*Clock: receiver − transmitter /.source +
            /\+5\.000 ± 0\.150 ms before, \+5\.040 ± 0\.120 ms after \(applied: one-way times ± 0\.160 /.source +
            /ms\)\n/.source,
          'm',
        ),
      );
      expect(log).toMatch(
        new RegExp(
          /^=== TCP \(baseline\) performance test:[^\n]*\n(?:(?!===)[^\n]*\n)*Clock: receiver − /.source +
            /transmitter \+0\.012 ± 0\.050 ms \(same kernel, not applied\)\n/.source,
          'm',
        ),
      );
    },
  );

  it("keeps the one-kernel section's lines as they were: no bound, the offset not applied", () => {
    const log = renderOutputLog(twoHostReport());
    expect(renderImageLine(1, 500_000, 'ok', false)).toBe('Image 1 transmission time: 0.500 ms');
    expect(log).toContain(
      '=== TCP (baseline) performance test: 2 images transfer (533.0 KiB each, window 1) ===\nTotal transfer ' +
        'time: 1.500 ms\nLatency: p50 0.500',
    );
    expect(log).toContain('Latency: p50 0.500');
    expect(log).toContain('Round trip: p50 0.600');
  });

  it('adds a clock ± column to the summary, with - for the one-kernel transport', () => {
    const summary = renderSummary(twoHostReport());
    expect(summary).toContain(
      "one-way: p50 … mean ± sample sd, across two clocks: each within clock ± of the truth (the offset's " +
        'bound); RTT: round trip, stamp → ack processed, on one clock (no offset):',
    );
    expect(summary).toMatch(/mean ± sd ms +clock ± ms +RTT p50/);
    // RTT p99 is - of two round trips.
    expect(summary).toMatch(/^WebSocket +2 +0 +0 +1\.200 .* ± 0\.160 +1\.500 +- /m);
    expect(summary).toMatch(/^TCP \(baseline\) +2 +0 +0 +0\.500 .* ± 0\.000 +- +0\.600 +- /m);
  });

  it('has no clock column when every section ran on one kernel', () => {
    expect(renderSummary(sampleReport())).not.toContain('clock ±');
  });

  it('writes the bound and the offset after the section to results.json, which its schema accepts', () => {
    const json = JSON.parse(renderResultsJson(twoHostReport())) as RunReport;
    expect(json.sections[0]!.oneWayClockErrorMs).toBe(0.16);
    expect(json.sections[0]!.clockAfter).toEqual({
      offsetNs: 5_040_000,
      uncertaintyNs: 120_000,
      roundTripNs: 240_000,
      samples: 8,
    });
    expect(json.sections[1]!.oneWayClockErrorMs).toBeNull();
    expect(resultsSchemaErrors(json)).toEqual([]);
  });
});

describe('several receivers across hosts (RECEIVERS > 1, two kernels)', () => {
  it("gives each receiver's one-way figures with its own clock error bound, and the largest for all of them", () => {
    const first = twoClockSection({ transport: 'tcp', label: 'TCP', baseline: true, receivers: 2 });
    const second = {
      ...twoClockSection({ transport: 'tcp', label: 'TCP', baseline: true, receivers: 2, receiverIndex: 1 }),
      oneWayClockErrorMs: 0.25,
    };
    const report = fixtureReport([withFanOut(first, fanOutOf([first, second], 'copies'))]);
    const log = renderOutputLog(report);
    // p99 of two or four times is withheld: -.
    expect(log).toContain(
      'Receivers: 2, a copy each: aggregate of 4 intact, p50 1.200, p99 - ms ± up to 0.250 ms, RTT p50 1.500 ' +
        'ms; receiver 1: 2 intact, p50 1.200, p99 - ms ± 0.160 ms, ',
    );
    expect(log).toMatch(
      new RegExp(
        /clock ±: the one-way clock error bound of a receiver on another kernel, "all" the /.source +
          /largest\):\nTransport +receiver +OK +Lost +p50 ms +p99 ms +clock ± ms +MB\/s\n/.source,
      ),
    );
    expect(log).toMatch(/^TCP \(baseline\) +all \(copies\) +4 +0 +1\.200 +- +± 0\.250 +-$/m);
    expect(log).toMatch(/^TCP \(baseline\) +2 +2 +0 +1\.200 +- +± 0\.250 +[\d.]+$/m);
    expect(resultsSchemaErrors(JSON.parse(renderResultsJson(report)))).toEqual([]);
  });
});
