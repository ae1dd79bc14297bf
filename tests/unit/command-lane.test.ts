import { describe, expect, it } from 'vitest';
import {
  aloneCommandCount,
  CommandArrivals,
  commandLaneOf,
  commandTimingFailure,
  DEFAULT_COMMAND_LANE,
  emptyTransmitterPhase,
  type TransmitterCommands,
} from '../../services/core/model/command-lane.js';
import { renderOutputLogHeader, renderSectionFooter } from '../../services/core/report/text/output-log.js';
import { renderSummary } from '../../services/core/report/text/summary-tables.js';
import {
  COMMAND_SEQ_BASE,
  commandOf,
  commandSeq,
  decodeFrameHeader,
  encodeFrameHeader,
} from '../../services/core/wire/frame.js';
import { fixturePlan, fixtureReport, fixtureSection } from '../helpers/fixtures.js';

// The command lane's pure parts: its seqs, the alone phase's count, the receiver's record joined with the
// transmitter's figures, and how output.log and the summary show it.

const summary = (times: number[]) => ({
  count: times.length,
  p50Ms: times[Math.ceil(times.length / 2) - 1]!,
  p90Ms: null,
  p99Ms: null,
  p999Ms: null,
  minMs: Math.min(...times),
  maxMs: Math.max(...times),
  meanMs: times.reduce((a, b) => a + b, 0) / times.length,
  stdDevMs: 0,
});

describe('command seqs', () => {
  it('puts commands above every image seq, alone and beside apart, and reads them back', () => {
    expect([COMMAND_SEQ_BASE, commandSeq('alone', 0), commandSeq('alone', 7), commandSeq('beside', 5)]).toEqual([
      2 ** 31,
      2 ** 31,
      2 ** 31 + 7,
      2 ** 31 + 2 ** 30 + 5,
    ]);
    expect([commandOf(2 ** 31 - 1), commandOf(2 ** 31 + 7), commandOf(2 ** 31 + 2 ** 30 + 5)]).toEqual([
      undefined,
      { phase: 'alone', index: 7 },
      { phase: 'beside', index: 5 },
    ]);
    expect(() => commandSeq('beside', 2 ** 30)).toThrow(RangeError);
    expect(() => commandSeq('alone', -1)).toThrow(RangeError);
  });

  it('survives the frame header: the highest command seq encodes and decodes unchanged', () => {
    const seq = commandSeq('beside', 2 ** 30 - 1);
    const header = { sectionId: 9, seq, sizeBytes: 64, checksum: 5n, sentAtNs: 12n };
    expect(decodeFrameHeader(encodeFrameHeader(header), 1024)).toEqual(header);
    expect(seq).toBe(2 ** 32 - 1);
  });

  it('sends a second of commands alone, at least 20 and at most 200', () => {
    expect([0.5, 2.5, 20, 100, 200, 500, 10_000].map(aloneCommandCount)).toEqual([20, 20, 20, 100, 200, 200, 200]);
  });

  it('takes the default lane for a transport that declares none', () => {
    expect(commandLaneOf({})).toBe(DEFAULT_COMMAND_LANE);
    expect(commandLaneOf({ commandLane: { unavailable: 'no' } })).toEqual({ unavailable: 'no' });
  });
});

const transmitter: TransmitterCommands = {
  ratePerSecond: 100,
  sizeBytes: 64,
  notRun: null,
  alone: { sent: 3, acked: 3, rtt: summary([0.4, 0.5, 0.6]), sendLag: summary([0.01, 0.02, 0.03]) },
  beside: { sent: 3, acked: 2, rtt: summary([4, 9]), sendLag: summary([0.1, 0.2, 0.3]) },
};

/** A receiver's record of three alone commands (0.2, 0.3, 0.25 ms) and two beside (3 and 8 ms, one corrupt). */
function arrivals(offsetNs: number | null): CommandArrivals {
  const record = new CommandArrivals({
    clock: offsetNs === null ? null : { offsetNs, uncertaintyNs: 0, roundTripNs: 0, samples: 1, applied: true },
  });
  const at = (phase: 'alone' | 'beside', index: number, sentAtNs: bigint, oneWayNs: bigint) =>
    record.record(
      { sectionId: 1, seq: commandSeq(phase, index), sizeBytes: 64, checksum: 0n, sentAtNs },
      sentAtNs + BigInt(offsetNs ?? 0) + oneWayNs,
    );
  expect([
    at('alone', 0, 1_000_000n, 200_000n),
    at('alone', 1, 2_000_000n, 300_000n),
    at('alone', 2, 3_000_000n, 250_000n),
    at('beside', 0, 10_000_000n, 3_000_000n),
    at('beside', 1, 20_000_000n, 8_000_000n),
  ]).toEqual(['alone', 'alone', 'alone', 'beside', 'beside']);
  record.verified('beside', false);
  record.verified('beside', true);
  return record;
}

describe('CommandArrivals', () => {
  it('times each command from its stamp to its arrival, by phase, and joins the transmitter figures', () => {
    const record = arrivals(null);
    const result = record.result(transmitter, DEFAULT_COMMAND_LANE);
    // min and max exact; p50 from the HDR histogram, within its 0.1 %.
    expect(result.alone.oneWay).toMatchObject({ count: 3, minMs: 0.2, maxMs: 0.3 });
    expect(result.alone.oneWay!.p50Ms).toBeCloseTo(0.25, 3);
    expect(result.beside.oneWay).toMatchObject({ count: 2, minMs: 3, maxMs: 8 });
    expect(result.beside.oneWay!.p50Ms).toBeCloseTo(3, 2);
    expect([
      result.alone.received,
      result.beside.received,
      result.beside.corrupt,
      result.beside.unacknowledged,
    ]).toEqual([3, 2, 1, 1]);
    expect([result.how, result.interleaves, result.notRun, result.beside.rtt]).toEqual([
      DEFAULT_COMMAND_LANE.how,
      false,
      null,
      transmitter.beside.rtt,
    ]);
    // 3 ms beside over 0.25 ms alone, to HDR's 3 digits.
    expect(result.delayFactorP50).toBeCloseTo(12, 1);
    record.destroy();
  });

  it("moves each stamp onto the receiver's clock when the section's offset is applied", () => {
    const record = arrivals(5_000_000);
    expect(record.result(transmitter, DEFAULT_COMMAND_LANE).alone.oneWay).toMatchObject({ minMs: 0.2, maxMs: 0.3 });
    record.destroy();
  });

  it('pairs each command with its round trip, and counts one stamped as arriving after its ack', () => {
    const record = arrivals(null);
    // One-way 0.2, 0.3 and 0.25 ms alone, 3 and 8 ms beside; beside 1's round trip (5 ms) is under its one-way time.
    record.roundTrip(commandSeq('alone', 0), 400_000);
    record.roundTrip(commandSeq('alone', 1), 500_000);
    record.roundTrip(commandSeq('beside', 0), 4_000_000);
    record.roundTrip(commandSeq('beside', 1), 5_000_000);
    // Repeated, unknown or an image's seq: not paired again.
    record.roundTrip(commandSeq('beside', 1), 5_000_000);
    record.roundTrip(commandSeq('beside', 9), 1);
    record.roundTrip(7, 1);
    const result = record.result(transmitter, DEFAULT_COMMAND_LANE);
    expect([
      result.alone.paired,
      result.alone.arrivalsAfterAck,
      result.beside.paired,
      result.beside.arrivalsAfterAck,
    ]).toEqual([2, 0, 2, 1]);
    expect(commandTimingFailure(result)).toBe(
      'timing check: 1 of 4 commands stamped as arriving after their ack was processed (one-way time over round ' +
        "trip on one clock): a command's arrival stamp came late",
    );
    record.destroy();
  });

  it('passes a lane whose every command arrived before its ack, and does not judge across two clocks', () => {
    const oneClock = arrivals(null);
    oneClock.roundTrip(commandSeq('beside', 1), 8_000_001);
    expect(commandTimingFailure(oneClock.result(transmitter, DEFAULT_COMMAND_LANE))).toBeNull();
    oneClock.destroy();
    const twoClocks = arrivals(5_000_000);
    twoClocks.roundTrip(commandSeq('beside', 1), 1);
    const result = twoClocks.result(transmitter, DEFAULT_COMMAND_LANE);
    expect([result.beside.paired, result.beside.arrivalsAfterAck, commandTimingFailure(result)]).toEqual([
      1,
      null,
      null,
    ]);
    twoClocks.destroy();
  });

  it('records nothing for an image seq', () => {
    const record = new CommandArrivals({ clock: null });
    expect(record.record({ sectionId: 1, seq: 5, sizeBytes: 64, checksum: 0n, sentAtNs: 0n }, 10n)).toBeUndefined();
    const result = record.result(transmitter, DEFAULT_COMMAND_LANE);
    expect([result.alone.received, result.alone.oneWay, result.delayFactorP50]).toEqual([0, null, null]);
    record.destroy();
  });
});

describe('the command lane in output.log and the summary', () => {
  const lane = () => {
    const record = arrivals(null);
    const result = record.result(transmitter, DEFAULT_COMMAND_LANE);
    record.destroy();
    return result;
  };
  const notRun = {
    ...lane(),
    how: null,
    interleaves: null,
    notRun: 'a key holds one value',
    alone: { ...lane().alone, ...emptyTransmitterPhase() },
  };

  it("prints a section's lane: how it travelled, then each phase's counts and times", () => {
    const section = { ...fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP' }), [1, 2]), commands: lane() };
    const footer = renderSectionFooter(section);
    expect(footer).toContain(`Commands (64 B at 100/s, not in MB/s or images/s): ${DEFAULT_COMMAND_LANE.how}\n`);
    expect(footer).toContain('Commands alone (no image in flight): 3 sent, 3 acknowledged, 0 not, 0 corrupt;');
    expect(footer).toContain('Commands beside the images: 3 sent, 2 acknowledged, 1 not, 1 corrupt;');
    expect(footer).toMatch(/^Commands beside the images, one-way: p50 3\.000, .* max 8\.000,/m);
    expect(footer).toContain('Commands beside the images took 12.0 × their one-way p50 alone');
    const skipped = renderSectionFooter({ ...section, commands: notRun });
    expect(skipped).toContain('Commands (64 B at 100/s, not in MB/s or images/s): not run: a key holds one value');
    expect(skipped).not.toContain('Commands alone');
    // Without the lane, not a word of it.
    expect(renderSectionFooter({ ...section, commands: undefined })).not.toContain('Commands');
  });

  it("names the lane in output.log's header when COMMAND_RATE is set, and not otherwise", () => {
    const run = fixtureReport([fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP' }), [1])]).run;
    const withLane = { ...run, config: { ...run.config, commandRatePerSecond: 250, commandSizeBytes: 128 } };
    expect(renderOutputLogHeader(withLane)).toContain(
      "Command lane: 128 B commands at 250/s on each section's link, alone after its warm-up, then beside its images",
    );
    expect(renderOutputLogHeader(run)).not.toContain('Command lane');
  });

  it('adds a table of the lane, a row per transport, and says which did not run it', () => {
    const tcp = { ...fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP' }), [1, 2]), commands: lane() };
    const kv = {
      ...fixtureSection(fixturePlan({ transport: 'redis-kv', label: 'Redis latest-frame key' }), [1, 2]),
      commands: notRun,
    };
    const text = renderSummary(fixtureReport([tcp, kv]));
    expect(text).toContain('Command lane (64 B commands at 100/s');
    expect(text).toMatch(/^TCP\s+behind\s+0\.250\s+-\s+3\.000\s+-\s+-\s+8\.000\s+4\.000\s+-\s+12\.0\s+1\/1\s+0 of 0$/m);
    expect(text).toMatch(/^Redis latest-frame key\s+not run(\s+-)+$/m);
    expect(text).toContain('Not run: redis-kv: a key holds one value.');
    expect(renderSummary(fixtureReport([{ ...tcp, commands: undefined }]))).not.toContain('Command lane');
  });
});
