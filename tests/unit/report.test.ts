import { describe, expect, it } from 'vitest';
import { renderOutputLog, renderResultsJson, renderSummary, runSucceeded, summarizeTransports, type RunReport } from '../../services/core/report.js';
import { fixturePlan, fixtureReport, fixtureSection } from '../helpers/fixtures.js';

const cost = {
  transmitter: { cpuUserMs: 3, cpuSystemMs: 1, cpuMs: 4, cpuMsPerImage: 2, peakRssBytes: 100 * 1024 * 1024, eventLoopUtilization: 0.5 },
  receiver: { cpuUserMs: 2, cpuSystemMs: 1, cpuMs: 3, cpuMsPerImage: 1.5, peakRssBytes: 80 * 1024 * 1024, eventLoopUtilization: 0.25 },
  broker: null,
};
const clock = { offsetNs: -12_000, uncertaintyNs: 150_000, roundTripNs: 300_000, samples: 8, applied: false };

const broker = { cpuUserMs: 1, cpuSystemMs: 1, cpuMs: 2, cpuMsPerImage: 1, peakRssBytes: 20 * 1024 * 1024, eventLoopUtilization: null };

function sampleReport(): RunReport {
  const report = fixtureReport([
    fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket', clock }), [2.413, 1.2], null, cost),
    fixtureSection(fixturePlan({ transport: 'redis', label: 'Redis' }), [1.5, 1.5], null, { ...cost, broker }),
    fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }), [0.5, null], 'no acknowledgement for 10000 ms'),
  ]);
  report.run.arrivalNotes = ['Redis: one reply holds several images'];
  report.sections[1]!.verifyMs = 0.125;
  return report;
}

describe('renderOutputLog', () => {
  it('renders header, sections with three decimals, and the summary tables', () => {
    expect(renderOutputLog(sampleReport())).toBe(`image-transfer-bench results
Date: 2026-11-23T08:00:00.000Z (finished 2026-11-23T08:00:01.000Z)
Transmitter host: tx (Test CPU, 2 cores, 24.0 GiB, linux-x64 6.1.0, Node v20.20.2)
Receiver host: rx (Test CPU, 2 cores, 24.0 GiB, linux-x64 6.1.0, Node v20.20.2)
Libraries: ws 8.23.0, zeromq 6.8.0
Image: assets/sample.png
Images per transport: 2 (533.0 KiB each) after 0 unrecorded warm-up images; window 1; repeat 1
Transports: websocket, redis, tcp
Definitions:
  WINDOW = the number of images stamped and not yet acknowledged. An image is stamped when the window admits it; any wait for library or kernel backpressure is inside its time.
  Transmission time of image i = receiver monotonic clock when the last byte of image i is in hand − transmitter monotonic clock when image i was stamped.
  Round trip of image i = transmitter monotonic clock when the ack of image i is processed − when image i was stamped.
  Total transfer time of a transport = arrival of its last image − stamp of its first (warm-up images excluded).
  The receiver acknowledges an image as soon as it is in hand and verifies it afterwards: no time, total or MB/s includes hashing.
Arrivals handed over in batches:
  Redis: one reply holds several images.
Times are milliseconds; percentiles come from an HDR histogram (3 significant digits), max, mean and sample sd (n − 1) from the raw times.
MB/s counts 10^6 bytes of intact images per second of total transfer time.
Integrity: every image verified by the receiver (size and xxHash64 checksum), after its ack.
Clock offset, receiver − transmitter, estimated before each section (lowest of 8 round trips over the control endpoint; ± half that round trip):
  WebSocket: −0.012 ± 0.150 ms (same kernel, not applied)
  Redis: not estimated
  TCP (baseline): not estimated

=== WebSocket performance test: 2 images transfer (533.0 KiB each, window 1) ===
Image 1 transmission time: 2.413 ms
Image 2 transmission time: 1.200 ms
Total transfer time: 2.413 ms
Latency: p50 1.200, p90 2.413, p99 2.413, p99.9 2.413, max 2.413, mean 1.806 ± 0.858 ms (sample sd)
Throughput: 452.4 MB/s, 828.8 images/s
Round trip: p50 1.300, p90 2.513, p99 2.513, p99.9 2.513, max 2.513, mean 1.906 ± 0.858 ms (sample sd)
Little's law: mean round trip = 1.580 × WINDOW × total ÷ images (1 when the window stays full)
Cost, transmitter: CPU 4.0 ms (user 3.0, system 1.0), 2.000 ms/image, peak RSS 100.0 MiB, event loop 50% busy
Cost, receiver: CPU 3.0 ms (user 2.0, system 1.0), 1.500 ms/image, peak RSS 80.0 MiB, event loop 25% busy

=== Redis performance test: 2 images transfer (533.0 KiB each, window 1) ===
Image 1 transmission time: 1.500 ms
Image 2 transmission time: 1.500 ms
Total transfer time: 2.500 ms
Latency: p50 1.500, p90 1.500, p99 1.500, p99.9 1.500, max 1.500, mean 1.500 ± 0.000 ms (sample sd)
Throughput: 436.6 MB/s, 800.0 images/s
Round trip: p50 1.600, p90 1.600, p99 1.600, p99.9 1.600, max 1.600, mean 1.600 ± 0.000 ms (sample sd)
Little's law: mean round trip = 1.280 × WINDOW × total ÷ images (1 when the window stays full)
Cost, transmitter: CPU 4.0 ms (user 3.0, system 1.0), 2.000 ms/image, peak RSS 100.0 MiB, event loop 50% busy
Cost, receiver: CPU 3.0 ms (user 2.0, system 1.0), 1.500 ms/image, peak RSS 80.0 MiB, event loop 25% busy
Cost, broker: CPU 2.0 ms (user 1.0, system 1.0), 1.000 ms/image, RSS 20.0 MiB (larger of its two readings)
Verification: 0.1 ms of hashing on the receiver, each image after its ack (in the receiver's CPU, in no time)

=== TCP (baseline) performance test: 2 images transfer (533.0 KiB each, window 1) ===
Image 1 transmission time: 0.500 ms
Image 2: LOST (never arrived)
Total transfer time: 0.500 ms
Latency: p50 0.500, p90 0.500, p99 0.500, p99.9 0.500, max 0.500, mean 0.500 ± 0.000 ms (sample sd)
Throughput: 1091.6 MB/s, 2000.0 images/s
Round trip: p50 0.600, p90 0.600, p99 0.600, p99.9 0.600, max 0.600, mean 0.600 ± 0.000 ms (sample sd)
Little's law: mean round trip = 1.200 × WINDOW × total ÷ images (1 when the window stays full)
Cost, transmitter: not measured
Cost, receiver: not measured
FAILED: no acknowledgement for 10000 ms

=== Summary ===
Times in ms; one-way: p50 … mean ± sample sd; RTT: round trip, stamp → ack processed:
Transport       OK  Lost  Corrupt  p50 ms  p90 ms  p99 ms  p99.9 ms  max ms   mean ± sd ms  RTT p50  RTT p99  Total ms   MB/s  images/s  Result
--------------  --  ----  -------  ------  ------  ------  --------  ------  -------------  -------  -------  --------  -----  --------  ------
WebSocket        2     0        0   1.200   2.413   2.413     2.413   2.413  1.806 ± 0.858    1.300    2.513     2.413  452.4     828.8  ok
Redis            2     0        0   1.500   1.500   1.500     1.500   1.500  1.500 ± 0.000    1.600    1.600     2.500  436.6     800.0  ok
TCP (baseline)   1     1        0       -       -       -         -       -              -        -        -         -      -         -  FAILED: no acknowledgement for 10000 ms

Cost per side (TX transmitter, RX receiver, broker: the server the transport goes through, from its own counters; CPU = user + system from the first recorded image to the last ack):
Transport       TX CPU ms/img  RX CPU ms/img  Broker CPU ms/img  TX CPU ms  RX CPU ms  TX peak RSS MiB  RX peak RSS MiB  TX loop busy  RX loop busy
--------------  -------------  -------------  -----------------  ---------  ---------  ---------------  ---------------  ------------  ------------
WebSocket               2.000          1.500                  -        4.0        3.0            100.0             80.0           50%           25%
Redis                   2.000          1.500              1.000        4.0        3.0            100.0             80.0           50%           25%
TCP (baseline)              -              -                  -          -          -                -                -             -             -

Result: FAILED: at least one transport lost, corrupted or failed to deliver images (see above).
`);
  });
});

describe('summarizeTransports', () => {
  it('picks the median completed repeat by total time, totals the counts over every repeat and gives the completed repeats\' spread', () => {
    const plan = fixturePlan({ transport: 'grpc', label: 'gRPC' });
    const sections = [
      fixtureSection({ ...plan, repeat: 1 }, [3, 3]),
      fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }), [1, 1]),
      fixtureSection({ ...plan, repeat: 2 }, [1, 1]),
      fixtureSection({ ...plan, repeat: 3 }, [2, null], 'lost one'),
    ];
    const [grpc, tcp] = summarizeTransports(sections, ['grpc', 'tcp']);
    // Totals: repeat 1 is 4 ms (second image sent at 1 ms + 3 ms), repeat 2 is 2 ms; repeat 3
    // (2 ms, failed) is left out of the median and the spread: of two, the lower is the median.
    expect(grpc).toMatchObject({ transport: 'grpc', repeats: 3, completedRepeats: 2, ok: false, failure: 'lost one', okCount: 5, lostCount: 1, corruptCount: 0, medianSection: 2 });
    expect(grpc?.spread.totalMs).toEqual({ min: 2, max: 4 });
    expect(grpc?.spread.p50Ms).toEqual({ min: 1, max: 3 });
    expect(grpc?.spread.rttP50Ms).toEqual({ min: 1.1, max: 3.1 });
    expect(tcp).toMatchObject({ repeats: 1, ok: true, medianSection: 1 });
  });

  it('has no median when no repeat got an image through', () => {
    const [only] = summarizeTransports([fixtureSection(fixturePlan({ transport: 'redis', label: 'Redis' }), [null, null], 'down')], ['redis']);
    expect(only?.medianSection).toBeNull();
    expect(only?.spread).toEqual({ totalMs: null, throughputMBps: null, p50Ms: null, p99Ms: null, rttP50Ms: null });
  });
});

describe('renderSummary with repeats', () => {
  it('says the figures are medians and adds the spread table', () => {
    const plan = fixturePlan({ transport: 'zeromq', label: 'ZeroMQ' });
    const report = fixtureReport([fixtureSection({ ...plan, repeat: 1 }, [1, 1]), fixtureSection({ ...plan, repeat: 2 }, [2, 2])], { repeat: 2 });
    const text = renderSummary(report);
    expect(text.split('\n')[0]).toBe('Median of the completed repeats (every image intact) per transport, by total transfer time; OK/Lost/Corrupt count every repeat.');
    expect(text).toContain('Spread across completed repeats (min–max):');
    expect(text).toMatch(/^ZeroMQ\s+2\/2\s+363\.9–545\.8\s+1\.000–2\.000\s+1\.000–2\.000\s+1\.100–2\.100\s+2\.000–3\.000$/m);
  });
});

describe('runSucceeded and renderResultsJson', () => {
  it('says ok only when every section is ok', () => {
    const report = sampleReport();
    expect(runSucceeded(report)).toBe(false);
    expect(runSucceeded({ sections: [report.sections[0]!] })).toBe(true);
    expect(runSucceeded({ sections: [] })).toBe(false);
  });

  it('keeps every per-image time and parses back to the same report', () => {
    const report = sampleReport();
    const parsed = JSON.parse(renderResultsJson(report)) as RunReport;
    expect(parsed).toEqual(report);
    expect(parsed.sections[0]!.images.map((i) => i.timeMs)).toEqual([2.413, 1.2]);
  });
});
