import { describe, expect, it } from 'vitest';
import { HTML_REPORT_CSP, jsonForScript, renderHtmlReport, scriptForInline } from '../../services/core/html-report.js';
import type { RunReport } from '../../services/core/report.js';
import { fixturePlan, fixtureReport, fixtureSection } from '../helpers/fixtures.js';

// The page as text: what it inlines, what it carries, what it must never contain. The browser
// test (tests/e2e/report-browser.test.ts) draws it.

const FAKE_CHART_JS = '/* fake Chart.js, see https://www.chartjs.org */ var Chart = function () {}; var tag = "</script><b>"; var TAG = "</SCRIPT >"; var comment = "<!--";';

const cost = {
  transmitter: { cpuUserMs: 3, cpuSystemMs: 1, cpuMs: 4, cpuMsPerImage: 2, peakRssBytes: 100 * 1024 * 1024, eventLoopUtilization: 0.5 },
  receiver: { cpuUserMs: 2, cpuSystemMs: 1, cpuMs: 3, cpuMsPerImage: 1.5, peakRssBytes: 80 * 1024 * 1024, eventLoopUtilization: 0.25 },
};

function sampleReport(startedAt = '2026-11-23T08:00:00.000Z'): RunReport {
  return fixtureReport(
    [
      fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [2.413, 1.2, null, 1.9], null, cost),
      fixtureSection(fixturePlan({ transport: 'grpc', label: 'gRPC <&> "quoted"' }), [3.1, 2.9, 3.3, 3.0], null, cost),
      fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }), [null, null, null, null], 'connect ECONNREFUSED 127.0.0.1:7001 </script><img src=x>'),
    ],
    { startedAt },
  );
}

/** The text of the element `<script ... id="id">`, which must be there exactly once. */
function scriptBlock(html: string, id: string): string {
  const matches = [...html.matchAll(new RegExp(`<script type="application/json" id="${id}">([\\s\\S]*?)</script>`, 'g'))];
  expect(matches).toHaveLength(1);
  return matches[0]![1]!;
}

/** The document's <script> elements as the HTML parser ends them: at the first "</script". */
function scriptElements(html: string): string[] {
  return [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script/gi)].map((m) => m[1]!);
}

describe('renderHtmlReport', () => {
  const report = sampleReport();
  const html = renderHtmlReport([report], { chartJs: FAKE_CHART_JS });

  it('is one HTML document with its CSP, nothing loaded from elsewhere', () => {
    expect(html.startsWith('<!DOCTYPE html>\n<html lang="en">')).toBe(true);
    expect(html.match(/<html\b/g)).toHaveLength(1);
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="${HTML_REPORT_CSP.replace(/'/g, '&#39;')}">`);
    expect(HTML_REPORT_CSP).toMatch(/^default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'/);
    expect(html).not.toMatch(/<script[^>]*\bsrc=/i);
    expect(html).not.toMatch(/<link\b/i);
    expect(html).not.toMatch(/@import|url\(/i);
  });

  it('inlines the library, with "</script" and "<!--" escaped inside it', () => {
    const inlined = scriptForInline(FAKE_CHART_JS);
    expect(inlined).toBe('/* fake Chart.js, see https://www.chartjs.org */ var Chart = function () {}; var tag = "<\\/script><b>"; var TAG = "<\\/SCRIPT >"; var comment = "<\\u0021--";');
    expect(html).toContain(`<script>${inlined}</script>`);
    // Escaped, the JavaScript still means the same strings.
    expect(new Function(`${inlined}; return [tag, TAG, comment];`)()).toEqual(['</script><b>', '</SCRIPT >', '<!--']);
    // The library's script element runs to its own end: the parser sees it whole.
    expect(scriptElements(html)).toContain(inlined);
  });

  it('carries the runs as a JSON block that round-trips to the input', () => {
    const block = scriptBlock(html, 'itb-results');
    expect(block).not.toContain('<');
    expect(JSON.parse(block)).toEqual([report]);
    expect(jsonForScript({ text: '</script><!--' })).toBe('{"text":"\\u003c/script>\\u003c!--"}');
  });

  it('has no http(s) URL outside the inlined library', () => {
    const outside = html.replace(scriptForInline(FAKE_CHART_JS), '');
    expect(outside).not.toMatch(/https?:\/\//i);
    expect(html).toMatch(/https:\/\/www\.chartjs\.org/);
  });

  it('gives every chart a canvas with a data-chart name, and a specification for it', () => {
    const names = [...html.matchAll(/<canvas data-chart="([^"]+)"/g)].map((m) => m[1]);
    expect(names).toEqual(['per-image', 'latency-percentiles', 'throughput', 'cpu-per-image', 'peak-rss']);
    const specs = JSON.parse(scriptBlock(html, 'itb-chart-specs')) as { name: string; datasets: { transport?: string; data: unknown[] }[] }[];
    expect(specs.map((s) => s.name)).toEqual(names);
    const perImage = specs[0]!;
    // One line per transport; a lost image is a gap (null), a failed transport has no points.
    expect(perImage.datasets.map((d) => d.transport)).toEqual(['websocket', 'grpc', 'tcp']);
    expect(perImage.datasets[0]!.data).toEqual([
      { x: 1, y: 2.413 },
      { x: 2, y: 1.2 },
      { x: 3, y: null },
      { x: 4, y: 1.9 },
    ]);
    expect(perImage.datasets[2]!.data).toEqual([]);
  });

  it('shows the header facts', () => {
    for (const text of ['2026-11-23 08:00:00 UTC', 'assets/sample.png, 533.0 KiB (545,792 bytes)', 'Images per transport', 'Warm-up', 'Test CPU, 2 cores', 'Node v20.20.2', 'ws 8.23.0 · zeromq 6.8.0']) {
      expect(html).toContain(text);
    }
  });

  it('lists every transport in the table, the failed one marked FAILED with its reason (escaped)', () => {
    const rows = [...html.matchAll(/<tr data-transport="([^"]+)"[^>]*>([\s\S]*?)<\/tr>/g)];
    expect(rows.map((r) => r[1])).toEqual(['websocket', 'grpc', 'tcp']);
    const tcp = rows[2]![0];
    expect(tcp).toContain('class="failed"');
    expect(tcp).toContain('<span class="badge failed">FAILED</span> <span class="reason">connect ECONNREFUSED 127.0.0.1:7001 &lt;/script&gt;&lt;img src=x&gt;</span>');
    // Lost images without a failure are a failure too, and say what went missing.
    expect(rows[0]![0]).toContain('<span class="reason">1 lost</span>');
    expect(rows[1]![0]).toContain('<span class="badge ok">ok</span>');
    expect(rows[1]![0]).toContain('gRPC &lt;&amp;&gt; &quot;quoted&quot;');
    expect(html).toContain('2 of 3 transports FAILED');
    // Chart notes name the transport without data.
    expect(html).toMatch(/<span class="tag failed">no data<\/span> TCP \(baseline\)/);
  });

  it('overlays two runs: both runs in every chart, both values and the change in the table', () => {
    const before = sampleReport('2026-11-22T08:00:00.000Z');
    const after = sampleReport();
    const two = renderHtmlReport([before, after], { chartJs: FAKE_CHART_JS });
    expect(JSON.parse(scriptBlock(two, 'itb-results'))).toEqual([before, after]);
    const specs = JSON.parse(scriptBlock(two, 'itb-chart-specs')) as { name: string; datasets: { run: string }[] }[];
    for (const spec of specs) expect(new Set(spec.datasets.map((d) => d.run))).toEqual(new Set(['before', 'after']));
    expect(two).toContain('Before (2026-11-22 08:00:00 UTC) against after (2026-11-23 08:00:00 UTC)');
    expect(two).toMatch(/<span class="now">([\d.,]+)<\/span><span class="was">\1<\/span><span class="change same">±0%<\/span>/);
    // Results the same in both runs are not repeated.
    expect(two).not.toContain('before:');
  });

  it('marks a better and a worse change by what is better for the figure', () => {
    const faster = fixtureReport([fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [1, 1], null, cost)]);
    const slower = fixtureReport([fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [2, 2], null, cost)]);
    const html = renderHtmlReport([slower, faster], { chartJs: '' });
    // p50 halved: better; throughput doubled (higher is better): better too.
    expect(html).toMatch(/<span class="now">1\.000<\/span><span class="was">2\.000<\/span><span class="change better">−50\.0%<\/span>/);
    expect(html).toMatch(/<span class="change better">\+\d+\.\d%<\/span>/);
    expect(renderHtmlReport([faster, slower], { chartJs: '' })).toMatch(/<span class="change worse">\+100\.0%<\/span>/);
    // Counts change by whole images, and not at all when equal.
    const lossy = fixtureReport([fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [1, null], null, cost)]);
    const lossyRow = /<tr data-transport="websocket"[\s\S]*?<\/tr>/.exec(renderHtmlReport([lossy, faster], { chartJs: '' }))![0];
    expect(lossyRow).toContain('<span class="now">2</span><span class="was">1</span><span class="change better">+1</span>');
    expect(lossyRow).toContain('<span class="now">0</span><span class="was">1</span><span class="change better">−1</span>');
    expect(lossyRow).toContain('<span class="now">0</span><span class="was">0</span></td>');
    expect(lossyRow).toContain('<span class="badge ok">ok</span><span class="was">before: <span class="badge failed">FAILED</span> <span class="reason">1 lost</span></span>');
  });

  it('accepts one or two runs only', () => {
    expect(() => renderHtmlReport([], { chartJs: '' })).toThrow(RangeError);
    expect(() => renderHtmlReport([report, report, report], { chartJs: '' })).toThrow(RangeError);
  });
});
