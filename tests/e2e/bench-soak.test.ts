import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SoakSample, SoakVerdict } from '../../scripts/lib/soak.js';
import { projectPath } from '../../services/shared/paths.js';

// `npm run bench -- soak` through its real entry, shortened to 50,000 images sampled every 100 ms (over a second of
// images here, several samples even on a faster machine): the mechanism, not the memory (a run this short says nothing
// about growth, and the verdict may go either way on a loaded machine): both processes sampled, the count rising, a
// verdict with its fields, the files named, the page drawn.

let outDir: string;
let code: number | null;
let stderr = '';
let soak: {
  pids: { transmitter: number; receiver: number };
  samples: SoakSample[];
  verdict: SoakVerdict;
  plan: { totalImages: number };
};
let page: string;

beforeAll(async () => {
  outDir = await mkdtemp(path.join(os.tmpdir(), 'itb-soak-test-'));
  const child = spawn(
    process.execPath,
    [
      projectPath('dist', 'scripts', 'bench', 'main.js'),
      'soak',
      '--images',
      '50000',
      '--from',
      '5000',
      '--sample-ms',
      '100',
      `--out=${outDir}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const files = await readdir(outDir);
  const results = files.find((f) => /^results-.*-soak\.json$/.test(f));
  const charts = files.find((f) => /^charts-.*-soak\.html$/.test(f));
  if (results === undefined || charts === undefined)
    throw new Error(`the soak wrote ${files.join(', ') || 'nothing'} (exit ${code}); stderr:\n${stderr.slice(-3000)}`);
  soak = (JSON.parse(await readFile(path.join(outDir, results), 'utf8')) as { soak: typeof soak }).soak;
  page = await readFile(path.join(outDir, charts), 'utf8');
}, 120_000);
afterAll(async () => {
  await rm(outDir, { recursive: true, force: true });
});

describe('npm run bench -- soak', () => {
  it('exits 0 on a pass and 1 on a fail, never anything else', () => {
    expect([0, 1], stderr.slice(-3000)).toContain(code);
    expect(code).toBe(soak.verdict.pass ? 0 : 1);
  });

  it('samples both processes, each its own pid, with an RSS while the run goes', () => {
    expect(soak.pids.transmitter).not.toBe(soak.pids.receiver);
    const running = soak.samples.filter((s) => s.streaming === true);
    expect(running.length).toBeGreaterThanOrEqual(3);
    for (const s of running) {
      expect(s.transmitterRssBytes).toBeGreaterThan(10 * 1024 * 1024);
      expect(s.receiverRssBytes).toBeGreaterThan(10 * 1024 * 1024);
    }
  });

  it('reads a count of recorded images that never falls while the run goes and reaches every image', () => {
    const counts = soak.samples
      .filter((s) => s.streaming !== null && s.images !== null && (s.streaming || s.images > 0))
      .map((s) => s.images!);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(new Set(counts).size).toBeGreaterThanOrEqual(2);
    expect(Math.max(...counts)).toBe(soak.plan.totalImages);
    expect(soak.plan.totalImages).toBe(50_000);
  });

  it(
    'gives a verdict per side, from the first sample past --from while images flowed to the last while images ' +
      'arrived, and names every file',
    () => {
      for (const side of [soak.verdict.transmitter, soak.verdict.receiver]) {
        expect(side.from?.images).toBeGreaterThanOrEqual(0);
        expect(side.last!.images).toBeGreaterThan(side.from!.images);
        expect(side.growthBytes).toBe(side.last!.rssBytes - side.from!.rssBytes);
        expect(typeof side.pass).toBe('boolean');
        expect(side.peakRssBytes).toBeGreaterThan(0);
      }
      expect(soak.verdict).toMatchObject({ fromImage: 5000, limitBytes: 32 * 1024 * 1024, runExitCode: 0 });
      const files = soak.verdict.files.filter((f) => f.required);
      expect(files.map((f) => f.name)).toEqual(['output.log', 'results.json', 'report.html']);
      for (const file of files) expect(file.bytes, file.name).toBeGreaterThan(0);
    },
  );

  it('draws RSS against images and against time on the bench page', () => {
    expect(page).toContain('<canvas data-chart="soak-rss-images"');
    expect(page).toContain('<canvas data-chart="soak-rss-seconds"');
  });
});
