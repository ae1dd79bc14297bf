import { describe, expect, it } from 'vitest';
import type { CeilingFigures } from '../../scripts/ceiling/drive.js';
import { GRPC_VARIANT_ENV, parseGrpcVariant } from '../../services/transports/kit/ceiling-grpc.js';
import {
  changeIntervalText,
  changeText,
  GRPC_VARIANTS,
  grpcOptionsLines,
  REFERENCE,
  summarizeGrpcOptions,
  type GrpcOptionsCell,
} from '../../scripts/bench/grpc-options.js';
import { ALL_CEILING_SHAPES } from '../../scripts/bench/ceiling-model.js';

// The grpc-options part's arithmetic (each variant against the reference of its own round) and the variant's hand-over
// to the ceiling pair, with exact values.

function figures(MBps: number, imagesPerSecond: number, senderCpuMs = 100, receiverCpuMs: number | null = 50) {
  return {
    MBps,
    imagesPerSecond,
    spanMs: 1000,
    rttP50Ms: 1,
    rttP99Ms: 2,
    senderCpuMs,
    receiverCpuMs,
    count: 100,
    imageBytes: 545_792,
    window: 16,
  } satisfies CeilingFigures;
}

/** Six rounds: the reference at 100..600 MB/s, the variant at 110 %, 120 %, 90 %, 130 %, 110 % and 120 % of it. */
function sixRounds(): GrpcOptionsCell[] {
  const shares = [1.1, 1.2, 0.9, 1.3, 1.1, 1.2];
  return shares.flatMap((share, i): GrpcOptionsCell[] => [
    { variant: REFERENCE, shape: 'large', round: i + 1, figures: figures(100 * (i + 1), 1000) },
    { variant: 'faster', shape: 'large', round: i + 1, figures: figures(100 * (i + 1) * share, 1000, 80) },
  ]);
}

describe('summarizeGrpcOptions', () => {
  it(
    "holds each variant against the reference of its own round: the medians' change and the interval of the " +
      "rounds'",
    () => {
      const [reference, faster] = summarizeGrpcOptions([REFERENCE, 'faster'], ['large'], sixRounds());
      expect(reference).toMatchObject({ variant: REFERENCE, change: null, changeCI: null, pairedRounds: 6 });
      expect(reference?.distribution?.median).toBeCloseTo(350, 9);
      // Variant median: of 110, 240, 270, 520, 550, 720 → (270 + 520) / 2 = 395; 395 / 350 − 1.
      expect(faster?.distribution?.median).toBeCloseTo(395, 9);
      expect(faster?.change).toBeCloseTo(395 / 350 - 1, 9);
      // Six rounds: the interval is the least and most of the rounds' own changes (−10 % and +30 %).
      expect(faster?.changeCI?.low).toBeCloseTo(-0.1, 9);
      expect(faster?.changeCI?.high).toBeCloseTo(0.3, 9);
      expect(faster?.txCpuMsPerImage).toBeCloseTo(0.8, 9);
      expect(faster?.rxCpuMsPerImage).toBeCloseTo(0.5, 9);
      expect(faster?.failedRuns).toBe(0);
    },
  );

  it('reads images/s at the small shape, leaves a failed run out of the pairs and counts it', () => {
    const cells: GrpcOptionsCell[] = [
      { variant: REFERENCE, shape: 'small', round: 1, figures: figures(1, 1000) },
      { variant: 'slower', shape: 'small', round: 1, figures: figures(1, 800) },
      { variant: REFERENCE, shape: 'small', round: 2, figures: figures(1, 1000) },
      { variant: 'slower', shape: 'small', round: 2, figures: { failed: 'the receiver process exited (1)' } },
    ];
    const [, slower] = summarizeGrpcOptions([REFERENCE, 'slower'], ['small'], cells);
    expect(slower).toMatchObject({ figure: 'images/s', pairedRounds: 1, failedRuns: 1, changeCI: null });
    expect(slower?.change).toBeCloseTo(-0.2, 9);
  });
});

describe('the change as the tables write it', () => {
  it('signs a change and its interval, whole percent', () => {
    expect(changeText(0.123)).toBe('+12 %');
    expect(changeText(-0.034)).toBe('−3 %');
    expect(changeText(0.001)).toBe('0 %');
    expect(changeText(null)).toBe('-');
    expect(changeIntervalText({ low: -0.1, high: 0.3, coverage: 0.97 })).toBe('−10 % – +30 %');
    expect(changeIntervalText(null)).toBe('-');
  });

  it('prints every variant with what it changes, and a row per variant with its median, change and interval', () => {
    const large = ALL_CEILING_SHAPES.find((s) => s.name === 'large')!;
    const variants = [GRPC_VARIANTS[0]!, { name: 'faster', change: 'something faster', variant: {} }];
    const cells = sixRounds();
    const lines = grpcOptionsLines(
      { ceilingRounds: 6, indicativeNote: '' },
      variants,
      [large],
      summarizeGrpcOptions([REFERENCE, 'faster'], ['large'], cells),
      cells,
    ).join('\n');
    expect(lines).toContain('  faster: something faster.');
    expect(lines).toMatch(/reference +350\.0 +\(reference\) +- +- /);
    expect(lines).toMatch(/faster +395\.0 +\+13 % +−10 % – \+30 % +±20 wide, ~96 rounds +0\.800 +0\.500 +ok/);
  });
});

describe('the variant handed to the grpc ceiling pair', () => {
  it('is none when unset, the object given otherwise', () => {
    expect(parseGrpcVariant(undefined)).toEqual({});
    expect(parseGrpcVariant(' ')).toEqual({});
    expect(parseGrpcVariant('{"client":{"grpc-node.flow_control_window":65535},"waitForDrain":true}')).toEqual({
      client: { 'grpc-node.flow_control_window': 65_535 },
      waitForDrain: true,
    });
  });

  it('refuses what is not one, naming the variable', () => {
    expect(() => parseGrpcVariant('{client')).toThrow(`${GRPC_VARIANT_ENV}: not JSON`);
    expect(() => parseGrpcVariant('[1]')).toThrow('expected a JSON object');
    expect(() => parseGrpcVariant('{"clinet":{}}')).toThrow('unknown clinet; known: client, server');
    expect(() => parseGrpcVariant('{"server":{"a":[1]}}')).toThrow('"server" must map names to numbers');
    expect(() => parseGrpcVariant('{"serverWindowBytes":1.5}')).toThrow('whole number of bytes');
    expect(() => parseGrpcVariant('{"serverWindowBytes":1000}')).toThrow('from 65535 to 2147483647');
    expect(() => parseGrpcVariant('{"waitForDrain":"yes"}')).toThrow('"waitForDrain" must be true or false');
  });

  it('names every variant once, the reference first and with no change', () => {
    expect(GRPC_VARIANTS[0]).toMatchObject({ name: REFERENCE, variant: {} });
    expect(new Set(GRPC_VARIANTS.map((v) => v.name)).size).toBe(GRPC_VARIANTS.length);
    for (const v of GRPC_VARIANTS.slice(1)) expect(Object.keys(v.variant).length, v.name).toBeGreaterThan(0);
    // Each goes through the environment as JSON and comes back the same.
    for (const v of GRPC_VARIANTS) expect(parseGrpcVariant(JSON.stringify(v.variant))).toEqual(v.variant);
  });
});
