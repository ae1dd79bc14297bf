import type { Transport } from '../../services/transports/contract.js';
import type { CeilingShape } from './ceiling-model.js';

// The plan every part of the bench reads, apart from the command line that makes it (options.ts): the parts import
// this and options.ts imports their defaults, so neither imports the other.

/** What the parts read of the command line, worked out once from its options: see planFrom. */
export interface BenchPlan {
  /** The ceiling runs every transport unless --transports= names others. */
  ceilingTransports: readonly Transport[];
  /**
   * The transports of the matrix, steady, clients and rate parts (every suite run that names none): the default ones
   * unless --transports= names others.
   */
  transportNames: readonly string[];
  /** The shapes this run measures (--shapes=), in their order. */
  ceilingShapes: readonly CeilingShape[];
  /**
   * Rounds of the ceiling, the transports' order rotated each round: at least MIN_CLAIM_ROUNDS unless --rounds= lowers
   * it.
   */
  ceilingRounds: number;
  /**
   * The ceiling part's time budget (ms): no round starts that the longest round so far says would end past it (the
   * first always runs); null: every one of ceilingRounds.
   */
  ceilingBudgetMs: number | null;
  /** Whether the large shape's suite runs again with VERIFY=false (the harness apart from the integrity check). */
  ceilingUnverified: boolean;
  /** Said beside the ceiling's medians when they rest on fewer rounds than a claim needs. */
  indicativeNote: string;
  /** The delay part's transports: DELAY_TRANSPORTS unless --transports= names others. */
  delayTransports: readonly string[];
  /** The delay part's delay each way (ms), rounds and recorded images per section. */
  delayMs: number;
  delayRounds: number;
  delayImages: number;
  /** The capacity part's image sizes (bytes), rounds, deadline (undefined: one frame interval) and allowed miss %. */
  capacitySizes: readonly number[];
  capacityRounds: number;
  capacityDeadlineMs: number | undefined;
  capacityMissPercent: number;
}
