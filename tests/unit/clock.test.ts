import { describe, expect, it } from 'vitest';
import { estimateClockOffset, type ClockSample } from '../../services/core/clock.js';

// Synthetic exchanges: the receiver's clock runs `trueOffset` ahead; each exchange has its own
// outbound and return delays, so only a symmetric, short one recovers the offset closely.
function exchange(sentNs: bigint, outboundNs: bigint, returnNs: bigint, trueOffsetNs: bigint): ClockSample {
  return { transmitterSentNs: sentNs, receiverNs: sentNs + outboundNs + trueOffsetNs, transmitterReceivedNs: sentNs + outboundNs + returnNs };
}

describe('estimateClockOffset', () => {
  it('recovers the offset exactly from a symmetric exchange', () => {
    expect(estimateClockOffset([exchange(1_000n, 50_000n, 50_000n, 7_000_000n)])).toEqual({ offsetNs: 7_000_000, uncertaintyNs: 50_000, roundTripNs: 100_000, samples: 1 });
  });

  it('keeps the exchange with the lowest round trip', () => {
    const samples = [
      exchange(0n, 900_000n, 100_000n, -3_000_000n), // slow and lopsided: off by 400 µs
      exchange(2_000_000n, 40_000n, 60_000n, -3_000_000n), // fastest: off by 10 µs
      exchange(4_000_000n, 300_000n, 300_000n, -3_000_000n),
    ];
    const estimate = estimateClockOffset(samples)!;
    expect(estimate.roundTripNs).toBe(100_000);
    expect(estimate.offsetNs).toBe(-3_010_000);
    expect(estimate.uncertaintyNs).toBe(50_000);
    expect(estimate.samples).toBe(3);
    // The true offset is always within the reported uncertainty.
    expect(Math.abs(estimate.offsetNs - -3_000_000)).toBeLessThanOrEqual(estimate.uncertaintyNs);
  });

  it('ignores a sample whose clock went backwards, and gives nothing without samples', () => {
    expect(estimateClockOffset([{ transmitterSentNs: 10n, receiverNs: 5n, transmitterReceivedNs: 9n }])).toBeUndefined();
    expect(estimateClockOffset([])).toBeUndefined();
  });
});
