import { describe, expect, it } from 'vitest';
import {
  LIVE_CHARTS,
  LIVE_COMMAND_COLUMNS,
  LIVE_PAGE_CSP,
  LIVE_SECTION_COLUMNS,
  LIVE_WAITING_TEXT,
  followingReport,
  renderLivePage,
} from '../../services/core/report/live-page.js';
import { HTML_REPORT_CSP, pageHead } from '../../services/core/report/html/page.js';
import { livePageLibraries } from '../../services/shared/report-assets.js';

// The live page's shell (GET / during a run): what it inlines, its policy, and the places its
// script fills. Stand-in sources make the order and the escaping visible.

const STAND_INS = {
  chartJs: 'CHART("</script>")',
  pageCss: 'body{x:"</style>"}',
  liveScript: 'LIVE()',
  followScript: 'FOLLOW()',
};

describe('renderLivePage', () => {
  const html = renderLivePage(STAND_INS);

  it("allows report.html's sources plus connections to this receiver only", () => {
    expect(LIVE_PAGE_CSP).toBe(
      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; base-uri 'none'; " +
        "form-action 'none'; connect-src 'self'",
    );
    expect(html).toContain(
      `<meta http-equiv="Content-Security-Policy" content="${LIVE_PAGE_CSP.replace(/'/g, '&#39;')}">`,
    );
  });

  it('never reloads itself by a meta refresh', () => {
    expect(html).not.toContain('http-equiv="refresh"');
  });

  it('inlines the style, the colours, Chart.js and then its own script, each made inert', () => {
    expect(html).toContain('<style>body{x:"<\\/style>"}</style>');
    const scripts = [...html.matchAll(/<script[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
    expect(scripts).toEqual([
      '{"transports":["#4e79a7","#f28e2b","#59a14f","#b07aa1","#76b7b2","#edc948","#9c755f","#ff9da7","#2c5f8a",' +
        '"#a0522d","#3d7a36","#17becf","#8c6d31"],"baseline":"#6f7782"}',
      'CHART("<\\/script>")',
      'LIVE()',
    ]);
  });

  it('has a canvas per live chart, the sections table head, and the waiting text', () => {
    expect([...html.matchAll(/<canvas data-chart="([^"]+)">/g)].map((m) => m[1])).toEqual(
      LIVE_CHARTS.map((c) => c.name),
    );
    expect(LIVE_CHARTS.map((c) => c.name)).toEqual([
      'live-mbps',
      'live-images',
      'live-frame-age',
      'live-one-way',
      'live-round-trip',
      'live-cpu',
      'live-rss',
    ]);
    // Only the frame-age chart waits for an open-loop run; the rate charts say how a partial last second looks.
    expect(
      [...html.matchAll(/<figure class="card chart-card chart-live"( data-open-loop)?>/g)].map((m) => !!m[1]),
    ).toEqual([false, false, true, false, false, false, false]);
    expect(LIVE_CHARTS[0]!.note).toContain('last second, cut short by its end, is a hollow point');
    expect(html).toContain(
      '<thead><tr><th class="text" data-column="transport">Transport</th>' +
        '<th class="text" data-column="repeat">Repeat</th><th class="text" data-column="state">State</th>' +
        '<th data-column="progress">Progress</th><th data-column="eta">ETA</th><th data-column="mbps">MB/s</th>' +
        '<th data-column="images">Images/s</th>' +
        '<th data-column="ageP50" data-open-loop>Frame age p50</th>' +
        '<th data-column="ageP99" data-open-loop>Frame age p99</th>' +
        '<th data-column="p50" data-open-loop-title="On the link p50">One-way p50</th>' +
        '<th data-column="p99" data-open-loop-title="On the link p99">One-way p99</th>' +
        '<th data-column="rttP99">Round-trip p99</th>' +
        '<th data-column="late" data-open-loop>Late</th>' +
        '<th data-column="veryLate" data-open-loop>Over 3 intervals</th>' +
        '<th data-column="gap" data-open-loop>Longest gap</th>' +
        '<th data-column="jitter" data-open-loop>Jitter p99</th>' +
        '<th data-column="lost">Lost</th><th data-column="corrupt">Corrupt</th>' +
        '<th class="text" data-column="verdict">Verdict</th></tr></thead><tbody></tbody>',
    );
    expect(LIVE_SECTION_COLUMNS).toHaveLength(19);
    // Every column's key is one the script can find it by: unique within its table.
    for (const columns of [LIVE_SECTION_COLUMNS, LIVE_COMMAND_COLUMNS])
      expect(new Set(columns.map((c) => c.key)).size).toBe(columns.length);
    // The command lane's table is there, hidden until a section's end carries a lane.
    expect(html).toContain('<section class="card summary" id="live-commands-card" hidden>');
    expect(html).toMatch(
      /<table class="summary-table" id="live-commands"><thead><tr><th class="text" data-column="transport">/,
    );
    expect(html).toContain(`<p class="subtitle" id="live-status">${LIVE_WAITING_TEXT}</p>`);
    expect(html).toContain('Round trips come from the transmitter in batches each second');
    expect(html).toContain('<p class="subtitle" id="live-clock"></p>');
  });
});

describe('the live script as shipped (assets/report-page/live.js)', () => {
  const { liveScript } = livePageLibraries();

  it('opens its EventSource in one place, on GET /events of this receiver, from the last event it has', () => {
    expect(liveScript.match(/new EventSource\(/g)).toEqual(['new EventSource(']);
    expect(liveScript).toContain("var url = '/events' + (lastEventId !== '' ? '?lastEventId=' +");
  });

  it('writes no HTML from strings: event text goes in by textContent', () => {
    expect(liveScript).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it("finds every column it fills by its heading's key, and draws the frame-age chart", () => {
    const used = new Set([...liveScript.matchAll(/\bCOLUMN\.(\w+)/g)].map((m) => m[1]));
    const usedCommands = new Set([...liveScript.matchAll(/\bat\.(\w+)/g)].map((m) => m[1]));
    expect([...used].filter((k) => !LIVE_SECTION_COLUMNS.some((c) => c.key === k))).toEqual([]);
    expect([...usedCommands].filter((k) => !LIVE_COMMAND_COLUMNS.some((c) => c.key === k))).toEqual([]);
    expect(used.size).toBe(LIVE_SECTION_COLUMNS.length);
    for (const chart of LIVE_CHARTS) expect(liveScript).toContain(`lineChart('${chart.name}'`);
  });
});

describe('followingReport (the last report as GET / serves it)', () => {
  const report = renderHtmlReportStandIn();

  it("adds the follow script before the body's end and widens the CSP by connect-src 'self' only", () => {
    const served = followingReport(report, 'FOLLOW("</script>")');
    expect(served).toBe(
      report
        .replace(
          `content="${HTML_REPORT_CSP.replace(/'/g, '&#39;')}"`,
          `content="${LIVE_PAGE_CSP.replace(/'/g, '&#39;')}"`,
        )
        .replace('</body>', '<script>FOLLOW("<\\/script>")</script>\n</body>'),
    );
    expect(served).not.toBe(report);
  });

  it('leaves a page without the expected CSP or body end as it is', () => {
    expect(followingReport(report.replace('</body>', ''), 'FOLLOW()')).toBe(report.replace('</body>', ''));
    const otherCsp = report.replace('form-action &#39;none&#39;', 'form-action &#39;self&#39;');
    expect(otherCsp).not.toBe(report);
    expect(followingReport(otherCsp, 'FOLLOW()')).toBe(otherCsp);
  });

  it('ships a follow script that asks GET /progress and reloads only when a run is in progress', () => {
    const { followScript } = livePageLibraries();
    expect(followScript).toContain("fetch('/progress'");
    expect(followScript).toMatch(/progress\.inProgress === true\) location\.reload\(\)/);
    expect(followScript).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });
});

/** A page as report.html starts and ends: the shared head (report.html's CSP), a body, its end. */
function renderHtmlReportStandIn(): string {
  return `${pageHead('image-transfer-bench report', 'body{}')}\n<body><main>report</main>\n</body>\n</html>\n`;
}
