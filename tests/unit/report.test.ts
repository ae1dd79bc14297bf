import { describe, expect, it } from 'vitest';
import { renderOutputLog, renderResultsJson, renderSummary, runSucceeded, type RunReport } from '../../services/core/report.js';
import { SectionRecorder, type SectionPlan } from '../../services/core/section.js';

const plan = (transport: string, label: string, baseline = false): SectionPlan => ({ sectionId: 1, transport, label, baseline, imageCount: 2, warmup: 0, imageSizeBytes: 545_792, window: 1 });
const header = (seq: number, sentAtNs: bigint) => ({ sectionId: 1, seq, sizeBytes: 545_792, checksum: 0n, sentAtNs });

function sampleReport(): RunReport {
  const ws = new SectionRecorder(plan('websocket', 'WebSocket'));
  ws.record(header(0, 1_000_000n), 3_413_000n, true);
  ws.record(header(1, 3_500_000n), 4_700_000n, true);
  const tcp = new SectionRecorder(plan('tcp', 'TCP', true));
  tcp.record(header(0, 0n), 500_000n, true);
  return {
    schemaVersion: 1,
    run: {
      startedAt: '2026-11-23T08:00:00.000Z',
      receiverHost: 'rx',
      transmitterHost: 'tx',
      nodeVersion: 'v20.20.2',
      imageDescription: 'assets/sample.png',
      imageSizeBytes: 545_792,
      imageCount: 2,
      window: 1,
      warmup: 0,
      transports: ['websocket', 'tcp'],
    },
    finishedAt: '2026-11-23T08:00:01.000Z',
    sections: [ws.result(null), tcp.result('no acknowledgement for 10000 ms')],
  };
}

describe('renderOutputLog', () => {
  it('renders header, sections with three decimals, and the summary', () => {
    expect(renderOutputLog(sampleReport())).toBe(`image-transfer-bench results
Date: 2026-11-23T08:00:00.000Z (finished 2026-11-23T08:00:01.000Z)
Receiver host: rx; transmitter host: tx
Node: v20.20.2
Image: assets/sample.png
Images per transport: 2 (533.0 KiB each) after 0 unrecorded warm-up images; window 1
Transports: websocket, tcp
Definitions:
  Transmission time of image i = receiver monotonic clock when the last byte of image i is in hand − transmitter monotonic clock just before it started sending image i.
  Total transfer time of a transport = arrival of its last image − send start of its first (warm-up images excluded).
Times are milliseconds; MB/s counts 10^6 bytes of intact images per second of total transfer time.

=== WebSocket performance test: 2 images transfer (533.0 KiB each, window 1) ===
Image 1 transmission time: 2.413 ms
Image 2 transmission time: 1.200 ms
Total transfer time: 3.700 ms

=== TCP (baseline) performance test: 2 images transfer (533.0 KiB each, window 1) ===
Image 1 transmission time: 0.500 ms
Image 2: LOST (never arrived)
Total transfer time: 0.500 ms
FAILED: no acknowledgement for 10000 ms

=== Summary ===
Transport       OK  Lost  Corrupt  p50 ms  max ms  Total ms    MB/s  Result
--------------  --  ----  -------  ------  ------  --------  ------  ------
WebSocket        2     0        0   1.200   2.413     3.700   295.0  ok
TCP (baseline)   1     1        0   0.500   0.500     0.500  1091.6  FAILED: no acknowledgement for 10000 ms
Result: FAILED: at least one transport lost, corrupted or failed to deliver images (see above).
`);
  });
});

describe('renderSummary and runSucceeded', () => {
  it('says ok only when every section is ok', () => {
    const report = sampleReport();
    expect(runSucceeded(report)).toBe(false);
    expect(runSucceeded({ sections: [report.sections[0]!] })).toBe(true);
    expect(runSucceeded({ sections: [] })).toBe(false);
    expect(renderSummary({ sections: [report.sections[0]!] }).split('\n')).toHaveLength(3);
  });
});

describe('renderResultsJson', () => {
  it('keeps every per-image time and parses back to the same report', () => {
    const report = sampleReport();
    const parsed = JSON.parse(renderResultsJson(report)) as RunReport;
    expect(parsed).toEqual(report);
    expect(parsed.sections[0]!.images.map((i) => i.timeMs)).toEqual([2.413, 1.2]);
  });
});
