import { percentile } from './stats.js';

// How a section warms up before its recorded images. By default (`WARMUP=auto`) it sends images until their round trips
// stop falling: at least a minimum time and a minimum number of images, then until neither of the last two blocks of
// images has a median round trip more than a tolerance below the lower of the two blocks before, capped by a maximum
// time (or image count) after which the section is marked not steady. What a warm-up waits out is a fall (JIT, caches,
// buffers growing); noise goes both ways and never ends, so a rise does not hold it back. Comparing two blocks alone
// let a slow fall pass (3 % a block is within 5 % of the block before at every step), and noise that agreed once; two
// blocks against the two before catch a fall over four. A band over four blocks (all within 5 % of the lowest) was
// tried and dropped: on a loaded 2-core machine it often did not close within the 10 s cap. `WARMUP=<n>` sends exactly
// n images instead, and `WARMUP=0` none: a cold run on purpose. Pure: times and round trips are given to it.

/** How far below the earlier blocks' lowest median a later block may fall and still count as steady, relative to it. */
export const STEADY_TOLERANCE = 0.05;
/** Blocks compared: the later half against the earlier half. */
export const STEADY_BLOCKS = 4;
/** Fewest images in a block: medians of fewer move by more than the tolerance on a quiet host. */
export const MIN_BLOCK_IMAGES = 32;
/** Most warm-up images a section sends, whatever the time allows; it bounds both sides' bookkeeping. */
export const MAX_WARMUP_IMAGES = 100_000;
/** Most images WARMUP may name. */
export const MAX_FIXED_WARMUP_IMAGES = 100_000;

/** How a section warms up: a fixed number of images, or until its round trips are steady. */
export type WarmupPlan =
  | { mode: 'images'; images: number }
  | {
      mode: 'steady';
      /** At least this long, and at least minImages, before steadiness is judged. */
      minMs: number;
      minImages: number;
      /** At most this long, or maxImages: then the section goes on, marked not steady. */
      maxMs: number;
      maxImages: number;
      /** Images per block whose medians are compared. */
      blockImages: number;
      /** Blocks compared (absent in files written when it was always 2). */
      blocks?: number;
      /**
       * Largest fall, relative to the earlier half's lowest median, of the later half's lowest that counts as steady.
       */
      tolerance: number;
    };

/** How a section's warm-up went; recorded images follow on the same connection. */
export interface WarmupOutcome {
  /** Warm-up images sent (and acknowledged) before the first recorded one. */
  images: number;
  /** From the first warm-up stamp to the last warm-up ack; 0 without warm-up. */
  ms: number;
  /**
   * True when the round trips were steady, false when a cap ended the warm-up first; null when not judged (a fixed
   * WARMUP).
   */
  steady: boolean | null;
  /** Median round trips (ms) of the blocks compared last, oldest first, when steadiness was judged. */
  mediansMs: number[] | null;
}

/** The settings that shape a warm-up, as the config holds them. */
export interface WarmupSettings {
  /** 'auto' to warm up until steady, or a fixed number of images. */
  warmup: number | 'auto';
  warmupMinMs: number;
  warmupMaxMs: number;
  window: number;
}

/**
 * The plan for a section with these settings. A block holds at least two windows' worth of images
 * (a window's images share their queueing), and the minimum is the blocks compared: nothing can be
 * judged before.
 */
export function warmupPlan(settings: WarmupSettings): WarmupPlan {
  if (settings.warmup !== 'auto') return { mode: 'images', images: settings.warmup };
  const blockImages = Math.max(MIN_BLOCK_IMAGES, 2 * settings.window);
  return {
    mode: 'steady',
    minMs: settings.warmupMinMs,
    minImages: STEADY_BLOCKS * blockImages,
    maxMs: settings.warmupMaxMs,
    maxImages: MAX_WARMUP_IMAGES,
    blockImages,
    blocks: STEADY_BLOCKS,
    tolerance: STEADY_TOLERANCE,
  };
}

/** Most warm-up images a plan can lead to: both sides size their records by it. */
export function warmupImageLimit(plan: WarmupPlan): number {
  return plan.mode === 'images' ? plan.images : plan.maxImages;
}

/**
 * The medians compared, oldest first, and whether the later half's lowest is within the tolerance of the earlier half's
 * lowest, or above it.
 */
export interface SteadinessReading {
  mediansNs: number[];
  steady: boolean;
}

/** The round trips of the last few blocks of warm-up images, and whether they have settled. */
export class SteadinessCheck {
  private readonly ring: Float64Array;
  private count = 0;

  constructor(
    readonly blockImages: number,
    readonly tolerance: number,
    readonly blocks = STEADY_BLOCKS,
  ) {
    this.ring = new Float64Array(blocks * blockImages);
  }

  /** Takes one warm-up image's round trip, in the order the acks came. */
  add(rttNs: number): void {
    this.ring[this.count % this.ring.length] = rttNs;
    this.count++;
  }

  /** Round trips taken so far. */
  get taken(): number {
    return this.count;
  }

  /** The medians of the last `blocks` blocks, oldest first; undefined before that many blocks. */
  reading(): SteadinessReading | undefined {
    const k = this.blockImages;
    if (this.count < this.blocks * k) return undefined;
    const oldest = this.count - this.blocks * k;
    const block = (from: number): number[] => {
      const values: number[] = [];
      for (let i = from; i < from + k; i++) values.push(this.ring[i % this.ring.length]!);
      return values.sort((a, b) => a - b);
    };
    const mediansNs = Array.from({ length: this.blocks }, (_, b) => percentile(block(oldest + b * k), 50));
    const half = Math.floor(this.blocks / 2);
    const earlierLowestNs = Math.min(...mediansNs.slice(0, half));
    const laterLowestNs = Math.min(...mediansNs.slice(half));
    return { mediansNs, steady: laterLowestNs >= (1 - this.tolerance) * earlierLowestNs };
  }
}

/** Where a warm-up stands, as the transmitter sees it before stamping the next image. */
export interface WarmupProgress {
  elapsedMs: number;
  stampedImages: number;
  ackedImages: number;
}

/** Whether to send another warm-up image: 'more', or the reason to stop. */
export type WarmupDecision = 'more' | 'done' | 'steady' | 'not steady';

/**
 * Decides before each warm-up image whether to send it. A fixed plan stops at its count ('done');
 * a steady plan stops once the minimums are met and the check reads steady, or else at a cap.
 */
export function warmupDecision(
  plan: WarmupPlan,
  progress: WarmupProgress,
  check: SteadinessCheck | undefined,
): WarmupDecision {
  if (plan.mode === 'images') return progress.stampedImages < plan.images ? 'more' : 'done';
  const minimumsMet = progress.elapsedMs >= plan.minMs && progress.ackedImages >= plan.minImages;
  if (minimumsMet && check?.reading()?.steady === true) return 'steady';
  return progress.elapsedMs >= plan.maxMs || progress.stampedImages >= plan.maxImages ? 'not steady' : 'more';
}

/**
 * Whether the transmitter may say the warm-up took `images` images under this plan: a fixed plan
 * its exact count, a steady one at most its cap. The receiver sizes its record by it.
 */
export function warmupImagesAllowed(plan: WarmupPlan, images: number): boolean {
  return plan.mode === 'images' ? images === plan.images : images <= plan.maxImages;
}

const imagesText = (count: number): string => `${count.toLocaleString('en-US')} image${count === 1 ? '' : 's'}`;

/**
 * The plan in words, for output.log, the report and comparisons: "until steady (…)", "2 images", "none (a cold run)".
 */
export function describeWarmup(plan: WarmupPlan): string {
  if (plan.mode === 'images')
    return plan.images === 0
      ? 'none (WARMUP=0: a cold run)'
      : `${plan.images.toLocaleString('en-US')} unrecorded image${plan.images === 1 ? '' : 's'} ` +
          `(WARMUP=${plan.images})`;
  const percent = `${+(plan.tolerance * 100).toFixed(2)} %`;
  const blocks = plan.blocks ?? 2;
  const half = Math.floor(blocks / 2);
  const blocksText =
    half === 1 ? `block of ${plan.blockImages} images` : `${half} blocks of ${plan.blockImages} images`;
  return (
    `until steady: at least ${plan.minMs.toLocaleString('en-US')} ms and ${plan.minImages} images, then until no ` +
    `median round trip of the last ${blocksText} is more than ${percent} below the lowest of ` +
    `the ${half === 1 ? 'block' : `${half}`} before; at most ${plan.maxMs.toLocaleString('en-US')} ms ` +
    `(WARMUP=auto)`
  );
}

/** How one section's warm-up went, in words: "steady after 1,234 ms, 2,000 images (medians 0.301 → 0.299 ms)". */
export function describeWarmupOutcome(outcome: WarmupOutcome | null): string {
  if (outcome === null) return 'did not finish';
  if (outcome.images === 0) return 'none: cold';
  const span = `${Math.round(outcome.ms).toLocaleString('en-US')} ms, ${imagesText(outcome.images)}`;
  const medians =
    outcome.mediansMs === null
      ? ''
      : ` (median round trips ${outcome.mediansMs.map((m) => m.toFixed(3)).join(' → ')} ms)`;
  if (outcome.steady === null) return `${span}`;
  return outcome.steady ? `steady after ${span}${medians}` : `NOT STEADY after ${span}, its cap${medians}`;
}
