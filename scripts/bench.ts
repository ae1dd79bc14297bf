import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { renderTable, type RunReport } from '../services/core/report.js';
import type { SectionResult } from '../services/core/section.js';
import { formatSize } from '../services/core/size.js';
import { freePortsEnv } from '../services/shared/ports.js';
import { projectPath } from '../services/shared/paths.js';

// `npm run bench`: the whole suite (`npm start`'s entry, so real processes and a private
// redis-server) over a matrix of image sizes and windows, three interleaved repeats each, then
// three checks: linear assembly (4 MB vs 32 MB vs 256 MB), flat memory (100 vs 1,000 images;
// 64 MB images) and what verification costs the TCP baseline. Prints tables and writes
// bench/results-<date>.json. A benchmark, not a test: `npm test` never runs it.

const TRANSPORTS = ['websocket', 'grpc', 'zeromq', 'redis', 'tcp'];
const SIZES = [1000, 64_000, 545_792, 4_000_000, 32_000_000];
const WINDOWS = [1, 16];
const REPEAT = 3;
/** Bytes per section: enough images that a section outlasts timer noise, few enough to finish in minutes. */
const BYTES_PER_SECTION = 64_000_000;
/** Images per run when measuring what verification costs: a second or more per run, so timer noise fades. */
const OVERHEAD_IMAGES = 2000;

/** One cell of the benchmark: a configuration and the report its run produced. */
interface Cell {
  name: string;
  env: Record<string, string>;
  report: RunReport;
  seconds: number;
}

function imageCountFor(sizeBytes: number): number {
  return Math.min(1000, Math.max(8, Math.round(BYTES_PER_SECTION / sizeBytes)));
}

/** Runs the suite once as `npm start` does, with `env`, and returns its results.json. */
async function runSuite(name: string, env: Record<string, string>): Promise<Cell> {
  const outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-bench-'));
  const ports = await freePortsEnv();
  const { REDIS_URL: _shared, ...inherited } = process.env;
  const startedAt = Date.now();
  process.stderr.write(`bench: ${name} ...`);
  let stderr = '';
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [projectPath('dist', 'services', 'start', 'main.js')], {
      env: { ...inherited, LOG_LEVEL: 'warn', TRANSPORTS: TRANSPORTS.join(','), OUTPUT_DIR: outputDir, ...ports, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    // Progress lines and warnings are kept back unless the run fails.
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', resolve);
  });
  const seconds = (Date.now() - startedAt) / 1000;
  process.stderr.write(` ${seconds.toFixed(1)} s${code === 0 ? '' : ` (exit ${code}: see the FAILED rows)\n${stderr.slice(-4000)}`}\n`);
  const report = JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as RunReport;
  await rm(outputDir, { recursive: true, force: true });
  return { name, env, report, seconds };
}

function medianSection(report: RunReport, transport: string): SectionResult | undefined {
  const summary = report.transports.find((t) => t.transport === transport);
  return summary?.medianSection === null || summary === undefined ? undefined : report.sections[summary.medianSection];
}

const fixed = (value: number | null | undefined, digits: number): string => (value === null || value === undefined ? '-' : value.toFixed(digits));
const mib = (bytes: number | undefined): string => (bytes === undefined ? '-' : (bytes / 1024 / 1024).toFixed(0));

function matrixTable(cells: readonly Cell[]): string {
  const rows: string[][] = [];
  for (const cell of cells) {
    for (const transport of TRANSPORTS) {
      const summary = cell.report.transports.find((t) => t.transport === transport);
      const s = medianSection(cell.report, transport);
      rows.push([
        transport,
        formatSize(cell.report.run.imageSizeBytes),
        String(cell.report.run.window),
        String(cell.report.run.imageCount),
        fixed(s?.throughputMBps, 1),
        summary?.spread.throughputMBps ? `${summary.spread.throughputMBps.min.toFixed(0)}–${summary.spread.throughputMBps.max.toFixed(0)}` : '-',
        fixed(s?.imagesPerSecond, 0),
        fixed(s?.latency?.p50Ms, 3),
        fixed(s?.latency?.p99Ms, 3),
        fixed(s?.cost.transmitter?.cpuMsPerImage, 3),
        fixed(s?.cost.receiver?.cpuMsPerImage, 3),
        mib(s?.cost.transmitter?.peakRssBytes),
        mib(s?.cost.receiver?.peakRssBytes),
        summary?.ok ? 'ok' : `FAILED: ${summary?.failure ?? 'lost or corrupt images'}`,
      ]);
    }
  }
  return renderTable(['Transport', 'Image', 'Win', 'Images', 'MB/s', 'MB/s range', 'images/s', 'p50 ms', 'p99 ms', 'TX CPU ms/img', 'RX CPU ms/img', 'TX RSS MiB', 'RX RSS MiB', 'Result'], rows);
}

async function main(): Promise<void> {
  const started = new Date();
  const cells: Cell[] = [];
  for (const window of WINDOWS) {
    for (const size of SIZES) {
      cells.push(await runSuite(`${formatSize(size)} × window ${window}`, { IMAGE_SIZE: String(size), IMAGE_COUNT: String(imageCountFor(size)), WINDOW: String(window), REPEAT: String(REPEAT), IMAGE_TIMEOUT_MS: '60000' }));
    }
  }
  // Linear assembly: MB/s should not fall as images grow (no copy of the whole per chunk).
  const linearity = [await runSuite('256 MiB × window 1 (linearity)', { IMAGE_SIZE: '256MiB', IMAGE_COUNT: '3', WARMUP: '1', WINDOW: '1', REPEAT: '1', IMAGE_TIMEOUT_MS: '60000' })];
  // Flat memory: peak RSS must not grow with the number of images, and stays bounded for big ones.
  const memory = [
    await runSuite('1 MB × 100 (memory)', { IMAGE_SIZE: '1MB', IMAGE_COUNT: '100', WINDOW: '16', REPEAT: '1' }),
    await runSuite('1 MB × 1000 (memory)', { IMAGE_SIZE: '1MB', IMAGE_COUNT: '1000', WINDOW: '16', REPEAT: '1' }),
    await runSuite('64 MB × window 4 (memory)', { IMAGE_SIZE: '64MB', IMAGE_COUNT: '6', WARMUP: '1', WINDOW: '4', REPEAT: '1', IMAGE_TIMEOUT_MS: '60000' }),
  ];
  // What verification costs the baseline, verification on and off, interleaved.
  const overhead: Cell[] = [];
  for (let i = 0; i < REPEAT; i++) {
    for (const verify of ['true', 'false']) {
      overhead.push(await runSuite(`tcp 533 KiB × window 16, VERIFY=${verify}`, { TRANSPORTS: 'tcp', IMAGE_SIZE: '545792', IMAGE_COUNT: String(OVERHEAD_IMAGES), WINDOW: '16', REPEAT: '1', VERIFY: verify }));
    }
  }

  const lines: string[] = [];
  lines.push(`image-transfer-bench benchmark, ${started.toISOString()}`);
  const host = cells[0]?.report.run.hosts.receiver;
  if (host) lines.push(`Host: ${host.cpuModel}, ${host.cores} cores, ${formatSize(host.totalMemoryBytes)}, ${host.platform} ${host.kernel}, Node ${host.nodeVersion}`);
  lines.push(`Libraries: ${Object.entries(host?.libraries ?? {}).map(([n, v]) => `${n} ${v}`).join(', ')}`);
  lines.push(`Each cell: ${REPEAT} interleaved repeats, median section by total transfer time; MB/s range = min–max across repeats.`);
  lines.push('', matrixTable(cells));

  const sizeRows = TRANSPORTS.map((transport) => {
    const at = (cell: Cell | undefined): string => fixed(cell && medianSection(cell.report, transport)?.throughputMBps, 1);
    const bySize = (size: number): Cell | undefined => cells.find((c) => c.report.run.imageSizeBytes === size && c.report.run.window === 1);
    return [transport, at(bySize(4_000_000)), at(bySize(32_000_000)), at(linearity[0])];
  });
  lines.push('', 'Linear assembly, window 1 (MB/s):', renderTable(['Transport', '4 MB', '32 MB', '256 MiB'], sizeRows, false));

  const memoryRows = TRANSPORTS.map((transport) => {
    const side = (cell: Cell | undefined, which: 'transmitter' | 'receiver'): string => mib(cell && medianSection(cell.report, transport)?.cost[which]?.peakRssBytes);
    return [transport, side(memory[0], 'transmitter'), side(memory[1], 'transmitter'), side(memory[0], 'receiver'), side(memory[1], 'receiver'), side(memory[2], 'transmitter'), side(memory[2], 'receiver')];
  });
  lines.push(
    '',
    'Peak RSS (MiB) of each side: 1 MB images × 100 vs × 1,000 (window 16), and 64 MB images (window 4; bound 6 × 64 MB × 4 = 1,536 MB):',
    renderTable(['Transport', 'TX ×100', 'TX ×1000', 'RX ×100', 'RX ×1000', 'TX 64 MB', 'RX 64 MB'], memoryRows, false),
  );

  const overheadRows = overhead.map((cell) => {
    const s = medianSection(cell.report, 'tcp');
    return [cell.env.VERIFY ?? '', fixed(s?.throughputMBps, 1), fixed(s?.latency?.p50Ms, 3), fixed(s?.cost.receiver?.cpuMsPerImage, 3)];
  });
  const meanOf = (verify: string): number => {
    const values = overhead.filter((c) => c.env.VERIFY === verify).map((c) => medianSection(c.report, 'tcp')?.throughputMBps ?? 0);
    return values.reduce((a, b) => a + b, 0) / values.length;
  };
  lines.push(
    '',
    `Verification cost on the TCP baseline (533 KiB, window 16, ${OVERHEAD_IMAGES} images, runs interleaved):`,
    renderTable(['VERIFY', 'MB/s', 'p50 ms', 'RX CPU ms/img'], overheadRows, false),
    `Mean MB/s: verify on ${meanOf('true').toFixed(1)}, off ${meanOf('false').toFixed(1)}: verification costs ${(100 * (1 - meanOf('true') / meanOf('false'))).toFixed(1)} % of the baseline's throughput.`,
  );
  const totalSeconds = (Date.now() - started.getTime()) / 1000;
  lines.push('', `Benchmark took ${totalSeconds.toFixed(0)} s.`);
  const text = lines.join('\n');
  process.stdout.write(`${text}\n`);

  await mkdir(projectPath('bench'), { recursive: true });
  const file = projectPath('bench', `results-${started.toISOString().slice(0, 10)}.json`);
  // Per-image lists stay out (each run's results.json has them): the file keeps every section's figures.
  const strip = (cell: Cell) => ({ name: cell.name, env: cell.env, seconds: cell.seconds, report: { ...cell.report, sections: cell.report.sections.map(({ images: _images, ...rest }) => rest) } });
  await writeFile(file, `${JSON.stringify({ startedAt: started.toISOString(), totalSeconds, text, matrix: cells.map(strip), linearity: linearity.map(strip), memory: memory.map(strip), overhead: overhead.map(strip) }, null, 1)}\n`);
  process.stdout.write(`Written: ${path.relative(process.cwd(), file)}\n`);
}

await main();
