import { BASELINE_COLOR, TRANSPORT_COLORS } from './html/views.js';
import { escapeHtml, HTML_REPORT_CSP, jsonForScript, pageHead, scriptForInline } from './html/page.js';

// The receiver's GET / while a run is open, and before any run: a shell in report.html's look (its
// style sheet, Chart.js inlined, nothing loaded from any network) that its own script
// (assets/report-page/live.js) fills from one EventSource('/events'). The shell holds no figure:
// every figure comes from the events, and the script writes event text with textContent only.
// When the run ends the script reloads the page, and GET / then serves that run's report. Pure:
// the caller reads the inlined sources (services/shared/report-assets.ts).

/**
 * report.html's policy plus `connect-src 'self'`: EventSource is a fetch, which `default-src 'none'` would refuse;
 * it may reach this receiver only, and nothing else may load.
 */
export const LIVE_PAGE_CSP = `${HTML_REPORT_CSP}; connect-src 'self'`;

/** What the live page inlines: Chart.js, report.html's style sheet, and the page's own script. */
export interface LivePageLibraries {
  /** Chart.js 4's UMD build (defines the global `Chart`). */
  chartJs: string;
  /** report.html's style sheet (assets/report-page/report.css), light and dark. */
  pageCss: string;
  /** The page's script (assets/report-page/live.js): opens GET /events and draws what it hears. */
  liveScript: string;
  /** The script added to the report served at GET / (assets/report-page/follow.js): it follows the next run. */
  followScript: string;
}

/** The live charts: their canvas name, title, and what they show. */
export const LIVE_CHARTS = [
  { name: 'live-mbps', title: 'Throughput per second', note: 'MB/s of intact images (10⁶ bytes), by arrival.' },
  { name: 'live-images', title: 'Images per second', note: 'Images that arrived in each second, intact or not.' },
  {
    name: 'live-one-way',
    title: 'One-way time per second',
    note: 'p50 solid, p99 dashed (p99 only in seconds of 100 images or more), in ms.',
  },
  {
    name: 'live-round-trip',
    title: 'Round trip per second',
    note:
      'p50 solid, p99 dashed, in ms: stamp to ack on the transmitter, shipped to the receiver each second, so a ' +
      'point trails the one-way time by up to a second.',
  },
  {
    name: 'live-cpu',
    title: 'CPU of each side',
    note:
      'CPU time (user + system) per second of wall clock, in ms: receiver solid, transmitter dashed, broker dotted ' +
      '(where the transport has one and it can be read).',
  },
  {
    name: 'live-rss',
    title: 'Memory of each side',
    note: 'Resident set size in MiB: receiver solid, transmitter dashed, broker dotted.',
  },
] as const;

/** The columns of the sections table, in order; the script fills one row per section of the run. */
export const LIVE_SECTION_COLUMNS = [
  'Transport',
  'Repeat',
  'State',
  'Progress',
  'ETA',
  'MB/s',
  'Images/s',
  'One-way p50',
  'One-way p99',
  'Round-trip p99',
  'Lost',
  'Corrupt',
  'Verdict',
] as const;

/** The text the page shows until the first run's events come (and without script). */
export const LIVE_WAITING_TEXT =
  'No run has finished yet: waiting for a run to start. This page shows it as it goes, then its report.';

function renderChart(chart: (typeof LIVE_CHARTS)[number]): string {
  return `<figure class="card chart-card chart-live">
<figcaption><h3>${escapeHtml(chart.title)}</h3><p class="note">${escapeHtml(chart.note)}</p></figcaption>
<div class="chart-box"><canvas data-chart="${chart.name}"></canvas></div>
</figure>`;
}

/** The live page: the same for every run and before any; the script does the rest. */
export function renderLivePage(libraries: LivePageLibraries): string {
  const textColumns = new Set<string>(['Transport', 'Repeat', 'State', 'Verdict']);
  const head = LIVE_SECTION_COLUMNS.map(
    (column) => `<th${textColumns.has(column) ? ' class="text"' : ''}>${escapeHtml(column)}</th>`,
  ).join('');
  return (
    `${pageHead('image-transfer-bench · live', libraries.pageCss, LIVE_PAGE_CSP)}
<body>
<main id="live-dashboard">
<header class="card">
<h1>image-transfer-bench · live</h1>
<p class="subtitle" id="live-status">${escapeHtml(LIVE_WAITING_TEXT)}</p>
<p class="subtitle" id="live-settings"></p>
<p class="subtitle" id="live-clock"></p>
</header>
<section class="card summary">
<h2>Sections</h2>
<p class="note">Each section's progress and ETA as its seconds close; its verdict when it ends. Round trips ` +
    `come from the transmitter in batches each second, so they trail the one-way times by up to a second.</p>
<div class="table-scroll"><table class="summary-table" id="live-sections"><thead><tr>${head}</tr></thead>` +
    `<tbody></tbody></table></div>
</section>
<section class="charts">
<h2>Per second</h2>
<p class="note">One line per transport (and repeat), over the seconds of its measured span.</p>
<div class="chart-grid">
${LIVE_CHARTS.map(renderChart).join('\n')}
</div>
</section>
<footer class="footnotes"><p>This page loads nothing from any network: its only connection is GET /events on ` +
    `this receiver. When the run ends it becomes the run's report.</p></footer>
</main>
<script type="application/json" id="itb-live-colors">${jsonForScript({
      transports: TRANSPORT_COLORS,
      baseline: BASELINE_COLOR,
    })}</script>
<script>${scriptForInline(libraries.chartJs)}</script>
<script>${scriptForInline(libraries.liveScript)}</script>
</body>
</html>
`
  );
}

/**
 * The last run's report as GET / serves it: report.html with `followScript` added and its CSP widened by the live
 * page's `connect-src 'self'` alone, so a page left open on it turns into the next run's live page. The file on disk
 * stays as written; a report without the expected CSP or body end (another version's) is served unchanged.
 */
export function followingReport(reportHtml: string, followScript: string): string {
  const csp = `content="${escapeHtml(HTML_REPORT_CSP)}"`;
  const cspAt = reportHtml.indexOf(csp);
  const bodyEndAt = reportHtml.lastIndexOf('</body>');
  if (cspAt < 0 || bodyEndAt < cspAt) return reportHtml;
  return (
    reportHtml.slice(0, cspAt) +
    `content="${escapeHtml(LIVE_PAGE_CSP)}"` +
    reportHtml.slice(cspAt + csp.length, bodyEndAt) +
    `<script>${scriptForInline(followScript)}</script>\n` +
    reportHtml.slice(bodyEndAt)
  );
}
