import { escapeHtml, jsonForScript, pageHead, scriptForInline } from '../../services/core/report/html/page.js';

// The bench's charts drawn as one self-contained HTML page (Chart.js inlined, as report.html does):
// each transport beside its library's ceiling (bars), latency against clients and against offered
// load, the soak's RSS against images (lines); and tables (the capacity part's). Pure: the libraries' sources are
// given.

/** One line of a chart: a transport's points. */
export interface SweepSeries {
  label: string;
  points: { x: number; y: number | null }[];
}

/** One card of the page: a sweep (lines over a log x axis), bars by category (SweepBars), or a table (SweepTable). */
export type BenchChart = SweepChart | SweepBars | SweepTable;

/** A table, as the terminal prints it: its cells are text, drawn as they are (no chart). */
export interface SweepTable {
  kind: 'table';
  id: string;
  title: string;
  note: string;
  header: readonly string[];
  rows: readonly (readonly string[])[];
}

/** Bars: one group per category (a transport), one bar per series in it (ours, its ceiling). */
export interface SweepBars {
  kind: 'bars';
  id: string;
  title: string;
  note: string;
  yLabel: string;
  categories: string[];
  series: { label: string; values: (number | null)[] }[];
}

/** A sweep: one line per series over a log-scaled x. */
export interface SweepChart {
  kind?: 'lines';
  id: string;
  title: string;
  /** What the chart shows and how it was measured, under its title. */
  note: string;
  xLabel: string;
  yLabel: string;
  series: SweepSeries[];
  /** Both axes' scale: logarithmic unless said (clients and rates span decades); linear for RSS against images. */
  scale?: 'log' | 'linear';
}

// Draws every chart from the JSON block: bars by category on a linear axis; lines, one per series,
// on log-scaled axes (clients and rates span decades) unless the chart asks for linear ones.
const DRAW_SCRIPT =
  `
const charts = JSON.parse(document.getElementById('itb-sweeps').textContent);
const colours = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', ` +
  `'#17becf', '#393b79', '#637939', '#843c39'];
window.__charts = {};
for (const chart of charts) {
  const canvas = document.querySelector('canvas[data-chart="' + chart.id + '"]');
  if (chart.kind === 'bars') {
    window.__charts[chart.id] = new Chart(canvas, {
      type: 'bar',
      data: { labels: chart.categories, datasets: chart.series.map((s, i) => ({ label: s.label, data: s.values, ` +
  `backgroundColor: colours[i % colours.length] })) },
      options: { animation: false, scales: { y: { beginAtZero: true, title: { display: true, text: chart.yLabel } } } },
    });
    continue;
  }
  const axis = chart.scale === 'linear' ? 'linear' : 'logarithmic';
  window.__charts[chart.id] = new Chart(canvas, {
    type: 'line',
    data: { datasets: chart.series.map((s, i) => ({ label: s.label, data: s.points, borderColor: colours[i % ` +
  `colours.length], backgroundColor: colours[i % colours.length], spanGaps: false })) },
    options: { animation: false, parsing: false, scales: { x: { type: axis, title: { display: true, text: ` +
  `chart.xLabel } }, y: { type: axis, title: { display: true, text: chart.yLabel } } } },
  });
}
`;

/** A table card's table, in the report's summary-table style (the first column text, the rest as right-aligned). */
function tableHtml(table: SweepTable): string {
  const cell = (tag: 'th' | 'td', text: string, col: number) =>
    `<${tag}${col === 0 ? ' class="text"' : ''}>${escapeHtml(text)}</${tag}>`;
  const head = table.header.map((h, col) => cell('th', h, col)).join('');
  const body = table.rows.map((row) => `<tr>${row.map((text, col) => cell('td', text, col)).join('')}</tr>`).join('\n');
  return (
    `<div class="table-scroll"><table class="summary-table" data-table="${escapeHtml(table.id)}"><thead><tr>${head}` +
    `</tr></thead>\n<tbody>\n${body}\n</tbody></table></div>`
  );
}

/** The page: a title, then one card per chart or table. */
export function renderSweepPage(
  title: string,
  charts: readonly BenchChart[],
  libraries: { chartJs: string; pageCss: string },
): string {
  const cards = charts
    .map(
      (c) =>
        `<section class="card"><h2>${escapeHtml(c.title)}</h2><p class="note">${escapeHtml(c.note)}</p>` +
        (c.kind === 'table'
          ? tableHtml(c)
          : `<canvas data-chart="${escapeHtml(c.id)}" aria-label="${escapeHtml(c.title)}"></canvas>`) +
        '</section>',
    )
    .join('\n');
  // Tables are drawn here: the page script gets only what Chart.js draws.
  const drawn = charts.filter((c) => c.kind !== 'table');
  return `${pageHead(title, libraries.pageCss)}
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${cards}
</main>
<script type="application/json" id="itb-sweeps">${jsonForScript(drawn)}</script>
<script>${scriptForInline(libraries.chartJs)}</script>
<script>${scriptForInline(DRAW_SCRIPT)}</script>
</body>
</html>
`;
}
