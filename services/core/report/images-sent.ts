import { MAX_IMAGE_COUNT } from '../config/config.js';
import { formatDurationMs } from '../config/duration.js';
import type { SectionResult } from '../model/section.js';

// How many images a run sent, as every output states it. With IMAGE_COUNT each section sends that many; under
// DURATION a section sends what fits in the time, so the count exists only once it has ended (its imageCount is what
// it sent) and the run's own imageCount is null. Files written before that hold IMAGE_COUNT's unused default there:
// DURATION in the config is read first, so they read right too.

/** What one transport's ended sections sent: the fewest and the most of them. */
export interface SentByTransport {
  transport: string;
  label: string;
  fewest: number;
  most: number;
}

/** A run's images per transport: IMAGE_COUNT, or DURATION with what each transport's ended sections sent. */
export type RunImages =
  | { kind: 'count'; imagesPerSection: number }
  | { kind: 'duration'; durationMs: number; sent: SentByTransport[] };

/** The section fields {@link runImages} reads. */
export type SentFields = Pick<SectionResult, 'transport' | 'label' | 'imageCount'>;

/** run.imageCount as a report holds it: IMAGE_COUNT, or null under DURATION, where there is no count to plan. */
export function plannedImageCount(imageCount: number | null, durationMs: number | null | undefined): number | null {
  return durationMs == null ? imageCount : null;
}

/**
 * What an ended section sent under DURATION. A section refused before it sent has none; files written before that held
 * the plan's cap (MAX_IMAGE_COUNT) there instead.
 */
const sentBy = (section: SentFields): number => (section.imageCount >= MAX_IMAGE_COUNT ? 0 : section.imageCount);

/** The run's images per transport from its facts and the sections ended so far (none: "for 20s" alone). */
export function runImages(
  run: { imageCount: number | null; transports: readonly string[]; config?: { durationMs?: number | null } },
  sections: readonly SentFields[],
): RunImages {
  const durationMs = run.config?.durationMs;
  if (durationMs == null) return { kind: 'count', imagesPerSection: run.imageCount ?? 0 };
  const order = [...run.transports, ...sections.map((s) => s.transport)];
  const sent = [...new Set(order)].flatMap((transport): SentByTransport[] => {
    const own = sections.filter((s) => s.transport === transport);
    if (own.length === 0) return [];
    const counts = own.map(sentBy);
    return [{ transport, label: own[0]!.label, fewest: Math.min(...counts), most: Math.max(...counts) }];
  });
  return { kind: 'duration', durationMs, sent };
}

const count = (n: number): string => n.toLocaleString('en-US');

/**
 * Under DURATION: "for 20s", then what was sent once sections ended: "for 20s (600 sent per transport)" when every
 * section sent as many, else "for 20s (sent: TCP 5,000, gRPC 1,198–1,200)".
 */
export function durationImagesText(images: Extract<RunImages, { kind: 'duration' }>): string {
  const time = `for ${formatDurationMs(images.durationMs)}`;
  const { sent } = images;
  const first = sent[0];
  if (first === undefined) return time;
  if (sent.every((s) => s.fewest === first.fewest && s.most === first.fewest))
    return `${time} (${count(first.fewest)} sent per transport)`;
  const each = sent.map(
    (s) => `${s.label} ${s.fewest === s.most ? count(s.most) : `${count(s.fewest)}–${count(s.most)}`}`,
  );
  return `${time} (sent: ${each.join(', ')})`;
}

/** The run's images in a phrase with their size: "10 images of 533.0 KiB", "533.0 KiB images for 20s (…)". */
export function runImagesPhrase(images: RunImages, sizeText: string): string {
  return images.kind === 'count'
    ? `${count(images.imagesPerSection)} images of ${sizeText}`
    : `${sizeText} images ${durationImagesText(images)}`;
}

/**
 * Recorded images a whole run plans (every transport and repeat), as GET /progress counts them: IMAGE_COUNT × REPEAT
 * × transports; under DURATION, with no count to plan, what the ended `sections` sent plus `openRecorded`, the open
 * section's recorded so far.
 */
export function runImagesSoFar(
  run: {
    imageCount: number | null;
    transports: readonly string[];
    repeat: number;
    config?: { durationMs?: number | null };
  },
  sections: readonly SentFields[],
  openRecorded: number,
): number {
  const images = runImages(run, sections);
  return images.kind === 'count'
    ? images.imagesPerSection * run.repeat * run.transports.length
    : sections.reduce((sum, s) => sum + sentBy(s), 0) + openRecorded;
}
