import { describe, expect, it } from 'vitest';
import { HTML_REPORT_CSP } from '../../services/core/report/html/page.js';
import { renderSweepPage, type SweepBars, type SweepChart } from '../../scripts/lib/sweep-page.js';

const chart: SweepChart = {
  id: 'latency-vs-clients',
  title: 'p99 one-way latency against clients',
  note: '64.0 KB × 4000 <images>',
  xLabel: 'CLIENTS',
  yLabel: 'p99 ms',
  series: [
    {
      label: 'TCP </script>',
      points: [
        { x: 1, y: 0.5 },
        { x: 10, y: null },
      ],
    },
  ],
};

describe('renderSweepPage', () => {
  const html = renderSweepPage('sweeps & more', [chart], {
    chartJs: 'var Chart = function () {};',
    pageCss: 'body { margin: 0 }',
  });

  it("is one self-contained page under the report's CSP, a canvas per chart, text escaped", () => {
    expect(html).toContain(
      `<meta http-equiv="Content-Security-Policy" content="${HTML_REPORT_CSP.replace(/'/g, '&#39;')}">`,
    );
    expect(html).toContain('<title>sweeps &amp; more</title>');
    expect(html).toContain(
      '<canvas data-chart="latency-vs-clients" aria-label="p99 one-way latency against clients"></canvas>',
    );
    expect(html).toContain('<p class="note">64.0 KB × 4000 &lt;images&gt;</p>');
    expect(html).toContain('var Chart = function () {};');
    expect(html).not.toMatch(/<script[^>]+src=/);
  });

  it('carries the charts as JSON that cannot close its script element, gaps kept as null', () => {
    const json = /<script type="application\/json" id="itb-sweeps">([\s\S]*?)<\/script>/.exec(html)?.[1];
    expect(json).not.toContain('</script>');
    expect(JSON.parse(json!)).toEqual([chart]);
  });
});

describe('renderSweepPage with bars', () => {
  const bars: SweepBars = {
    kind: 'bars',
    id: 'ceiling-large',
    title: 'Each transport beside its library’s ceiling',
    note: 'harness overhead = 1 − ours ÷ ceiling',
    yLabel: 'MB/s',
    categories: ['TCP', 'gRPC <unary>'],
    series: [
      { label: 'ceiling (the library alone)', values: [2400, 260] },
      { label: 'ours (the suite)', values: [1900, null] },
    ],
  };
  const html = renderSweepPage('bench', [bars, chart], { chartJs: 'var Chart = function () {};', pageCss: '' });

  it('gives the bars a canvas of their own beside the sweeps, and carries them as JSON with their gaps', () => {
    expect(html).toContain(
      '<canvas data-chart="ceiling-large" aria-label="Each transport beside its library’s ceiling"></canvas>',
    );
    expect(html).toContain('<canvas data-chart="latency-vs-clients"');
    const json = /<script type="application\/json" id="itb-sweeps">([\s\S]*?)<\/script>/.exec(html)?.[1];
    expect(JSON.parse(json!)).toEqual([bars, chart]);
  });

  it("carries a chart's linear scale to the page; a sweep without one keeps its log axes", () => {
    const linear: SweepChart = { ...chart, id: 'soak-rss-images', scale: 'linear' };
    const page = renderSweepPage('bench', [linear, chart], { chartJs: '', pageCss: '' });
    const json = /<script type="application\/json" id="itb-sweeps">([\s\S]*?)<\/script>/.exec(page)?.[1];
    expect((JSON.parse(json!) as SweepChart[]).map((c) => c.scale)).toEqual(['linear', undefined]);
  });

  it('draws bars as a bar chart by category, sweeps as lines', () => {
    expect(html).toContain("if (chart.kind === 'bars')");
    expect(html).toContain("type: 'bar'");
    expect(html).toContain("type: 'line'");
  });
});
