import { describe, expect, it } from 'vitest';
import {
  estimateClockOffset,
  oneWayClockErrorNs,
  type ClockOffset,
  type ClockSample,
} from '../../services/core/model/clock.js';

// Synthetic exchanges: the receiver's clock runs `trueOffset` ahead; each exchange has its own
// outbound and return delays, so only a symmetric, short one recovers the offset closely.
function exchange(sentNs: bigint, outboundNs: bigint, returnNs: bigint, trueOffsetNs: bigint): ClockSample {
  return {
    transmitterSentNs: sentNs,
    receiverNs: sentNs + outboundNs + trueOffsetNs,
    transmitterReceivedNs: sentNs + outboundNs + returnNs,
  };
}

describe('estimateClockOffset', () => {
  it('recovers the offset exactly from a symmetric exchange', () => {
    expect(estimateClockOffset([exchange(1_000n, 50_000n, 50_000n, 7_000_000n)])).toEqual({
      offsetNs: 7_000_000,
      uncertaintyNs: 50_000,
      roundTripNs: 100_000,
      samples: 1,
    });
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
    expect(
      estimateClockOffset([{ transmitterSentNs: 10n, receiverNs: 5n, transmitterReceivedNs: 9n }]),
    ).toBeUndefined();
    expect(estimateClockOffset([])).toBeUndefined();
  });
});

describe('oneWayClockErrorNs', () => {
  const before: ClockOffset = { offsetNs: 5_000_000, uncertaintyNs: 150_000, roundTripNs: 300_000, samples: 8 };
  const afterwards = (offsetNs: number, uncertaintyNs: number): ClockOffset => ({
    offsetNs,
    uncertaintyNs,
    roundTripNs: 2 * uncertaintyNs,
    samples: 8,
  });

  it("is the estimate's own bound when the offset was not estimated again", () => {
    expect(oneWayClockErrorNs(before, null)).toBe(150_000);
  });

  it("keeps the larger bound of the section's start when the offset did not move", () => {
    expect(oneWayClockErrorNs(before, afterwards(5_000_000, 100_000))).toBe(150_000);
    expect(oneWayClockErrorNs(before, afterwards(5_000_000, 200_000))).toBe(200_000);
  });

  it("widens by the drift seen at the end, either way: |after − before| + the end's bound", () => {
    expect(oneWayClockErrorNs(before, afterwards(5_040_000, 120_000))).toBe(160_000);
    expect(oneWayClockErrorNs(before, afterwards(4_700_000, 50_000))).toBe(350_000);
  });

  it(
    'bounds the true error at every moment of a linear ' + "drift, for offsets anywhere within both estimates' bounds",
    () => {
      // True offset θ(t) linear from θ0 (within before ± its bound) to θ1 (within after ± its bound).
      const end = afterwards(5_300_000, 80_000);
      const bound = oneWayClockErrorNs(before, end);
      for (const theta0 of [
        before.offsetNs - before.uncertaintyNs,
        before.offsetNs,
        before.offsetNs + before.uncertaintyNs,
      ]) {
        for (const theta1 of [end.offsetNs - end.uncertaintyNs, end.offsetNs, end.offsetNs + end.uncertaintyNs]) {
          for (let k = 0; k <= 10; k++) {
            const theta = theta0 + ((theta1 - theta0) * k) / 10;
            expect(Math.abs(theta - before.offsetNs)).toBeLessThanOrEqual(bound);
          }
        }
      }
      expect(bound).toBe(380_000);
    },
  );
});
