import { MAX_IMAGE_COUNT } from '../../services/core/config/config.js';
import { OUTPUT_FILES } from '../../services/core/report/run-files.js';
import { renderTable } from '../../services/core/report/text/format.js';
import { formatSize } from '../../services/core/config/size.js';
import type { SweepChart } from './sweep-page.js';

// `npm run bench -- soak`: does memory stay flat over a long run? Small images over TCP at a wide
// window, both processes' RSS sampled from /proc while the run goes, and a verdict: the growth
// from the --from-th image to the run's last image within SOAK_LIMIT_BYTES on each side, and
// every output file written. The pure half: options, the plan, parsing /proc, the verdict and its
// renderings; ./soak-run.ts drives the processes.

/** What `npm run bench -- soak` takes (either `--images N` or `--images=N`). */
export interface SoakOptions {
  /** Recorded images in the whole run (--images); warm-up images come on top. */
  images: number;
  /** The image whose sample the growth is measured from (--from): past start-up, JIT and buffers filling. */
  fromImage: number;
  /** Time between two samples (--sample-ms). */
  sampleMs: number;
}

/** 20 million images from the 1-millionth, a sample a second: issue 27's soak. */
export const SOAK_DEFAULTS: Readonly<SoakOptions> = { images: 20_000_000, fromImage: 1_000_000, sampleMs: 1000 };
/** Most RSS either side may gain from the --from-th image to the last. */
export const SOAK_LIMIT_BYTES = 32 * 1024 * 1024;
/** The run's shape: 1 KB images (many per MB, so per-image costs show), TCP, WINDOW=64; WARMUP stays the default. */
export const SOAK_SHAPE = { transport: 'tcp', imageSize: '1KB', imageSizeBytes: 1000, window: 64 } as const;
/** The soak's longest run: one section of IMAGE_COUNT's most. */
const MAX_SOAK_IMAGES = MAX_IMAGE_COUNT;
/** The run's fixed files (OUTPUT_FILES of services/core/report/run-files.ts). */
export const SOAK_REQUIRED_FILES = [OUTPUT_FILES.log, OUTPUT_FILES.results, OUTPUT_FILES.report] as const;
export const SOAK_USAGE = 'soak [--images <N>] [--from <N>] [--sample-ms <ms>]';

const FLAGS = { '--images': 'images', '--from': 'fromImage', '--sample-ms': 'sampleMs' } as const;
type Flag = keyof typeof FLAGS;

/**
 * Takes the soak's flags out of the bench's arguments: its options (defaults for those not given),
 * the arguments left for the bench's own parser, and every problem found (a flag without a whole
 * number, out of range, or given without the soak part).
 */
export function soakArgs(args: readonly string[]): { options: SoakOptions; rest: string[]; problems: string[] } {
  const rest: string[] = [];
  const problems: string[] = [];
  const given: Partial<SoakOptions> = {};
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    const equals = arg.indexOf('=');
    const flag = equals < 0 ? arg : arg.slice(0, equals);
    if (!(flag in FLAGS)) {
      rest.push(arg);
      continue;
    }
    const text = equals < 0 ? args[++index] : arg.slice(equals + 1);
    if (text !== undefined && /^[0-9]+$/.test(text)) given[FLAGS[flag as Flag]] = Number(text);
    else
      problems.push(
        text === undefined ? `${flag}: expected a whole number after it` : `${flag} ${text}: expected a whole number`,
      );
  }
  const options = { ...SOAK_DEFAULTS, ...given };
  if (!rest.includes('soak')) {
    if (problems.length > 0 || Object.keys(given).length > 0)
      problems.push(
        `${Object.keys(FLAGS).join(', ')} are the soak part's: name it (npm run bench -- soak --images 2000000)`,
      );
    return { options, rest, problems };
  }
  if (given.images !== undefined && (options.images < 2 || options.images > MAX_SOAK_IMAGES))
    problems.push(
      `--images ${options.images}: expected 2 to ${MAX_SOAK_IMAGES.toLocaleString('en-US')} (IMAGE_COUNT's most)`,
    );
  else if (options.fromImage < 1 || options.fromImage >= options.images)
    problems.push(
      `--from ${options.fromImage}` +
        (given.fromImage === undefined ? ' (the default)' : '') +
        `: expected at least 1 and below --images (${options.images})`,
    );
  if (given.sampleMs !== undefined && (options.sampleMs < 10 || options.sampleMs > 60_000))
    problems.push(`--sample-ms ${options.sampleMs}: expected 10 to 60000`);
  return { options, rest, problems };
}

/**
 * The run the soak asks for: IMAGE_COUNT is at most MAX_IMAGE_COUNT, so a longer soak is REPEAT equal sections of one
 * run.
 */
export interface SoakPlan {
  imageCount: number;
  repeat: number;
  /** imageCount × repeat: `images`, or up to repeat − 1 more when it does not divide evenly. */
  totalImages: number;
}

/** The fewest equal sections of at most `maxPerSection` images that hold `images`. */
export function soakPlan(images: number, maxPerSection = MAX_IMAGE_COUNT): SoakPlan {
  const repeat = Math.ceil(images / maxPerSection);
  const imageCount = Math.ceil(images / repeat);
  return { imageCount, repeat, totalImages: imageCount * repeat };
}

/** The services' environment for `plan` (WARMUP left to the default). */
export function soakEnv(plan: SoakPlan): Record<string, string> {
  return {
    TRANSPORTS: SOAK_SHAPE.transport,
    IMAGE_SIZE: SOAK_SHAPE.imageSize,
    WINDOW: String(SOAK_SHAPE.window),
    IMAGE_COUNT: String(plan.imageCount),
    REPEAT: String(plan.repeat),
  };
}

/** VmRSS of a /proc/<pid>/status text, in bytes; undefined when absent (a zombie has none). */
export function vmRssBytes(status: string): number | undefined {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  return match === null ? undefined : Number(match[1]) * 1024;
}

/** One sample of both processes, taken every --sample-ms. */
export interface SoakSample {
  /** Since the transmitter started. */
  atMs: number;
  /**
   * Recorded images so far in the run (GET /progress); null when the receiver did not answer within the sample (busy).
   */
  images: number | null;
  /**
   * The receiver said a run is in progress with recorded images still to come (warm-up included); null without an
   * answer.
   */
  streaming: boolean | null;
  /** VmRSS; null once the process is gone. */
  transmitterRssBytes: number | null;
  receiverRssBytes: number | null;
}

/**
 * The samples while images still arrived (warm-ups and the gaps between sections included), up to
 * the last one the receiver answered as streaming, and those after it: the last section's figures,
 * the report and the files. A sample the busy receiver left unanswered goes with its neighbours.
 */
export function soakPhases(samples: readonly SoakSample[]): { running: SoakSample[]; ending: SoakSample[] } {
  let endIndex = samples.length;
  while (endIndex > 0 && samples[endIndex - 1]!.streaming !== true) endIndex--;
  return { running: samples.slice(0, endIndex), ending: samples.slice(endIndex) };
}

/** One side's memory over the soak. */
export interface SideVerdict {
  /** The first sample at or past the --from-th image taken while images flowed (see soakVerdict). */
  from: { images: number; rssBytes: number } | null;
  /** The last sample while images were still arriving. */
  last: { images: number; rssBytes: number } | null;
  /** last − from; null without two such samples. */
  growthBytes: number | null;
  growthBytesPerImage: number | null;
  /**
   * Highest RSS after the last image arrived, until the transmitter exited: the last section's figures, the report, the
   * files.
   */
  peakWritingRssBytes: number | null;
  peakRssBytes: number | null;
  pass: boolean;
}

/** One file the receiver wrote (or should have): its size, null when missing. */
export interface SoakFile {
  name: string;
  bytes: number | null;
  /** One of SOAK_REQUIRED_FILES; any other file in OUTPUT_DIR must be non-empty too. */
  required: boolean;
}

/** The soak's outcome. */
export interface SoakVerdict {
  fromImage: number;
  limitBytes: number;
  transmitter: SideVerdict;
  receiver: SideVerdict;
  files: SoakFile[];
  /** The transmitter's exit code: 0 when every image arrived intact. */
  runExitCode: number | null;
  pass: boolean;
  /** Why it failed, one sentence each; empty on a pass. */
  reasons: string[];
}

/**
 * Judges the samples: per side, RSS at the first sample at or past the `fromImage`-th image taken
 * while images flowed (the count rose into it and rises out of it) against the last sample while
 * images still arrived (the last one the receiver answered as streaming), each side's peak after
 * it apart; the files; the run's own exit code. Pass: both growths within `limitBytes`, every file
 * there and non-empty, the run exited 0. Why "while images flowed": at 1,000,000-image sections
 * the 1,000,000th image is a section's end, whose one-off step in RSS (hundreds of MiB on today's
 * code) the samples at that count catch or miss by chance; the chart shows the step, the growth
 * measured is the images'.
 */
export function soakVerdict(
  samples: readonly SoakSample[],
  files: readonly SoakFile[],
  runExitCode: number | null,
  fromImage: number,
  limitBytes = SOAK_LIMIT_BYTES,
): SoakVerdict {
  const { running, ending } = soakPhases(samples);
  const flows = flowing(samples);
  const side = (rssOf: (s: SoakSample) => number | null): SideVerdict => {
    const points = running.flatMap((s, index) => {
      const rssBytes = rssOf(s);
      return s.images === null || rssBytes === null ? [] : [{ images: s.images, rssBytes, flowing: flows[index]! }];
    });
    const first = points.find((p) => p.flowing && p.images >= fromImage);
    const final = points.at(-1);
    const from = first === undefined ? null : { images: first.images, rssBytes: first.rssBytes };
    const last = final === undefined ? null : { images: final.images, rssBytes: final.rssBytes };
    const measured = from !== null && last !== null && last.images > from.images;
    const growthBytes = measured ? last.rssBytes - from.rssBytes : null;
    const peak = (of: readonly SoakSample[]): number | null => {
      const values = of.flatMap((s) => rssOf(s) ?? []);
      return values.length === 0 ? null : Math.max(...values);
    };
    return {
      from,
      last,
      growthBytes,
      growthBytesPerImage: measured ? growthBytes! / (last.images - from.images) : null,
      peakWritingRssBytes: peak(ending),
      peakRssBytes: peak(samples),
      pass: growthBytes !== null && growthBytes <= limitBytes,
    };
  };
  const transmitter = side((s) => s.transmitterRssBytes);
  const receiver = side((s) => s.receiverRssBytes);
  const reasons: string[] = [];
  for (const [name, verdict] of [
    ['transmitter', transmitter],
    ['receiver', receiver],
  ] as const) {
    if (verdict.growthBytes === null)
      reasons.push(`${name}: no two samples from image ${fromImage.toLocaleString('en-US')} on to compare`);
    else if (!verdict.pass)
      reasons.push(
        `${name} grew ${mibText(verdict.growthBytes)} MiB from image ` +
          verdict.from!.images.toLocaleString('en-US') +
          ` to ${verdict.last!.images.toLocaleString('en-US')}, over ${mibText(limitBytes)} MiB`,
      );
  }
  for (const file of files) {
    if (file.bytes === null) reasons.push(`${file.name} was not written`);
    else if (file.bytes === 0) reasons.push(`${file.name} is empty`);
  }
  if (runExitCode !== 0) reasons.push(`the run itself failed (transmitter exit ${runExitCode ?? 'by a signal'})`);
  return {
    fromImage,
    limitBytes,
    transmitter,
    receiver,
    files: [...files],
    runExitCode,
    pass: reasons.length === 0,
    reasons,
  };
}

/**
 * Whether each sample was taken while images flowed: the count rose from the sample before and
 * rises again by the one after (samples the receiver left unanswered skipped); not at a pause (a
 * section's end, the next one's warm-up) nor at either end.
 */
function flowing(samples: readonly SoakSample[]): boolean[] {
  const known = samples.flatMap((s, index) => (s.images === null ? [] : [index]));
  const result = samples.map(() => false);
  for (let k = 1; k + 1 < known.length; k++) {
    const [before, at, after] = [known[k - 1]!, known[k]!, known[k + 1]!].map((index) => samples[index]!.images!) as [
      number,
      number,
      number,
    ];
    result[known[k]!] = before < at && at < after;
  }
  return result;
}

/** Bytes in MiB, one decimal. */
export function mibText(bytes: number | null): string {
  return bytes === null ? '-' : (bytes / 1024 / 1024).toFixed(1);
}

/** What the soak ran, for its text and charts. */
export interface SoakRunFacts {
  plan: SoakPlan;
  sampleMs: number;
  seconds: number;
  pids: { transmitter: number; receiver: number };
}

/** The soak's lines for the bench's output: what ran, each side's figures, the files, the verdict. */
export function soakLines(facts: SoakRunFacts, samples: readonly SoakSample[], verdict: SoakVerdict): string[] {
  const image = (point: { images: number } | null): string =>
    point === null ? '-' : point.images.toLocaleString('en-US');
  const rows = (['transmitter', 'receiver'] as const).map((name) => {
    const side = verdict[name];
    return [
      name,
      String(facts.pids[name]),
      image(side.from),
      mibText(side.from?.rssBytes ?? null),
      image(side.last),
      mibText(side.last?.rssBytes ?? null),
      mibText(side.growthBytes),
      side.growthBytesPerImage === null ? '-' : side.growthBytesPerImage.toFixed(1),
      mibText(side.peakWritingRssBytes),
      mibText(side.peakRssBytes),
      side.pass ? 'ok' : 'FAILED',
    ];
  });
  return [
    `Soak: ${soakDescription(facts)}; RSS of each process (VmRSS, /proc) and the receiver's count of recorded ` +
      `images (GET /progress) every ${facts.sampleMs} ms, ${samples.length} samples ` +
      `over ${facts.seconds.toFixed(0)} s. Target: each side gains at most ${mibText(verdict.limitBytes)} MiB from ` +
      `the first sample past image ` +
      verdict.fromImage.toLocaleString('en-US') +
      ` taken while images flowed (not at a section's end) to the last before the last image arrived; every ` +
      `file written.`,
    renderTable(
      [
        'Side',
        'pid',
        'from image',
        'RSS MiB',
        'last image',
        'RSS MiB',
        'growth MiB',
        'B/image',
        'peak writing MiB',
        'peak MiB',
        'Result',
      ],
      rows,
      false,
    ),
    `Files: ` +
      verdict.files.map((f) => `${f.name} ${f.bytes === null ? 'MISSING' : formatSize(f.bytes)}`).join(', ') +
      `; the run ` +
      (verdict.runExitCode === 0
        ? 'delivered every image intact'
        : `failed (transmitter exit ${verdict.runExitCode ?? 'by a signal'})`) +
      `.`,
    verdict.pass ? 'Soak: PASS.' : `Soak: FAILED: ${verdict.reasons.join('; ')}.`,
  ];
}

function soakDescription(facts: SoakRunFacts): string {
  const { plan } = facts;
  const sections =
    plan.repeat === 1
      ? 'one section'
      : `REPEAT=${plan.repeat} sections of ` +
        plan.imageCount.toLocaleString('en-US') +
        ` (IMAGE_COUNT's most is ${MAX_IMAGE_COUNT.toLocaleString('en-US')})`;
  return (
    `${SOAK_SHAPE.transport.toUpperCase()}, ${formatSize(SOAK_SHAPE.imageSizeBytes)} × ` +
    plan.totalImages.toLocaleString('en-US') +
    ` images in ${sections}, WINDOW=${SOAK_SHAPE.window}, WARMUP=auto each section`
  );
}

/**
 * The soak's two charts: RSS against images while they arrive, and against time over the whole soak (the files written
 * at its end).
 */
export function soakCharts(facts: SoakRunFacts, samples: readonly SoakSample[], verdict: SoakVerdict): SweepChart[] {
  const mib = (bytes: number | null): number | null =>
    bytes === null ? null : Math.round((bytes / 1024 / 1024) * 10) / 10;
  const sides = [
    ['transmitter', (s: SoakSample) => s.transmitterRssBytes],
    ['receiver', (s: SoakSample) => s.receiverRssBytes],
  ] as const;
  const { running } = soakPhases(samples);
  const endAtMs = running.at(-1)?.atMs;
  const growth =
    `growth from the first sample past image ` +
    verdict.fromImage.toLocaleString('en-US') +
    (` while images flowed: transmitter ` +
      mibText(verdict.transmitter.growthBytes) +
      (` MiB, receiver ` +
        mibText(verdict.receiver.growthBytes) +
        ` MiB (target at most ${mibText(verdict.limitBytes)} MiB each): ${verdict.pass ? 'PASS' : 'FAILED'}`));
  return [
    {
      id: 'soak-rss-images',
      title: 'Soak: RSS against images',
      note: `${soakDescription(facts)}; a sample every ${facts.sampleMs} ms while images arrive; ${growth}.`,
      xLabel: 'recorded images',
      yLabel: 'RSS, MiB',
      scale: 'linear',
      series: sides.map(([label, rss]) => ({
        label,
        points: running.flatMap((s) => (s.images === null ? [] : [{ x: s.images, y: mib(rss(s)) }])),
      })),
    },
    {
      id: 'soak-rss-seconds',
      title: 'Soak: RSS against time',
      note:
        `The same samples over the whole soak, from the transmitter's start to its exit` +
        (endAtMs === undefined
          ? ''
          : `; the last image arrived after ${(endAtMs / 1000).toFixed(0)} s, then the last section's figures, ` +
            `the report and the files`) +
        (`; peak while writing: transmitter ` +
          mibText(verdict.transmitter.peakWritingRssBytes) +
          ` MiB, receiver ${mibText(verdict.receiver.peakWritingRssBytes)} MiB.`),
      xLabel: 'seconds since the transmitter started',
      yLabel: 'RSS, MiB',
      scale: 'linear',
      series: sides.map(([label, rss]) => ({
        label,
        points: samples.map((s) => ({ x: Math.round(s.atMs / 100) / 10, y: mib(rss(s)) })),
      })),
    },
  ];
}
