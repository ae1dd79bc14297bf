import { percentile } from './stats.js';

// How a section warms up before its recorded images. By default (`WARMUP=auto`) it sends images
// until their round trips are steady: at least a minimum time and a minimum number of images,
// then until the median round trip of the last block of images is within a tolerance of the
// block before, capped by a maximum time (or image count) after which the section is marked not
// steady. `WARMUP=<n>` sends exactly n images instead, and `WARMUP=0` none: a cold run on purpose.
// Pure: times and round trips are given to it.

/** Relative difference allowed between the medians of the last two blocks of warm-up round trips. */
export const STEADY_TOLERANCE = 0.05;
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
      /** Largest relative difference of the two medians that counts as steady. */
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
  /** Median round trips (ms) of the block before the last and of the last block, when steadiness was judged. */
  mediansMs: [previous: number, last: number] | null;
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
 * (a window's images share their queueing), and the minimum is two blocks: nothing can be compared
 * before.
 */
export function warmupPlan(settings: WarmupSettings): WarmupPlan {
  if (settings.warmup !== 'auto') return { mode: 'images', images: settings.warmup };
  const blockImages = Math.max(MIN_BLOCK_IMAGES, 2 * settings.window);
  return {
    mode: 'steady',
    minMs: settings.warmupMinMs,
    minImages: 2 * blockImages,
    maxMs: settings.warmupMaxMs,
    maxImages: MAX_WARMUP_IMAGES,
    blockImages,
    tolerance: STEADY_TOLERANCE,
  };
}

/** Most warm-up images a plan can lead to: both sides size their records by it. */
export function warmupImageLimit(plan: WarmupPlan): number {
  return plan.mode === 'images' ? plan.images : plan.maxImages;
}

/** The two medians compared, and whether they are within the tolerance. */
export interface SteadinessReading {
  previousMedianNs: number;
  lastMedianNs: number;
  steady: boolean;
}

/** The round trips of the last two blocks of warm-up images, and whether they have settled. */
export class SteadinessCheck {
  private readonly ring: Float64Array;
  private count = 0;

  constructor(
    readonly blockImages: number,
    readonly tolerance: number,
  ) {
    this.ring = new Float64Array(2 * blockImages);
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

  /** The medians of the block before the last and of the last block; undefined before two blocks. */
  reading(): SteadinessReading | undefined {
    const k = this.blockImages;
    if (this.count < 2 * k) return undefined;
    const oldest = this.count - 2 * k;
    const block = (from: number): number[] => {
      const values: number[] = [];
      for (let i = from; i < from + k; i++) values.push(this.ring[i % this.ring.length]!);
      return values.sort((a, b) => a - b);
    };
    const previousMedianNs = percentile(block(oldest), 50);
    const lastMedianNs = percentile(block(oldest + k), 50);
    return { previousMedianNs, lastMedianNs, steady: Math.abs(lastMedianNs - previousMedianNs) <= this.tolerance * previousMedianNs };
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
  return `until steady: at least ${plan.minMs.toLocaleString('en-US')} ms and ${plan.minImages} images, then until the median round trip of the last ${plan.blockImages} images is within ${percent} of the ${plan.blockImages} before; at most ${plan.maxMs.toLocaleString('en-US')} ms (WARMUP=auto)`;
}

/** How one section's warm-up went, in words: "steady after 1,234 ms, 2,000 images (medians 0.301 → 0.299 ms)". */
export function describeWarmupOutcome(outcome: WarmupOutcome | null): string {
  if (outcome === null) return 'did not finish';
  if (outcome.images === 0) return 'none: cold';
  const span = `${Math.round(outcome.ms).toLocaleString('en-US')} ms, ${imagesText(outcome.images)}`;
  const medians = outcome.mediansMs === null ? '' : ` (median round trips ${outcome.mediansMs[0].toFixed(3)} → ${outcome.mediansMs[1].toFixed(3)} ms)`;
  if (outcome.steady === null) return `${span}`;
  return outcome.steady ? `steady after ${span}${medians}` : `NOT STEADY after ${span}, its cap${medians}`;
}
