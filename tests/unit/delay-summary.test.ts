import { describe, expect, it } from 'vitest';
import type { RunReport } from '../../services/core/report/report.js';
import { type DelayCell, summarizeDelay } from '../../scripts/bench/delay.js';
import type { DelayRelayStats } from '../../scripts/lib/delay-relay.js';
import { ASSET_BYTES } from '../../scripts/bench/suite.js';

// The delay part's figures from its runs: medians over the rounds, the added time and what lies beyond the delay,
// the relay's worst lateness, and issue 34's target (grpc-connect at 533 KiB within the delay + 0.5 ms).

const SMALL_BYTES = 16 * 1024;

/** A run's report with one section per transport, its one-way p50 as given (undefined: the section failed). */
function report(p50ByTransport: Record<string, number | undefined>): RunReport {
  const names = Object.keys(p50ByTransport);
  return {
    transports: names.map((transport, index) => {
      const p50Ms = p50ByTransport[transport];
      return {
        transport,
        ok: p50Ms !== undefined,
        failure: p50Ms === undefined ? 'images lost' : null,
        medianSection: index,
      };
    }),
    sections: names.map((transport) => ({ transport, latency: { p50Ms: p50ByTransport[transport] ?? 0 } })),
  } as unknown as RunReport;
}

function relay(toTargetLateMs: number, toClientLateMs: number): DelayRelayStats {
  const stats = (maxLatenessMs: number) => ({ maxLatenessMs }) as DelayRelayStats['toTarget'];
  return { connections: 1, toTarget: stats(toTargetLateMs), toClient: stats(toClientLateMs) } as DelayRelayStats;
}

function cell(
  round: number,
  sizeBytes: number,
  delayMs: number,
  p50ByTransport: Record<string, number | undefined>,
): DelayCell {
  return {
    round,
    sizeBytes,
    delayMs,
    cell: { name: 'delay', env: {}, report: report(p50ByTransport), seconds: 1 },
    relays: Object.fromEntries(
      Object.keys(p50ByTransport).map((t) => [t, relay(0.1 * round + delayMs / 10, 0.05 * round)]),
    ),
  };
}

describe('summarizeDelay', () => {
  const cells = [
    cell(1, ASSET_BYTES, 0, { 'grpc-connect': 1.0, grpc: 1.5 }),
    cell(1, ASSET_BYTES, 2, { 'grpc-connect': 3.3, grpc: 30.0 }),
    cell(2, ASSET_BYTES, 0, { 'grpc-connect': 1.2, grpc: 1.4 }),
    cell(2, ASSET_BYTES, 2, { 'grpc-connect': 3.5, grpc: 31.0 }),
    cell(3, ASSET_BYTES, 0, { 'grpc-connect': 1.1, grpc: 1.6 }),
    cell(3, ASSET_BYTES, 2, { 'grpc-connect': 3.9, grpc: undefined }),
    cell(1, SMALL_BYTES, 0, { 'grpc-connect': 0.3, grpc: 0.4 }),
    cell(1, SMALL_BYTES, 2, { 'grpc-connect': 2.4, grpc: 2.5 }),
  ];
  const summaries = summarizeDelay(['grpc-connect', 'grpc'], 2, cells);
  const of = (transport: string, sizeBytes: number) =>
    summaries.find((s) => s.transport === transport && s.sizeBytes === sizeBytes)!;

  it('takes medians over the rounds, the added time, and what lies beyond the delay', () => {
    const connect = of('grpc-connect', ASSET_BYTES);
    expect(connect.p50AtZeroMs).toBeCloseTo(1.1, 9);
    expect(connect.p50AtDelayMs).toBeCloseTo(3.5, 9);
    expect(connect.addedMs).toBeCloseTo(2.4, 9);
    expect(connect.beyondDelayMs).toBeCloseTo(0.4, 9);
    // Each round's own difference, in round order.
    expect(connect.addedPerRoundMs.map((ms) => Number(ms.toFixed(6)))).toEqual([2.3, 2.3, 2.8]);
  });

  it("meets the target only for grpc-connect at 533 KiB, within the delay + 0.5 ms; says no where it isn't", () => {
    expect(of('grpc-connect', ASSET_BYTES).targetMet).toBe(true);
    expect(of('grpc-connect', SMALL_BYTES).targetMet).toBeNull();
    expect(of('grpc', ASSET_BYTES).targetMet).toBeNull();
    const slow = summarizeDelay(
      ['grpc-connect'],
      2,
      cells.map((c) =>
        c.delayMs === 2 && c.sizeBytes === ASSET_BYTES
          ? cell(c.round, c.sizeBytes, 2, { 'grpc-connect': 4.0 + c.round / 10 })
          : c,
      ),
    );
    expect(slow.find((s) => s.sizeBytes === ASSET_BYTES)?.targetMet).toBe(false);
  });

  it("names each failed section, leaves its p50 out, and gives the relay's worst lateness in either direction", () => {
    const grpc = of('grpc', ASSET_BYTES);
    expect(grpc.failures).toEqual(['round 3, 2 ms: images lost']);
    // The failed round's time is in no median and no round's difference.
    expect(grpc.p50AtDelayMs).toBeCloseTo(30.5, 9);
    expect(grpc.addedPerRoundMs.map((ms) => Number(ms.toFixed(6)))).toEqual([28.5, 29.6]);
    // Rounds 1..3 with the delay: toTarget 0.1·round + 0.2, toClient 0.05·round; the worst is round 3's toTarget.
    expect(grpc.relayMaxLatenessMs).toBeCloseTo(0.5, 9);
  });
});
