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

/** What the rate charts say of a section's last second, which its end cuts short. */
const PARTIAL_SECOND_NOTE =
  "A section's last second, cut short by its end, is a hollow point at its rate over the part it covered.";

/**
 * The live charts: their canvas name, title, what they show, and whether only an open-loop run (RATE) has them (the
 * script hides them otherwise).
 */
export const LIVE_CHARTS = [
  {
    name: 'live-mbps',
    title: 'Throughput per second',
    note: `MB/s of intact images (10⁶ bytes), by arrival. ${PARTIAL_SECOND_NOTE}`,
  },
  {
    name: 'live-images',
    title: 'Images per second',
    note: `Images that arrived in each second, intact or not. ${PARTIAL_SECOND_NOTE}`,
  },
  {
    name: 'live-frame-age',
    title: 'Frame age per second',
    note:
      "Under RATE, the headline: each frame's age at arrival counted from when it was due, p50 solid, p99 dashed, " +
      'in ms; DEADLINE_MS dotted once the ages come within half of it. Known with its round trip, so a point trails ' +
      'the arrivals by up to a second.',
    openLoop: true,
  },
  {
    name: 'live-one-way',
    title: 'One-way time per second',
    note:
      'p50 solid, p99 dashed (p99 only in seconds of 100 images or more), in ms. Under RATE, the time on the link: ' +
      'from the stamp taken as each frame is handed to it, after any wait for its turn.',
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

/** A column of a live table: the key the script finds it by, its heading, and how its cells read. */
export interface LiveColumn {
  key: string;
  title: string;
  /** Left-aligned text rather than a figure. */
  text?: boolean;
  /** Shown only in an open-loop run (RATE): the script hides it otherwise. */
  openLoop?: boolean;
  /** Its heading in an open-loop run, where it differs. */
  openLoopTitle?: string;
}

/** The columns of the sections table, in order; the script fills one row per section of the run. */
export const LIVE_SECTION_COLUMNS: readonly LiveColumn[] = [
  { key: 'transport', title: 'Transport', text: true },
  { key: 'repeat', title: 'Repeat', text: true },
  { key: 'state', title: 'State', text: true },
  { key: 'progress', title: 'Progress' },
  { key: 'eta', title: 'ETA' },
  { key: 'mbps', title: 'MB/s' },
  { key: 'images', title: 'Images/s' },
  { key: 'ageP50', title: 'Frame age p50', openLoop: true },
  { key: 'ageP99', title: 'Frame age p99', openLoop: true },
  { key: 'p50', title: 'One-way p50', openLoopTitle: 'On the link p50' },
  { key: 'p99', title: 'One-way p99', openLoopTitle: 'On the link p99' },
  { key: 'rttP99', title: 'Round-trip p99' },
  { key: 'late', title: 'Late', openLoop: true },
  { key: 'veryLate', title: 'Over 3 intervals', openLoop: true },
  { key: 'gap', title: 'Longest gap', openLoop: true },
  { key: 'jitter', title: 'Jitter p99', openLoop: true },
  { key: 'lost', title: 'Lost' },
  { key: 'corrupt', title: 'Corrupt' },
  { key: 'verdict', title: 'Verdict', text: true },
];

/** The columns of the command lane's table (COMMAND_RATE): one row per section whose end carried its lane. */
export const LIVE_COMMAND_COLUMNS: readonly LiveColumn[] = [
  { key: 'transport', title: 'Transport', text: true },
  { key: 'repeat', title: 'Repeat', text: true },
  { key: 'lane', title: 'Lane', text: true },
  { key: 'aloneP50', title: 'Alone p50' },
  { key: 'aloneP99', title: 'Alone p99' },
  { key: 'besideP50', title: 'Beside p50' },
  { key: 'besideP99', title: 'Beside p99' },
  { key: 'rttP50', title: 'Round trip p50' },
  { key: 'rttP99', title: 'Round trip p99' },
  { key: 'factor', title: '× p50' },
  { key: 'unacked', title: 'Unacked' },
  { key: 'corrupt', title: 'Corrupt' },
];

/** The text the page shows until the first run's events come (and without script). */
export const LIVE_WAITING_TEXT =
  'No run has finished yet: waiting for a run to start. This page shows it as it goes, then its report.';

function renderChart(chart: (typeof LIVE_CHARTS)[number]): string {
  const openLoop = 'openLoop' in chart ? ' data-open-loop' : '';
  return `<figure class="card chart-card chart-live"${openLoop}>
<figcaption><h3>${escapeHtml(chart.title)}</h3><p class="note">${escapeHtml(chart.note)}</p></figcaption>
<div class="chart-box"><canvas data-chart="${chart.name}"></canvas></div>
</figure>`;
}

// A table's head: each heading with the key the script finds its column by, and what it needs to know of it.
function renderHead(columns: readonly LiveColumn[]): string {
  return columns
    .map((column) => {
      const attributes = [
        column.text === true ? ' class="text"' : '',
        ` data-column="${escapeHtml(column.key)}"`,
        column.openLoop === true ? ' data-open-loop' : '',
        column.openLoopTitle === undefined ? '' : ` data-open-loop-title="${escapeHtml(column.openLoopTitle)}"`,
      ].join('');
      return `<th${attributes}>${escapeHtml(column.title)}</th>`;
    })
    .join('');
}

/** The live page: the same for every run and before any; the script does the rest. */
export function renderLivePage(libraries: LivePageLibraries): string {
  const head = renderHead(LIVE_SECTION_COLUMNS);
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
<p class="note" data-open-loop>Under RATE, a frame's age counts from when it was due; on the link, from when it was ` +
    `handed to the link. Late: older than DEADLINE_MS at arrival; over 3 intervals: older than three frame ` +
    `intervals; jitter: |gap − interval| between consecutive arrivals. Counts so far, final at the section's end.</p>
</section>
<section class="card summary" id="live-commands-card" hidden>
<h2>Command lane</h2>
<p class="note">Each section's commands (COMMAND_RATE) at its end, one-way times in ms: alone with no image in ` +
    `flight, then beside the images; × p50: beside's one-way p50 over alone's; lane "behind": a frame is written ` +
    `whole, so a command waits behind the image being written; "beside": its own stream, interleaved.</p>
<div class="table-scroll"><table class="summary-table" id="live-commands"><thead><tr>` +
    `${renderHead(LIVE_COMMAND_COLUMNS)}</tr></thead><tbody></tbody></table></div>
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
  const edits = followingReportEdits(followScript);
  const cspAt = reportHtml.indexOf(edits.policy);
  const bodyEndAt = reportHtml.lastIndexOf(edits.bodyEnd);
  if (cspAt < 0 || bodyEndAt < cspAt) return reportHtml;
  return (
    reportHtml.slice(0, cspAt) +
    edits.livePolicy +
    reportHtml.slice(cspAt + edits.policy.length, bodyEndAt) +
    edits.beforeBodyEnd +
    reportHtml.slice(bodyEndAt)
  );
}

/**
 * What {@link followingReport} changes, for a server that streams report.html from its file: the first `policy`
 * becomes `livePolicy`, and `beforeBodyEnd` goes before the last `bodyEnd`.
 */
export function followingReportEdits(followScript: string): {
  policy: string;
  livePolicy: string;
  bodyEnd: string;
  beforeBodyEnd: string;
} {
  return {
    policy: `content="${escapeHtml(HTML_REPORT_CSP)}"`,
    livePolicy: `content="${escapeHtml(LIVE_PAGE_CSP)}"`,
    bodyEnd: '</body>',
    beforeBodyEnd: `<script>${scriptForInline(followScript)}</script>\n`,
  };
}
