import { describe, expect, it } from 'vitest';
import type { OverheadSummary } from '../../scripts/lib/overhead.js';
import type { CeilingSummary } from '../../scripts/bench/ceiling-model.js';
import { loopbackLines } from '../../scripts/bench/ceiling-tables.js';
import { optionsFrom, planFrom } from '../../scripts/bench/options.js';

// The ceiling part's loopback table: every transport's large-shape MB/s, ours and its ceiling
// client's, as a share of the higher of the two loopback references' medians.

const plan = planFrom(optionsFrom(['ceiling', '--transports=tcp,zeromq', '--shapes=large', '--rounds=3'], []));

const overhead = (oursMedian: number, ceilingMedian: number): OverheadSummary => ({
  pairedRounds: 3,
  oursMedian,
  ceilingMedian,
  overhead: 1 - oursMedian / ceilingMedian,
  overheadMin: null,
  overheadMax: null,
  pairMedian: null,
  pairCI: null,
  ours: null,
  ceiling: null,
});
const large = (transport: string, ours: number, ceiling: number): CeilingSummary => ({
  transport,
  shape: 'large',
  figure: 'MB/s',
  overhead: overhead(ours, ceiling),
  overheadUnverified: null,
});

describe('loopbackLines', () => {
  it('holds each transport against the higher reference, from the medians of the rounds', () => {
    const lines = loopbackLines(
      plan,
      [large('tcp', 2000, 3000), large('zeromq', 1000, 2500)],
      [
        { nodeNetMBps: 3800, iperf3MBps: 5000, problems: [] },
        { nodeNetMBps: 4000, iperf3MBps: 6000, problems: [] },
        { nodeNetMBps: 4200, iperf3MBps: 4000, problems: [] },
      ],
    ).join('\n');
    // Medians: node:net 4000, iperf3 5000: the limit is 5000.
    expect(lines).toContain('node:net pair (two processes, 4 MiB writes) 4000 MB/s, iperf3 5000 MB/s');
    expect(lines).toMatch(/tcp\s+2000\.0\s+3000\.0\s+40 %\s+60 %/);
    expect(lines).toMatch(/zeromq\s+1000\.0\s+2500\.0\s+20 %\s+50 %/);
  });

  it('says when iperf3 is missing, and uses the node:net pair alone', () => {
    const missing = 'iperf3 is not installed (Debian: apt-get install iperf3): the node:net pair alone';
    const lines = loopbackLines(
      plan,
      [large('tcp', 2000, 3000)],
      [{ nodeNetMBps: 4000, iperf3MBps: null, problems: [missing] }],
    ).join('\n');
    expect(lines).toContain(`(${missing})`);
    expect(lines).toContain('iperf3 - MB/s');
    expect(lines).toMatch(/tcp\s+2000\.0\s+3000\.0\s+50 %\s+75 %/);
  });

  it('is empty when the loopback was not measured (no large shape)', () => {
    expect(loopbackLines(plan, [], [])).toEqual([]);
  });
});
