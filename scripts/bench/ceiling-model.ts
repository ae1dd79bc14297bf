import type { SectionResult } from '../../services/core/model/section.js';
import type { CeilingFigures } from '../ceiling/drive.js';
import type { OverheadSummary } from '../lib/overhead.js';
import { ASSET_BYTES } from './suite.js';

// The ceiling part's shapes, and what one round of it and a transport's summary over the rounds hold.

/** The ceiling part's shapes, by name (--shapes=). */
export const SHAPE_NAMES = ['large', 'small', 'latency'] as const;
/** A ceiling shape's name. */
export type ShapeName = (typeof SHAPE_NAMES)[number];

/**
 * The ceiling's three shapes: large images at a window of 16 (MB/s, the headline overhead), small images at a wide
 * window (per-message overhead: images/s) and large images one at a time (latency: the round trip's p50). Each round's
 * suite run over every transport is followed by each one's library ceiling client (its ceiling.ts) on the same shape,
 * in the same order; the large shape then runs the suite again with VERIFY=false (the ceiling verifies nothing).
 */
export interface CeilingShape {
  name: ShapeName;
  bytes: number;
  count: number;
  window: number;
  warmup: number;
  /** Also run the suite with VERIFY=false. */
  unverified: boolean;
}

// Warm and steady: JIT and socket buffers settle in the untimed images; the timed ones outlast timer noise.
// Large: 3,000 timed, as a 1,000-image run lasts about 0.3 s at 2 GB/s; measured here, the ceiling client's MB/s over
// 8 runs spread over 1782–2783 at 1,000 images and 1990–2580 at 4,000.
/** Every shape the ceiling part knows, in their order. */
export const ALL_CEILING_SHAPES: readonly CeilingShape[] = [
  { name: 'large', bytes: ASSET_BYTES, count: 3000, window: 16, warmup: 100, unverified: true },
  { name: 'small', bytes: 1024, count: 20_000, window: 256, warmup: 2000, unverified: false },
  { name: 'latency', bytes: ASSET_BYTES, count: 300, window: 1, warmup: 100, unverified: false },
];

/** One round of one transport and shape: its section of the round's suite run, and its ceiling client's run. */
export interface CeilingCell {
  transport: string;
  shape: CeilingShape['name'];
  round: number;
  /** Undefined under --ceiling-only. */
  ours: SectionResult | undefined;
  /** The suite again with VERIFY=false (large shape only): the harness apart from the integrity check. */
  oursUnverified: SectionResult | undefined;
  ceiling: CeilingFigures | { failed: string };
}

/** A transport's cells of one shape over the rounds: the figures compared, and the overhead. */
export interface CeilingSummary {
  transport: string;
  shape: CeilingShape['name'];
  /**
   * What the overhead is over: MB/s (large), images/s (small), the round trip's p50 (latency, where lower is better).
   */
  figure: 'MB/s' | 'images/s' | 'RTT p50 ms';
  overhead: OverheadSummary;
  /** Large shape: against the suite with VERIFY=false. */
  overheadUnverified: OverheadSummary | null;
}

/** The ceiling client's figures of a cell, undefined when its run failed. */
export const ceilingFigureOf = (cell: CeilingCell): CeilingFigures | undefined =>
  'failed' in cell.ceiling ? undefined : cell.ceiling;
