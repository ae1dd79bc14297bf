import {
  COMPARED_FIGURES,
  COMPARISON_LEGEND,
  changeCell,
  compareRuns,
  describeRun,
  FIGURE_DIGITS,
  FIGURES_NOTE,
  figureValue,
  renderComparison,
  SETTINGS_WARNING,
  settingPairs,
} from './compare.js';
import { escapeHtml, formatDate, pageHead } from './html/page.js';
import type { RunReport } from './report.js';
import type { RunHeadline } from './runs-list.js';
import { sectionTitle } from './wording.js';

// The receiver's GET /runs (the kept runs, newest first, each linking to its report) and
// GET /runs/compare (two of them side by side, with the figures and warnings of `npm run compare`).
// Pure: services/receiver/runs-routes.ts reads the files. Everything from a file is escaped; the
// pages load nothing and run no script (RUNS_PAGE_CSP), in the report's palette, dark when the
// system is.

/** The pages' Content-Security-Policy: no script, nothing loaded; the compare form may only go to this receiver. */
export const RUNS_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'";

/** Where a kept run's files are served, by folder name. */
export const runFileUrl = (folder: string, file: 'report.html' | 'results.json'): string =>
  `/runs/${encodeURIComponent(folder)}/${file}`;

const PAGE_CSS = `
:root { color-scheme: light dark; --ink: #1d2330; --muted: #5d6576; --line: #e3e6ed; --bg: #f4f5f8;
  --card: #ffffff; --ok: #1f7a4d; --ok-bg: #e5f4ec; --bad: #b42318; --bad-bg: #fdecea; --accent: #3f6fb5;
  --warn-bg: #fff8e6; --warn: #7a5200; }
@media (prefers-color-scheme: dark) {
  :root { --ink: #e4e7ee; --muted: #a0a8b8; --line: #343b49; --bg: #161a22; --card: #1f2430; --ok: #6fd39c;
    --ok-bg: #163526; --bad: #ff8a80; --bad-bg: #3d1c1a; --accent: #8ab4f8; --warn-bg: #3a3020; --warn: #f3cf7a; }
}
* { box-sizing: border-box; }
html { background: var(--bg); }
body { margin: 0; color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1320px; margin: 0 auto; padding: 28px 28px 40px; }
h1 { font-size: 24px; margin: 0 0 2px; } h2 { font-size: 17px; margin: 0 0 10px; }
a { color: var(--accent); }
.subtitle, .note { color: var(--muted); margin: 0 0 12px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 16px 18px;
  margin: 0 0 18px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 12px 6px 0; vertical-align: top; border-bottom: 1px solid var(--line); }
thead th { font-size: 11.5px; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted); }
td.number { font-variant-numeric: tabular-nums; white-space: nowrap; }
.ok { color: var(--ok); } .failed { color: var(--bad); font-weight: 600; } .running { color: var(--accent); }
.unreadable { color: var(--bad); }
tr.differs td, tr.differs th { background: var(--warn-bg); }
.warning { background: var(--warn-bg); color: var(--warn); padding: 9px 14px; border-radius: 8px; font-weight: 600; }
.change { display: block; color: var(--muted); font-size: 12.5px; }
ul.settings { margin: 0; padding: 0; list-style: none; } ul.settings li { display: inline; }
ul.settings li + li::before { content: " · "; color: var(--muted); }
form label { margin-right: 14px; } select, button { font: inherit; }
pre { overflow-x: auto; font-size: 12.5px; }
`;

function page(title: string, body: string): string {
  return `${pageHead(title, PAGE_CSS, RUNS_PAGE_CSP)}
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

const STATE_TEXT: Record<RunHeadline['state'], string> = {
  finished: '',
  'in-progress': 'in progress',
  'not-ended': 'never ended: its receiver stopped in it (a receiver starting on this OUTPUT_DIR completes it)',
  unreadable: 'results.json unreadable',
};

/** A run's start as shown, or its folder's name when its results.json does not say. */
const startText = (run: RunHeadline): string => (run.startedAt === null ? run.folder : formatDate(run.startedAt));

function mbpsText(mbps: number | null, indicative: boolean): string {
  return mbps === null ? 'no completed repeat' : `${indicative ? '~' : ''}${mbps.toFixed(1)} MB/s`;
}

function verdictCell(run: RunHeadline): string {
  if (run.state === 'unreadable')
    return `<span class="unreadable">${escapeHtml(STATE_TEXT.unreadable)}: ${escapeHtml(run.problem ?? '')}</span>`;
  if (run.verdict === null) return `<span class="running">${escapeHtml(STATE_TEXT[run.state])}</span>`;
  return `<span class="${run.verdict.ok ? 'ok' : 'failed'}">${escapeHtml(run.verdict.text)}</span>`;
}

function filesCell(run: RunHeadline): string {
  const links = [`<a href="${escapeHtml(runFileUrl(run.folder, 'results.json'))}">results.json</a>`];
  if (run.state === 'finished')
    links.unshift(`<a href="${escapeHtml(runFileUrl(run.folder, 'report.html'))}">report</a>`);
  return links.join(' · ');
}

function runRow(run: RunHeadline): string {
  const transports = run.transports
    .map(
      (t) =>
        `<li><span class="${t.ok ? '' : 'failed'}">${escapeHtml(t.title)}</span> ` +
        `${escapeHtml(mbpsText(t.throughputMBps, t.indicative))}</li>`,
    )
    .join('');
  const settings = run.settings.map((s) => `<li>${escapeHtml(s)}</li>`).join('');
  return (
    `<tr><td>${escapeHtml(startText(run))}<br><span class="note">${escapeHtml(run.folder)}</span></td>` +
    `<td><ul class="settings">${transports}</ul></td><td><ul class="settings">${settings}</ul></td>` +
    `<td>${verdictCell(run)}</td><td>${filesCell(run)}</td></tr>`
  );
}

/** The form choosing two runs to compare: every run whose results.json is readable. */
function compareForm(runs: readonly RunHeadline[], before?: string, after?: string): string {
  const choices = runs.filter((r) => r.state !== 'unreadable');
  if (choices.length < 2) return '<p class="note">Two readable runs are needed for a comparison.</p>';
  const select = (name: string, chosen: string | undefined): string =>
    `<select name="${name}">` +
    choices
      .map(
        (r) =>
          `<option value="${escapeHtml(r.folder)}"${r.folder === chosen ? ' selected' : ''}>` +
          `${escapeHtml(startText(r))} · ${escapeHtml(r.transports.map((t) => t.title).join(', ') || r.folder)}` +
          `</option>`,
      )
      .join('') +
    `</select>`;
  return (
    `<form method="get" action="/runs/compare"><label>Before ${select('a', before ?? choices[1]?.folder)}</label>` +
    `<label>After ${select('b', after ?? choices[0]?.folder)}</label><button type="submit">Compare</button></form>`
  );
}

/** GET /runs: the newest `runs` (at most `limit` of `total` kept), each linking to its report, and the compare form. */
export function renderRunsPage(runs: readonly RunHeadline[], total: number, limit: number): string {
  const shown =
    total > runs.length
      ? `the newest ${runs.length} of ${total} (at most ${limit} are listed)`
      : `${total} run${total === 1 ? '' : 's'}`;
  const table =
    runs.length === 0
      ? '<p>No run is kept in OUTPUT_DIR yet.</p>'
      : `<table><thead><tr><th>Started</th><th>Transports (median MB/s)</th><th>Settings</th><th>Verdict</th>` +
        `<th>Files</th></tr></thead><tbody>${runs.map(runRow).join('\n')}</tbody></table>`;
  return page(
    'image-transfer-bench · runs',
    `<h1>Runs kept in OUTPUT_DIR</h1><p class="subtitle">Newest first: ${escapeHtml(shown)}. MB/s marked ~ is ` +
      `indicative (see a report's notes).</p>
<section class="card"><h2>Compare two runs</h2>${compareForm(runs)}</section>
<section class="card">${table}</section>`,
  );
}

/** A run to compare: its folder and its report (without its bulk). */
export interface ComparedRun {
  folder: string;
  report: RunReport;
}

/** The settings of both runs, those that differ first (marked), with the warning above when any do. */
function settingsSection(before: RunReport, after: RunReport): string {
  const pairs = settingPairs(before, after);
  const differing = pairs.filter((p) => p.before !== p.after);
  const ordered = [...differing, ...pairs.filter((p) => p.before === p.after)];
  const rows = ordered
    .map(
      (p) =>
        `<tr${p.before !== p.after ? ' class="differs"' : ''}><th>${escapeHtml(p.name)}</th>` +
        `<td>${escapeHtml(p.before)}</td><td>${escapeHtml(p.after)}</td></tr>`,
    )
    .join('\n');
  const warning =
    differing.length > 0
      ? `<p class="warning">${escapeHtml(SETTINGS_WARNING)} ` +
        `${differing.map((p) => escapeHtml(p.name)).join(', ')}.</p>`
      : '<p class="note">The runs share every setting compared.</p>';
  return (
    `<section class="card"><h2>Settings</h2>${warning}<table><thead><tr><th>Setting</th><th>Before</th>` +
    `<th>After</th></tr></thead><tbody>${rows}</tbody></table></section>`
  );
}

/** One line per run and transport: before's figures, then after's with each change and its spread mark. */
function figuresSection(before: ComparedRun, after: ComparedRun): string {
  const rows = compareRuns(before.report, after.report);
  const lines = rows.flatMap((row) => {
    const title = escapeHtml(sectionTitle(row));
    const cells = (side: 'before' | 'after'): string =>
      COMPARED_FIGURES.map((figure) => {
        const f = row.figures[figure];
        const digits = FIGURE_DIGITS[figure];
        const change = side === 'after' ? `<span class="change">${escapeHtml(changeCell(f, digits))}</span>` : '';
        return `<td class="number">${escapeHtml(figureValue(f[side], digits))}${change}</td>`;
      }).join('');
    return [
      `<tr><th rowspan="2">${title}</th><td>before · ${escapeHtml(formatDate(before.report.run.startedAt))}</td>` +
        `${cells('before')}<td rowspan="2">${escapeHtml(row.note ?? '')}</td></tr>`,
      `<tr><td>after · ${escapeHtml(formatDate(after.report.run.startedAt))}</td>${cells('after')}</tr>`,
    ];
  });
  return (
    `<section class="card"><h2>Figures</h2><p class="note">${escapeHtml(FIGURES_NOTE)}</p>` +
    `<table><thead><tr><th>Transport</th><th>Run</th><th>p50 ms</th><th>p99 ms</th><th>MB/s</th><th>Note</th>` +
    `</tr></thead><tbody>${lines.join('\n')}</tbody></table>` +
    `<p class="note">${COMPARISON_LEGEND.map(escapeHtml).join('<br>')}</p></section>`
  );
}

/**
 * GET /runs/compare: `before` and `after` side by side, the settings that differ first with the
 * warning of `npm run compare`, then one line per run and transport, and the same comparison as
 * that command prints it; `runs` fill the form to choose two others.
 */
export function renderComparePage(before: ComparedRun, after: ComparedRun, runs: readonly RunHeadline[]): string {
  const runLine = (side: string, run: ComparedRun): string =>
    `<li>${side}: <a href="${escapeHtml(runFileUrl(run.folder, 'report.html'))}">${escapeHtml(run.folder)}</a> · ` +
    `${escapeHtml(describeRun(run.report))}</li>`;
  const text = renderComparison(compareRuns(before.report, after.report), before.report, after.report);
  return page(
    'image-transfer-bench · compare two runs',
    `<h1>Comparing two runs</h1><p class="subtitle"><a href="/runs">All runs</a></p>
<section class="card"><ul>${runLine('Before', before)}${runLine('After', after)}</ul>` +
      `${compareForm(runs, before.folder, after.folder)}</section>
${settingsSection(before.report, after.report)}
${figuresSection(before, after)}
<section class="card"><details><summary>As <code>npm run compare</code> prints it</summary>` +
      `<pre>${escapeHtml(text)}</pre></details></section>`,
  );
}

/** The page when a comparison cannot be made: why, and the form to choose again. */
export function renderCompareRefusal(reason: string, runs: readonly RunHeadline[]): string {
  return page(
    'image-transfer-bench · compare two runs',
    `<h1>Comparing two runs</h1><p class="subtitle"><a href="/runs">All runs</a></p>
<section class="card"><p class="failed">${escapeHtml(reason)}</p>${compareForm(runs)}</section>`,
  );
}
