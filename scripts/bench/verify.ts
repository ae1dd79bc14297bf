import { renderTable } from '../../services/core/report/text/format.js';
import { formatSize } from '../../services/core/config/size.js';
import { fixed, median } from './format.js';
import type { BenchPlan } from './plan.js';
import { hashLines, measureHashes, type HashFigures } from './hash.js';
import { ASSET_BYTES, medianSection, runSuite, type Cell } from './suite.js';

// The verify part: the checksum candidates' own speed, then what VERIFY=false changes in MB/s, in interleaved pairs.

/** Image sizes the checksum candidates are measured at: 1 KB and the asset's. */
const CHECKSUM_SIZES = [1000, ASSET_BYTES];
const VERIFY = { transports: ['tcp', 'zeromq'], window: 16, warmup: 100, count: 2000, pairs: 5 };

/**
 * The verify part: the checksum candidates measured in this process, then VERIFY=true against VERIFY=false in
 * interleaved pairs, and the change in MB/s per pair.
 */
export async function verifyCost(
  plan: BenchPlan,
): Promise<{ lines: string[]; cells: Cell[]; checksums: { imageBytes: number; figures: HashFigures[] }[] }> {
  // Before the suite runs, while nothing else runs: the candidates' figures are this process's alone.
  // The two image sizes the ceiling part compares at: a candidate faster on one may be slower on the other.
  const checksums = CHECKSUM_SIZES.map((imageBytes) => ({ imageBytes, figures: measureHashes(imageBytes) }));
  const cells: Cell[] = [];
  const changes = new Map<string, number[]>(VERIFY.transports.map((t) => [t, []]));
  for (let pair = 1; pair <= VERIFY.pairs; pair++) {
    // Interleaved, the order swapped every pair, so drift hits both settings alike.
    const order = pair % 2 === 1 ? ['true', 'false'] : ['false', 'true'];
    const runs: Record<string, Cell> = {};
    for (const verify of order) {
      runs[verify] = await runSuite(plan.transportNames, `verify pair ${pair}, VERIFY=${verify}`, {
        TRANSPORTS: VERIFY.transports.join(','),
        IMAGE_SIZE: String(ASSET_BYTES),
        IMAGE_COUNT: String(VERIFY.count),
        WARMUP: String(VERIFY.warmup),
        WINDOW: String(VERIFY.window),
        REPEAT: '1',
        VERIFY: verify,
      });
      cells.push(runs[verify]!);
    }
    for (const transport of VERIFY.transports) {
      const on = medianSection(runs.true!.report, transport)?.throughputMBps;
      const off = medianSection(runs.false!.report, transport)?.throughputMBps;
      if (on != null && off != null) changes.get(transport)!.push((100 * (off - on)) / on);
    }
  }
  const rows = VERIFY.transports.map((transport) => {
    const own = changes.get(transport)!;
    const mbps = (verify: string): number[] =>
      cells
        .filter((c) => c.env.VERIFY === verify)
        .flatMap((c) => medianSection(c.report, transport)?.throughputMBps ?? []);
    const verifyMs = cells
      .filter((c) => c.env.VERIFY === 'true')
      .flatMap((c) => medianSection(c.report, transport)?.verifyMs ?? []);
    return [
      transport,
      fixed(median(mbps('true')), 1),
      fixed(median(mbps('false')), 1),
      own.map((c) => `${c >= 0 ? '+' : ''}${c.toFixed(1)}`).join(' '),
      `${fixed(median(own), 1)} %`,
      fixed(median(verifyMs.map((ms) => ms / VERIFY.count)), 3),
    ];
  });
  return {
    cells,
    checksums,
    lines: [
      ...checksums.flatMap(({ imageBytes, figures }) => [...hashLines(imageBytes, figures), '']),
      `What verification costs: ${VERIFY.transports.join(' and ')}, ${formatSize(ASSET_BYTES)} × ${VERIFY.count}` +
        ` after ${VERIFY.warmup} untimed, WINDOW=${VERIFY.window}; ${VERIFY.pairs} interleaved pairs. Change = ` +
        `MB/s with VERIFY=false over MB/s with VERIFY=true, per pair.`,
      renderTable(
        ['Transport', 'MB/s verify on', 'MB/s verify off', 'change per pair %', 'median change', 'hash ms/img'],
        rows,
        false,
      ),
    ],
  };
}
