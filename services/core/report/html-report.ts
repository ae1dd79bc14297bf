import { MIN_SAMPLES_FOR } from '../model/stats.js';
import { TIMING_DEFINITIONS } from './wording.js';
import type { RunReport } from './report.js';
import { chartSpecs } from './html/chart-specs.js';
import { renderCharts } from './html/charts.js';
import { renderCommandSection } from './html/command-table.js';
import { renderDeadlineSection } from './html/deadline-table.js';
import { renderHeader } from './html/header.js';
import { escapeHtml, formatDate, jsonForScript, pageHead, scriptForInline } from './html/page.js';
import { renderTableSection } from './html/summary-table.js';
import { runViewsOf, transportViewsOf, withoutBulk } from './html/views.js';

// report.html: one self-contained page per run (or a before/after pair) with charts, the
// summary table and, when the run had them, the deadline (RATE) and command lane (COMMAND_RATE)
// tables. Pure: the caller reads results.json and the inlined libraries. The page fetches nothing,
// so it opens from file:// on a machine without network, and a strict CSP proves it.
//
// The page carries two JSON blocks: the runs as given less their bulk (per-image records and
// per-second series, which results.json keeps: a day's soak would put megabytes of them in the
// page), and chart specifications computed by html/chart-specs.ts (typed, testable, downsampled for long runs); the
// page's script (assets/report-page/report.js) only turns specifications into Chart.js charts and
// sorts the table. Its size is bounded by the number of transports, not of images or seconds.

/**
 * The element only report.html has (its runs' data): what tells the report from the live page at GET /, whose title
 * starts the same way.
 */
export const REPORT_DATA_ELEMENT = 'id="itb-results"';

/** Sources the page inlines: the chart library and the page's own style and script. */
export interface HtmlReportLibraries {
  /** Chart.js 4's UMD build (defines the global `Chart`). */
  chartJs: string;
  /** The page's style sheet (assets/report-page/report.css). */
  pageCss: string;
  /** The page's script (assets/report-page/report.js): runs after Chart.js and draws from the itb-chart-specs block. */
  pageScript: string;
}

/**
 * report.html for one run, or for two (before, after) overlaid: header, charts, sortable summary
 * table; every script, style and datum inline.
 */
export function renderHtmlReport(runs: readonly RunReport[], libraries: HtmlReportLibraries): string {
  if (runs.length < 1 || runs.length > 2)
    throw new RangeError(`renderHtmlReport takes one run, or two (before, after); got ${runs.length}`);
  const views = runViewsOf(runs);
  const transports = transportViewsOf(views);
  const specs = chartSpecs(views, transports);
  const title =
    views.length === 1
      ? `image-transfer-bench · ${formatDate(views[0]!.report.run.startedAt)}`
      : `image-transfer-bench · before / after`;
  return `${pageHead(title, libraries.pageCss)}
<body>
<main>
${renderHeader(views, transports)}
${renderCharts(views, transports, specs)}
${renderTableSection(views, transports)}
${renderDeadlineSection(views, transports)}
${renderCommandSection(views, transports)}
${renderFootnotes()}
</main>
<script type="application/json" ${REPORT_DATA_ELEMENT}>${jsonForScript(runs.map(withoutBulk))}</script>
<script type="application/json" id="itb-chart-specs">${jsonForScript(specs)}</script>
<script>${scriptForInline(libraries.chartJs)}</script>
<script>${scriptForInline(libraries.pageScript)}</script>
</body>
</html>
`;
}

function renderFootnotes(): string {
  return (
    `<footer class="footnotes">
<p>${TIMING_DEFINITIONS.map(escapeHtml).join('<br>')}</p>
<p>Percentiles come from an HDR histogram (3 significant digits), each only where the sample supports it (p90 ` +
    `from ${MIN_SAMPLES_FOR.p90} times, p99 from ${MIN_SAMPLES_FOR.p99}, p99.9 from ` +
    MIN_SAMPLES_FOR.p999.toLocaleString('en-US') +
    `; with fewer it is the max itself, shown as –); max, mean and standard deviation (in results.json and ` +
    `output.log) from the raw times, the standard deviation being the sample one (n − 1). MB/s counts 10⁶ bytes of ` +
    `intact images per second of total transfer time. This page is self-contained: it loads nothing from any ` +
    `network.</p>
</footer>`
  );
}
