import { describe, expect, it } from 'vitest';
import type { CeilingCell, ShapeName } from '../../scripts/bench/ceiling-model.js';
import { chooseTableLines } from '../../scripts/bench/choose-table.js';
import { optionsFrom, planFrom } from '../../scripts/bench/options.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { fixtureCost, fixturePlan, fixtureSection } from '../helpers/fixtures.js';

// docs/transports.md's "Which to choose" from one ceiling run: each figure the median of the rounds with its
// distribution-free 95 % interval, failed rounds counted, rows ordered by the large shape's MB/s.

const plan = planFrom(optionsFrom(['ceiling', '--transports=tcp,zeromq', '--rounds=6'], []));
const base = fixtureSection(fixturePlan({ transport: 'tcp', label: 'tcp' }), [1, 1]);

/** A completed section with the figures the table reads. */
const section = (figure: number, cpu = { tx: 0.3, rx: 0.5 }): SectionResult => ({
  ...base,
  throughputMBps: figure,
  imagesPerSecond: figure,
  latency: { ...base.latency!, p50Ms: figure },
  cost: {
    ...fixtureCost,
    transmitter: { ...fixtureCost.transmitter!, cpuMsPerImage: cpu.tx },
    receiver: { ...fixtureCost.receiver!, cpuMsPerImage: cpu.rx },
    broker: null,
  },
});
const failed: SectionResult = { ...base, ok: false, failure: 'no ack for 10000 ms after 3 of 3100 images' };

const cell = (transport: string, shape: ShapeName, round: number, ours: SectionResult): CeilingCell => ({
  transport,
  shape,
  round,
  ours,
  oursUnverified: undefined,
  ceiling: { failed: 'not run' },
});

const rounds = [1, 2, 3, 4, 5, 6];
const cells: CeilingCell[] = [
  // zeromq first in the cells, and slower: the table puts tcp first.
  ...rounds.map((r) => cell('zeromq', 'large', r, r === 6 ? failed : section(900 + r))),
  ...rounds.map((r) => cell('tcp', 'large', r, section(900 + 100 * r, { tx: 0.2 + r / 100, rx: 0.5 }))),
  ...rounds.map((r) => cell('tcp', 'small', r, section(40_000 + r))),
  ...rounds.map((r) => cell('zeromq', 'small', r, failed)),
  ...rounds.map((r) => cell('tcp', 'latency', r, section(0.25 + r / 100))),
  ...rounds.map((r) => cell('zeromq', 'latency', r, section(0.3))),
];

describe('chooseTableLines', () => {
  const lines = chooseTableLines(plan, cells, []);

  it('gives each figure its median and interval; failed rounds counted; no round completed: its failure', () => {
    // tcp large: 1000…1500, median 1250; six rounds give x(1)…x(6) (coverage 1 − 2/64). CPU: medians 0.235 (shown
    // 0.24) and 0.5.
    expect(lines).toContain(
      '| TCP | 1,250 (1,000–1,500) | 0.24 + 0.50 | - | 40,004 (40,001–40,006) | 0.29 (0.26–0.31) |',
    );
    // zeromq: five large rounds (no interval under six), the sixth failed.
    expect(lines).toContain(
      '| ZeroMQ | 903, 1 of 6 rounds failed | 0.30 + 0.50 | - | fails: no ack for 10000 ms after 3 of 3100 ' +
        'images | 0.30 (0.30–0.30) |',
    );
  });

  it('orders the rows by the large shape, fastest first, under a header naming each shape', () => {
    const rows = lines.filter((line) => line.startsWith('| '));
    expect(rows[0]).toBe(
      '| transport | 533.0 KiB × WINDOW 16: MB/s | CPU ms/image: TX + RX (+ broker) | below its library | ' +
        '1.0 KiB × WINDOW 256: images/s | 533.0 KiB one at a time: one-way p50 ms |',
    );
    expect(rows.slice(1).map((row) => row.split(' | ')[0])).toEqual(['| TCP', '| ZeroMQ']);
  });
});
