import { renderTable } from '../../services/core/report/text/format.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { formatSize } from '../../services/core/config/size.js';
import { transportByName } from '../../services/transports/index.js';
import type { SweepChart } from '../lib/sweep-page.js';
import { fixed, median } from './format.js';
import type { BenchPlan } from './plan.js';
import { medianSection, rotated, runSuite, type Cell } from './suite.js';

// The clients part: latency and per-client fairness against CLIENTS.

/**
 * The clients sweep: 64 KB images at WINDOW=1 per client, IMAGE_COUNT a multiple of the largest
 * CLIENTS so every client carries images; rounds interleaved, the order of the counts rotated.
 */
const CLIENT_SWEEP = { clients: [1, 10, 50, 200], bytes: 64_000, count: 4000, window: 1, warmup: 400, rounds: 2 };

// Several clients: websocket-push takes one (its receiver dials back once).
/** Of `transportNames`, those that take several clients. */
export const multiClientTransports = (transportNames: readonly string[]): string[] =>
  transportNames.filter((name) => transportByName(name).traits.maxClients === undefined);

/** The clients part: latency and per-client fairness against CLIENTS, rounds interleaved. */
export async function clientSweep(plan: BenchPlan): Promise<{ lines: string[]; cells: Cell[]; chart: SweepChart }> {
  const cells: Cell[] = [];
  const names = multiClientTransports(plan.transportNames);
  for (let round = 0; round < CLIENT_SWEEP.rounds; round++) {
    for (const clients of rotated(CLIENT_SWEEP.clients, round)) {
      cells.push(
        await runSuite(plan.transportNames, `clients ${clients}, round ${round + 1}`, {
          TRANSPORTS: names.join(','),
          CLIENTS: String(clients),
          IMAGE_SIZE: String(CLIENT_SWEEP.bytes),
          IMAGE_COUNT: String(CLIENT_SWEEP.count),
          WINDOW: String(CLIENT_SWEEP.window),
          WARMUP: String(CLIENT_SWEEP.warmup),
        }),
      );
    }
  }
  // Per transport and client count: the median over the rounds of each figure.
  const figure = (
    transport: string,
    clients: number,
    of: (s: SectionResult) => number | null | undefined,
  ): number | null =>
    median(
      cells
        .filter((c) => c.env.CLIENTS === String(clients))
        .flatMap((c) => {
          const section = medianSection(c.report, transport);
          const value = section === undefined ? undefined : of(section);
          return value === null || value === undefined ? [] : [value];
        }),
    );
  const rows = names.flatMap((transport) =>
    CLIENT_SWEEP.clients.map((clients) => [
      transportByName(transport).label,
      String(clients),
      fixed(
        figure(transport, clients, (s) => s.latency?.p50Ms),
        3,
      ),
      fixed(
        figure(transport, clients, (s) => s.latency?.p99Ms),
        3,
      ),
      fixed(
        figure(transport, clients, (s) => s.rtt?.p99Ms),
        3,
      ),
      fixed(
        figure(transport, clients, (s) => s.throughputMBps),
        1,
      ),
      fixed(
        figure(transport, clients, (s) => s.clientFairness?.slowestMBps),
        2,
      ),
      fixed(
        figure(transport, clients, (s) => s.clientFairness?.fastestMBps),
        2,
      ),
      fixed(
        figure(transport, clients, (s) => s.clientFairness?.jainIndex),
        3,
      ),
    ]),
  );
  const note =
    `${formatSize(CLIENT_SWEEP.bytes)} × ${CLIENT_SWEEP.count} images per section after ${CLIENT_SWEEP.warmup} ` +
    `untimed, WINDOW=${CLIENT_SWEEP.window} per client, the images dealt to whichever client has room; median ` +
    `of ${CLIENT_SWEEP.rounds} interleaved rounds.`;
  return {
    cells,
    chart: {
      id: 'latency-vs-clients',
      title: 'p99 one-way latency against clients',
      note,
      xLabel: 'CLIENTS (connections, each with its own window)',
      yLabel: 'p99 one-way ms',
      series: names.map((transport) => ({
        label: transportByName(transport).label,
        points: CLIENT_SWEEP.clients.map((clients) => ({
          x: clients,
          y: figure(transport, clients, (s) => s.latency?.p99Ms),
        })),
      })),
    },
    lines: [
      `Clients: ${note}`,
      renderTable(
        [
          'Transport',
          'clients',
          'p50 ms',
          'p99 ms',
          'RTT p99 ms',
          'MB/s',
          'slowest client MB/s',
          'fastest client MB/s',
          'Jain',
        ],
        rows,
        false,
      ),
    ],
  };
}
