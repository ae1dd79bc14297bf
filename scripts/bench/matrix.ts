import { renderTable } from '../../services/core/report/text/format.js';
import { formatSize } from '../../services/core/config/size.js';
import { fixed, mib } from './format.js';
import type { BenchPlan } from './plan.js';
import { medianSection, runSuite, type Cell } from './suite.js';

// The matrix part: image size × WINDOW, then linear assembly and flat memory.

const SIZES = [1000, 64_000, 545_792, 4_000_000, 32_000_000];
const WINDOWS = [1, 16];
const MATRIX_REPEAT = 3;
/** Bytes per matrix section: enough images that a section outlasts timer noise, few enough to finish in minutes. */
const BYTES_PER_SECTION = 64_000_000;

/** The matrix's table: one row per transport and cell. */
function matrixTable(plan: BenchPlan, cells: readonly Cell[]): string {
  const rows: string[][] = [];
  for (const cell of cells) {
    for (const transport of plan.transportNames) {
      const summary = cell.report.transports.find((t) => t.transport === transport);
      const s = medianSection(cell.report, transport);
      rows.push([
        transport,
        formatSize(cell.report.run.imageSizeBytes),
        String(cell.report.run.window),
        String(cell.report.run.imageCount),
        fixed(s?.throughputMBps, 1),
        summary?.spread.throughputMBps
          ? `${summary.spread.throughputMBps.min.toFixed(0)}–${summary.spread.throughputMBps.max.toFixed(0)}`
          : '-',
        fixed(s?.imagesPerSecond, 0),
        fixed(s?.latency?.p50Ms, 3),
        fixed(s?.latency?.p99Ms, 3),
        fixed(s?.rtt?.p50Ms, 3),
        fixed(s?.cost.transmitter?.cpuMsPerImage, 3),
        fixed(s?.cost.receiver?.cpuMsPerImage, 3),
        mib(s?.cost.transmitter?.peakRssBytes),
        mib(s?.cost.receiver?.peakRssBytes),
        summary?.ok ? 'ok' : `FAILED: ${summary?.failure ?? 'lost or corrupt images'}`,
      ]);
    }
  }
  return renderTable(
    [
      'Transport',
      'Image',
      'Win',
      'Images',
      'MB/s',
      'MB/s range',
      'images/s',
      'p50 ms',
      'p99 ms',
      'RTT p50',
      'TX CPU ms/img',
      'RX CPU ms/img',
      'TX RSS MiB',
      'RX RSS MiB',
      'Result',
    ],
    rows,
  );
}

function imageCountFor(sizeBytes: number): number {
  return Math.min(1000, Math.max(8, Math.round(BYTES_PER_SECTION / sizeBytes)));
}

/** The matrix part: image size × WINDOW, then linear assembly and flat memory. */
export async function matrix(
  plan: BenchPlan,
): Promise<{ lines: string[]; cells: Cell[]; linearity: Cell[]; memory: Cell[] }> {
  const cells: Cell[] = [];
  for (const window of WINDOWS) {
    for (const size of SIZES) {
      cells.push(
        await runSuite(plan.transportNames, `${formatSize(size)} × window ${window}`, {
          IMAGE_SIZE: String(size),
          IMAGE_COUNT: String(imageCountFor(size)),
          WINDOW: String(window),
          REPEAT: String(MATRIX_REPEAT),
          IMAGE_TIMEOUT_MS: '60000',
        }),
      );
    }
  }
  // Linear assembly: MB/s should not fall as images grow (no copy of the whole per chunk).
  const linearity = [
    await runSuite(plan.transportNames, '256 MiB × window 1 (linearity)', {
      IMAGE_SIZE: '256MiB',
      IMAGE_COUNT: '3',
      WARMUP: '1',
      WINDOW: '1',
      REPEAT: '1',
      IMAGE_TIMEOUT_MS: '60000',
    }),
  ];
  // Flat memory: peak RSS must not grow with the number of images, and stays bounded for big ones.
  const memory = [
    await runSuite(plan.transportNames, '1 MB × 100 (memory)', {
      IMAGE_SIZE: '1MB',
      IMAGE_COUNT: '100',
      WINDOW: '16',
      REPEAT: '1',
    }),
    await runSuite(plan.transportNames, '1 MB × 1000 (memory)', {
      IMAGE_SIZE: '1MB',
      IMAGE_COUNT: '1000',
      WINDOW: '16',
      REPEAT: '1',
    }),
    await runSuite(plan.transportNames, '64 MB × window 4 (memory)', {
      IMAGE_SIZE: '64MB',
      IMAGE_COUNT: '6',
      WARMUP: '1',
      WINDOW: '4',
      REPEAT: '1',
      IMAGE_TIMEOUT_MS: '60000',
    }),
  ];
  const sizeRows = plan.transportNames.map((transport) => {
    const at = (cell: Cell | undefined): string =>
      fixed(cell && medianSection(cell.report, transport)?.throughputMBps, 1);
    const bySize = (size: number): Cell | undefined =>
      cells.find((c) => c.report.run.imageSizeBytes === size && c.report.run.window === 1);
    return [transport, at(bySize(4_000_000)), at(bySize(32_000_000)), at(linearity[0])];
  });
  const memoryRows = plan.transportNames.map((transport) => {
    const side = (cell: Cell | undefined, which: 'transmitter' | 'receiver'): string =>
      mib(cell && medianSection(cell.report, transport)?.cost[which]?.peakRssBytes);
    return [
      transport,
      side(memory[0], 'transmitter'),
      side(memory[1], 'transmitter'),
      side(memory[0], 'receiver'),
      side(memory[1], 'receiver'),
      side(memory[2], 'transmitter'),
      side(memory[2], 'receiver'),
    ];
  });
  return {
    cells,
    linearity,
    memory,
    lines: [
      `Matrix: each cell ${MATRIX_REPEAT} interleaved repeats (order rotated), median completed section by ` +
        `total transfer time; MB/s range = min–max across completed repeats.`,
      matrixTable(plan, cells),
      '',
      'Linear assembly, window 1 (MB/s):',
      renderTable(['Transport', '4 MB', '32 MB', '256 MiB'], sizeRows, false),
      '',
      'Peak RSS (MiB) of each side: 1 MB images × 100 vs × 1,000 (window 16), and 64 MB images (window 4; bound ' +
        '6 × 64 MB × 4 = 1,536 MB):',
      renderTable(
        ['Transport', 'TX ×100', 'TX ×1000', 'RX ×100', 'RX ×1000', 'TX 64 MB', 'RX 64 MB'],
        memoryRows,
        false,
      ),
    ],
  };
}
