import { describe, expect, it } from 'vitest';
import {
  soakArgs,
  soakCharts,
  soakEnv,
  soakLines,
  soakPhases,
  soakPlan,
  soakVerdict,
  vmRssBytes,
  SOAK_DEFAULTS,
  type SoakFile,
  type SoakSample,
} from '../../scripts/lib/soak.js';

const MiB = 1024 * 1024;
const FILES: SoakFile[] = [
  { name: 'output.log', bytes: 10, required: true },
  { name: 'results.json', bytes: 20, required: true },
  { name: 'report.html', bytes: 30, required: true },
];

/** A sample with both sides' RSS in MiB. */
const at = (
  atMs: number,
  images: number | null,
  streaming: boolean | null,
  transmitterMiB: number | null,
  receiverMiB: number | null,
): SoakSample => ({
  atMs,
  images,
  streaming,
  transmitterRssBytes: transmitterMiB === null ? null : transmitterMiB * MiB,
  receiverRssBytes: receiverMiB === null ? null : receiverMiB * MiB,
});

describe('soakArgs', () => {
  it("takes the soak's flags, either form, out of the bench's arguments and leaves the rest", () => {
    expect(soakArgs(['soak', '--images', '2000000', '--from=500000', '--out=x'])).toEqual({
      options: { images: 2_000_000, fromImage: 500_000, sampleMs: 1000 },
      rest: ['soak', '--out=x'],
      problems: [],
    });
    expect(soakArgs(['soak'])).toEqual({ options: SOAK_DEFAULTS, rest: ['soak'], problems: [] });
    expect(soakArgs(['ceiling', '--rounds=3'])).toEqual({
      options: SOAK_DEFAULTS,
      rest: ['ceiling', '--rounds=3'],
      problems: [],
    });
    expect(soakArgs(['soak', '--images', '20000', '--from', '2000', '--sample-ms', '100']).options).toEqual({
      images: 20_000,
      fromImage: 2000,
      sampleMs: 100,
    });
  });

  it.each([
    [['soak', '--images'], '--images: expected a whole number after it'],
    [['soak', '--images', '2e6'], '--images 2e6: expected a whole number'],
    [['soak', '--images=1'], "--images 1: expected 2 to 1,000,000,000 (IMAGE_COUNT's most)"],
    [['soak', '--images', '1000000001'], '--images 1000000001: expected 2 to 1,000,000,000'],
    [['soak', '--images', '500000'], '--from 1000000 (the default): expected at least 1 and below --images (500000)'],
    [['soak', '--images', '20000', '--from', '20000'], '--from 20000: expected at least 1 and below --images (20000)'],
    [['soak', '--from=0'], '--from 0: expected at least 1'],
    [['soak', '--sample-ms', '5'], '--sample-ms 5: expected 10 to 60000'],
    [['ceiling', '--images', '20000'], "--images, --from, --sample-ms are the soak part's: name it"],
  ])('%j: %s', (args, problem) => {
    const { problems } = soakArgs(args);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(problem);
  });
});

describe('soakPlan', () => {
  it.each([
    [20_000, { imageCount: 20_000, repeat: 1, totalImages: 20_000 }],
    [1_000_000, { imageCount: 1_000_000, repeat: 1, totalImages: 1_000_000 }],
    [2_000_000, { imageCount: 1_000_000, repeat: 2, totalImages: 2_000_000 }],
    [20_000_000, { imageCount: 1_000_000, repeat: 20, totalImages: 20_000_000 }],
    // Uneven: equal sections, up to repeat − 1 images more than asked.
    [2_500_000, { imageCount: 833_334, repeat: 3, totalImages: 2_500_002 }],
  ])('%i images: %j', (images, plan) => {
    // Split as it would be were IMAGE_COUNT's most a million (it is a billion: one section).
    expect(soakPlan(images, 1_000_000)).toEqual(plan);
  });

  it('runs 1 KB images over TCP at WINDOW=64 and leaves WARMUP to its default', () => {
    expect(soakEnv(soakPlan(20_000_000))).toEqual({
      TRANSPORTS: 'tcp',
      IMAGE_SIZE: '1KB',
      WINDOW: '64',
      IMAGE_COUNT: '20000000',
      REPEAT: '1',
    });
  });
});

describe('vmRssBytes', () => {
  it("reads VmRSS in kB from /proc/<pid>/status, and nothing from a zombie's", () => {
    expect(vmRssBytes('Name:\tnode\nVmHWM:\t  200000 kB\nVmRSS:\t  123456 kB\nRssAnon:\t 1 kB\n')).toBe(123456 * 1024);
    expect(vmRssBytes('Name:\tnode\nState:\tZ (zombie)\n')).toBeUndefined();
  });
});

describe('soakVerdict', () => {
  // Warm-up at 0 images, a section's end at 1,000 (its step caught by the second sample at that
  // count), the receiver busy once, the next section from 1,200, the last streaming sample at
  // 1,900, then the end: the receiver busy (no answer), then the run over.
  const samples = [
    at(100, 0, false, 90, 100),
    at(200, 0, true, 95, 110),
    at(300, 600, true, 98, 120),
    at(400, 1000, true, 100, 130),
    at(500, 1000, true, 160, 200),
    at(600, null, null, 150, 190),
    at(700, 1200, true, 110, 150),
    at(800, 1900, true, 120, 190),
    at(900, null, null, 300, 400),
    at(1000, 2000, false, 310, 420),
    at(1100, 0, false, null, 200),
  ];

  it('splits the samples at the last one the receiver answered as streaming', () => {
    const { running, ending } = soakPhases(samples);
    expect(running.map((s) => s.atMs)).toEqual([100, 200, 300, 400, 500, 600, 700, 800]);
    expect(ending.map((s) => s.atMs)).toEqual([900, 1000, 1100]);
  });

  it(
    'measures each side from the first sample past --from taken while images flowed to the last while images ' +
      "arrived, the end's peak apart",
    () => {
      const verdict = soakVerdict(samples, FILES, 0, 1000, 32 * MiB);
      // Not either sample at 1,000: the count stood still there (the section's end).
      expect(verdict.transmitter).toEqual({
        from: { images: 1200, rssBytes: 110 * MiB },
        last: { images: 1900, rssBytes: 120 * MiB },
        growthBytes: 10 * MiB,
        growthBytesPerImage: (10 * MiB) / 700,
        peakWritingRssBytes: 310 * MiB,
        peakRssBytes: 310 * MiB,
        pass: true,
      });
      expect(verdict.receiver).toMatchObject({
        from: { images: 1200, rssBytes: 150 * MiB },
        last: { images: 1900, rssBytes: 190 * MiB },
        growthBytes: 40 * MiB,
        peakWritingRssBytes: 420 * MiB,
        pass: false,
      });
      expect(verdict.pass).toBe(false);
      expect(verdict.reasons).toEqual(['receiver grew 40.0 MiB from image 1,200 to 1,900, over 32.0 MiB']);
      // Mid-section, the first sample past --from: 600 flowed (0 before, 1,000 after).
      expect(soakVerdict(samples, FILES, 0, 500).transmitter.from).toEqual({ images: 600, rssBytes: 98 * MiB });
    },
  );

  it('passes only with both sides within the limit, every file there and non-empty, and the run exiting 0', () => {
    expect(soakVerdict(samples, FILES, 0, 1000, 40 * MiB)).toMatchObject({ pass: true, reasons: [] });
    const files: SoakFile[] = [
      ...FILES.slice(0, 2),
      { name: 'report.html', bytes: null, required: true },
      { name: 'images.ndjson', bytes: 0, required: false },
    ];
    expect(soakVerdict(samples, files, 1, 1000, 40 * MiB).reasons).toEqual([
      'report.html was not written',
      'images.ndjson is empty',
      'the run itself failed (transmitter exit 1)',
    ]);
  });

  it('fails a side it could not measure: no sample past --from while images flowed, or none after it', () => {
    const verdict = soakVerdict(samples.slice(0, 5), FILES, 0, 1000);
    expect(verdict.transmitter).toMatchObject({
      from: null,
      last: { images: 1000 },
      growthBytes: null,
      growthBytesPerImage: null,
      peakWritingRssBytes: null,
      pass: false,
    });
    expect(soakVerdict(samples, FILES, 0, 1900).transmitter).toMatchObject({
      from: { images: 1900 },
      last: { images: 1900 },
      growthBytes: null,
      pass: false,
    });
    expect(verdict.reasons).toContain('transmitter: no two samples from image 1,000 on to compare');
  });
});

describe('soakLines and soakCharts', () => {
  const samples = [
    at(1000, 0, true, 90, 100),
    at(2000, 1000, true, 100, 130),
    at(3000, 1900, true, 120, 170),
    at(4000, 2000, false, 310, 420),
  ];
  const verdict = soakVerdict(samples, FILES, 0, 1000);
  const facts = { plan: soakPlan(2000), sampleMs: 1000, seconds: 4.2, pids: { transmitter: 11, receiver: 22 } };

  it("says what ran, each side's figures and the verdict", () => {
    const text = soakLines(facts, samples, verdict).join('\n');
    expect(text).toContain('TCP, 1000 B × 2,000 images in one section, WINDOW=64, WARMUP=auto each section');
    expect(text).toMatch(
      /transmitter\s+11\s+1,000\s+100\.0\s+1,900\s+120\.0\s+20\.0\s+23301\.7\s+310\.0\s+310\.0\s+ok/,
    );
    expect(text).toMatch(
      /receiver\s+22\s+1,000\s+130\.0\s+1,900\s+170\.0\s+40\.0\s+46603\.4\s+420\.0\s+420\.0\s+FAILED/,
    );
    expect(text).toContain(
      'Files: output.log 10 B, results.json 20 B, report.html 30 B; the run delivered every image intact.',
    );
    expect(text).toContain('Soak: FAILED: receiver grew 40.0 MiB from image 1,000 to 1,900, over 32.0 MiB.');
  });

  it(
    'draws RSS in MiB against images while they arrive, ' + 'and against seconds over the whole soak, on linear axes',
    () => {
      const [byImages, bySeconds] = soakCharts(facts, samples, verdict);
      expect(byImages).toMatchObject({ id: 'soak-rss-images', scale: 'linear', yLabel: 'RSS, MiB' });
      expect(byImages!.series).toEqual([
        {
          label: 'transmitter',
          points: [
            { x: 0, y: 90 },
            { x: 1000, y: 100 },
            { x: 1900, y: 120 },
          ],
        },
        {
          label: 'receiver',
          points: [
            { x: 0, y: 100 },
            { x: 1000, y: 130 },
            { x: 1900, y: 170 },
          ],
        },
      ]);
      expect(bySeconds).toMatchObject({ id: 'soak-rss-seconds', scale: 'linear' });
      expect(bySeconds!.series[1]!.points).toEqual([
        { x: 1, y: 100 },
        { x: 2, y: 130 },
        { x: 3, y: 170 },
        { x: 4, y: 420 },
      ]);
    },
  );
});
