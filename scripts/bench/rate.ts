import { renderTable } from '../../services/core/report/text/format.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { formatSize } from '../../services/core/config/size.js';
import { transportByName } from '../../services/transports/index.js';
import type { SweepChart } from '../lib/sweep-page.js';
import { fixed } from './format.js';
import type { BenchPlan } from './plan.js';
import { medianSection, runSuite, type Cell } from './suite.js';

// The rate part: an open loop (RATE) from light load to past saturation.

/** The rate sweep: 64 KB images, WINDOW=16 bounding the images in flight, `seconds` of schedule per rate. */
const RATE_SWEEP = {
  rates: [100, 300, 1000, 3000, 10_000, 30_000],
  bytes: 64_000,
  seconds: 2,
  minCount: 200,
  window: 16,
  warmup: 200,
};

/** The rate part: an open loop at each RATE, from light load to past saturation. */
export async function rateSweep(plan: BenchPlan): Promise<{ lines: string[]; cells: Cell[]; charts: SweepChart[] }> {
  const cells: Cell[] = [];
  for (const rate of RATE_SWEEP.rates) {
    const count = Math.max(RATE_SWEEP.minCount, rate * RATE_SWEEP.seconds);
    cells.push(
      await runSuite(plan.transportNames, `RATE ${rate}`, {
        RATE: String(rate),
        IMAGE_SIZE: String(RATE_SWEEP.bytes),
        IMAGE_COUNT: String(count),
        WINDOW: String(RATE_SWEEP.window),
        WARMUP: String(RATE_SWEEP.warmup),
      }),
    );
  }
  const sectionAt = (transport: string, rate: number): SectionResult | undefined => {
    const cell = cells.find((c) => c.env.RATE === String(rate));
    return cell === undefined
      ? undefined
      : (medianSection(cell.report, transport) ?? cell.report.sections.find((s) => s.transport === transport));
  };
  const rows = plan.transportNames.flatMap((transport) =>
    RATE_SWEEP.rates.map((rate) => {
      const s = sectionAt(transport, rate);
      const open = s?.openLoop;
      return [
        transportByName(transport).label,
        String(rate),
        fixed(open?.achievedRatePerSecond, 0),
        fixed(open?.deliveredRatePerSecond, 0),
        open ? (open.overloaded ? 'OVERLOADED' : 'kept up') : '-',
        fixed(open?.sendLag?.p99Ms, 3),
        fixed(open?.latencyFromDue?.p50Ms, 3),
        fixed(open?.latencyFromDue?.p99Ms, 3),
        fixed(s?.latency?.p99Ms, 3),
        s?.ok ? 'ok' : `FAILED${s?.failure ? `: ${s.failure}` : ''}`,
      ];
    }),
  );
  const rateChart = (
    id: string,
    title: string,
    chartNote: string,
    yLabel: string,
    of: (section: SectionResult | undefined) => number | null | undefined,
  ): SweepChart => ({
    id,
    title,
    note: chartNote,
    xLabel: 'RATE, images/s offered',
    yLabel,
    series: plan.transportNames.map((transport) => ({
      label: transportByName(transport).label,
      points: RATE_SWEEP.rates.map((rate) => ({ x: rate, y: of(sectionAt(transport, rate)) ?? null })),
    })),
  });
  const note =
    `${formatSize(RATE_SWEEP.bytes)} images on an open-loop schedule, ${RATE_SWEEP.seconds} s per rate (at ` +
    `least ${RATE_SWEEP.minCount} images) after ${RATE_SWEEP.warmup} untimed, WINDOW=${RATE_SWEEP.window} bounding ` +
    `the images in flight: past saturation the sent and delivered rates stop rising, the images due wait for a ` +
    `window slot and go late (their wait is in the times from due), and the section is OVERLOADED; it then lasts ` +
    `as long as the transport needs, not ${RATE_SWEEP.seconds} s.`;
  return {
    cells,
    charts: [
      rateChart(
        'latency-vs-rate',
        'p99 latency from the due time against offered load',
        note,
        'p99 one-way ms from due time',
        (section) => section?.openLoop?.latencyFromDue?.p99Ms,
      ),
      rateChart(
        'achieved-vs-rate',
        'Achieved rate against offered load',
        'Images per second actually sent (first send to last) against RATE: on the diagonal below saturation, ' +
          'flat past it, where the images that fall due while WINDOW are in flight wait for a slot and go late.',
        'images/s achieved',
        (section) => section?.openLoop?.achievedRatePerSecond,
      ),
    ],
    lines: [
      `Rate: ${note}`,
      renderTable(
        [
          'Transport',
          'RATE/s',
          'sent/s',
          'delivered/s',
          'load',
          'send lag p99',
          'from due p50',
          'from due p99',
          'one-way p99',
          'Result',
        ],
        rows,
      ),
    ],
  };
}
