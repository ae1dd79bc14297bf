import { percentile } from './stats.js';

// How a section warms up before its recorded images. By default (`WARMUP=auto`) it sends images
// until their round trips are steady: at least a minimum time and a minimum number of images,
// then until the median round trips of the last few blocks of images all lie within a tolerance
// of the lowest of them, capped by a maximum time (or image count) after which the section is
// marked not steady. Two blocks were not enough: two medians within 5 % pass on a plateau that
// later falls (a TCP warm-up was declared steady at 0.588 → 0.615 ms where the long run's p50 was
// 0.285) or on noise that happens to agree once; four blocks in one band must agree three times
// over, and a falling trend spreads them out of the band. `WARMUP=<n>` sends exactly n images instead, and `WARMUP=0` none: a cold run on purpose.
// Pure: times and round trips are given to it.

/** Relative spread allowed among the medians of the last blocks of warm-up round trips: (highest − lowest) ÷ lowest. */
export const STEADY_TOLERANCE = 0.05;
/** Blocks whose medians must agree: three comparisons, so a trend or a lucky pair does not pass. */
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
      /** Largest relative spread of the blocks' medians ((highest − lowest) ÷ lowest) that counts as steady. */
      tolerance: number;
    };

/** How a section's warm-up went; recorded images follow on the same connection. */
export interface WarmupOutcome {
  /** Warm-up images sent (and acknowledged) before the first recorded one. */
  images: number;
  /** From the first warm-up stamp to the last warm-up ack; 0 without warm-up. */
  ms: number;
  /** True when the round trips were steady, false when a cap ended the warm-up first; null when not judged (a fixed WARMUP). */
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

/** The medians compared, oldest first, and whether they all lie within the tolerance of the lowest. */
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
    const lowestNs = Math.min(...mediansNs);
    return { mediansNs, steady: Math.max(...mediansNs) - lowestNs <= this.tolerance * lowestNs };
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
export function warmupDecision(plan: WarmupPlan, progress: WarmupProgress, check: SteadinessCheck | undefined): WarmupDecision {
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

/** The plan in words, for output.log, the report and comparisons: "until steady (…)", "2 images", "none (a cold run)". */
export function describeWarmup(plan: WarmupPlan): string {
  if (plan.mode === 'images') return plan.images === 0 ? 'none (WARMUP=0: a cold run)' : `${plan.images.toLocaleString('en-US')} unrecorded image${plan.images === 1 ? '' : 's'} (WARMUP=${plan.images})`;
  const percent = `${+(plan.tolerance * 100).toFixed(2)} %`;
  const blocks = plan.blocks ?? 2;
  return `until steady: at least ${plan.minMs.toLocaleString('en-US')} ms and ${plan.minImages} images, then until the median round trips of the last ${blocks} blocks of ${plan.blockImages} images are within ${percent} of the lowest of them; at most ${plan.maxMs.toLocaleString('en-US')} ms (WARMUP=auto)`;
}

/** How one section's warm-up went, in words: "steady after 1,234 ms, 2,000 images (medians 0.301 → 0.299 ms)". */
export function describeWarmupOutcome(outcome: WarmupOutcome | null): string {
  if (outcome === null) return 'did not finish';
  if (outcome.images === 0) return 'none: cold';
  const span = `${Math.round(outcome.ms).toLocaleString('en-US')} ms, ${imagesText(outcome.images)}`;
  const medians = outcome.mediansMs === null ? '' : ` (median round trips ${outcome.mediansMs.map((m) => m.toFixed(3)).join(' → ')} ms)`;
  if (outcome.steady === null) return `${span}`;
  return outcome.steady ? `steady after ${span}${medians}` : `NOT STEADY after ${span}, its cap${medians}`;
}
