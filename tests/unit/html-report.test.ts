import { describe, expect, it } from 'vitest';
import { CHART_NAMES } from '../../services/core/report/html/chart-types.js';
import {
  HTML_REPORT_CSP,
  jsonForScript,
  scriptForInline,
  styleForInline,
} from '../../services/core/report/html/page.js';
import { renderHtmlReport, type HtmlReportLibraries } from '../../services/core/report/html-report.js';
import { TIMING_DEFINITIONS } from '../../services/core/report/wording.js';
import type { RunReport } from '../../services/core/report/report.js';
import { reportLibraries } from '../../services/shared/report-assets.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import {
  fixturePlan,
  fixtureReport,
  fixtureSection,
  resultWith,
  twoClockSection,
  fixtureCost as cost,
} from '../helpers/fixtures.js';
import type { SecondDistribution, SecondSample } from '../../services/core/model/series.js';
import { asLegacy, histogramOf, soakSection, twentyMillionSections, withSeries } from '../helpers/series-fixtures.js';
import { cellsOf, rowOf, scriptBlock, specsOf, type Spec } from '../helpers/report-page.js';

// The page as text: what it inlines, what it carries, what it must never contain. The browser
// test (tests/e2e/report-browser.test.ts) draws it.

const FAKE_CHART_JS =
  '/* fake Chart.js, see https://www.chartjs.org */ var Chart = function () {}; var tag = "</script><b>"; var ' +
  'TAG = "</SCRIPT >"; var comment = "<!--";';
// The real page style and script, so the checks on the whole page cover them too.
const LIBRARIES: HtmlReportLibraries = { ...reportLibraries(), chartJs: FAKE_CHART_JS };

/**
 * A section of the given times (ms; null = lost) as a file written before per-second series holds it: per-image records
 * inline.
 */
function legacySection(
  plan: Parameters<typeof fixtureSection>[0],
  timesMs: readonly (number | null)[],
  failure: string | null = null,
  sectionCost: Parameters<typeof fixtureSection>[3] = undefined,
): ReturnType<typeof fixtureSection> {
  return asLegacy(fixtureSection(plan, timesMs, failure, sectionCost), timesMs);
}

function sampleReport(startedAt = '2026-11-23T08:00:00.000Z'): RunReport {
  return fixtureReport(
    [
      legacySection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [2.413, 1.2, null, 1.9], null, cost),
      legacySection(fixturePlan({ transport: 'grpc', label: 'gRPC <&> "quoted"' }), [3.1, 2.9, 3.3, 3.0], null, cost),
      legacySection(
        fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }),
        [null, null, null, null],
        'connect ECONNREFUSED 127.0.0.1:7001 </script><img src=x>',
      ),
    ],
    { startedAt },
  );
}

/** The runs as the page carries them: sections without per-image records and per-second series. */
function withoutBulk(report: RunReport): unknown {
  return {
    ...report,
    sections: report.sections.map((section) => {
      const { images: _images, series: _series, ...rest } = section as SectionResult & { images?: unknown };
      return rest;
    }),
  };
}

/** The document's <script> elements as the HTML parser ends them: at the first "</script". */
function scriptElements(html: string): string[] {
  return [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script/gi)].map((m) => m[1]!);
}

describe('renderHtmlReport', () => {
  const report = sampleReport();
  const html = renderHtmlReport([report], LIBRARIES);

  it('is one HTML document with its CSP, nothing loaded from elsewhere', () => {
    expect(html.startsWith('<!DOCTYPE html>\n<html lang="en">')).toBe(true);
    expect(html.match(/<html\b/g)).toHaveLength(1);
    expect(html).toContain(
      `<meta http-equiv="Content-Security-Policy" content="${HTML_REPORT_CSP.replace(/'/g, '&#39;')}">`,
    );
    expect(HTML_REPORT_CSP).toMatch(/^default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'/);
    expect(html).not.toMatch(/<script[^>]*\bsrc=/i);
    expect(html).not.toMatch(/<link\b/i);
    expect(html).not.toMatch(/@import|url\(/i);
  });

  it('inlines the library, with "</script" and "<!--" escaped inside it', () => {
    const inlined = scriptForInline(FAKE_CHART_JS);
    expect(inlined).toBe(
      '/* fake Chart.js, see https://www.chartjs.org */ var Chart = function () {}; var tag = "<\\/script><b>"; ' +
        'var TAG = "<\\/SCRIPT >"; var comment = "<\\u0021--";',
    );
    expect(html).toContain(`<script>${inlined}</script>`);
    // Escaped, the JavaScript still means the same strings.
    expect(new Function(`${inlined}; return [tag, TAG, comment];`)()).toEqual(['</script><b>', '</SCRIPT >', '<!--']);
    // The library's script element runs to its own end: the parser sees it whole.
    expect(scriptElements(html)).toContain(inlined);
  });

  it('inlines the page style and script it is given, neither able to end its element early', () => {
    expect(html).toContain(`<style>${LIBRARIES.pageCss}</style>`);
    expect(html).toContain(`<script>${LIBRARIES.pageScript}</script>`);
    const pageCss = '.a::after { content: "</style><b>"; } /* </STYLE > */';
    const pageScript = 'var tag = "</script><b>";';
    const page = renderHtmlReport([report], { chartJs: '', pageCss, pageScript });
    expect(styleForInline(pageCss)).toBe('.a::after { content: "<\\/style><b>"; } /* <\\/STYLE > */');
    // As the HTML parser ends them: at the first "</style" and "</script".
    expect([...page.matchAll(/<style\b[^>]*>([\s\S]*?)<\/style/gi)].map((m) => m[1])).toEqual([
      styleForInline(pageCss),
    ]);
    expect(scriptElements(page)).toContain(scriptForInline(pageScript));
  });

  it(
    'carries the runs as a JSON block that round-trips to the input, less per-image records and series ' +
      '(results.json keeps them)',
    () => {
      const block = scriptBlock(html, 'itb-results');
      expect(block).not.toContain('<');
      expect(JSON.parse(block)).toEqual([withoutBulk(report)]);
      expect(block).not.toContain('"images":[');
      expect(jsonForScript({ text: '</script><!--' })).toBe('{"text":"\\u003c/script>\\u003c!--"}');
    },
  );

  it('has no http(s) URL outside the inlined library', () => {
    const outside = html.replace(scriptForInline(FAKE_CHART_JS), '');
    expect(outside).not.toMatch(/https?:\/\//i);
    expect(html).toMatch(/https:\/\/www\.chartjs\.org/);
  });

  it('gives every chart a canvas with a data-chart name, and a specification for it', () => {
    const names = [...html.matchAll(/<canvas data-chart="([^"]+)"/g)].map((m) => m[1]);
    expect(names).toEqual([
      'time-over-run',
      'latency-percentiles',
      'mbps-over-time',
      'p99-over-time',
      'throughput',
      'cpu-per-image',
      'peak-rss',
    ]);
    expect(names).toEqual([...CHART_NAMES]);
    const specs = specsOf(html);
    expect(specs.map((s) => s.name)).toEqual(names);
    const percentiles = specs[1]!;
    // One line per transport: the i-th fastest of n intact times at x = n / (n − i − 0.5); a transport with no arrival
    // has no points. WebSocket lost an image, so it has no completed repeat: its failed one is drawn for diagnosis.
    expect(percentiles.datasets.map((d) => d.transport)).toEqual(['websocket', 'grpc', 'tcp']);
    expect(percentiles.datasets[0]!.data).toEqual([
      { x: 3 / 2.5, y: 1.2 },
      { x: 3 / 1.5, y: 1.9 },
      { x: 3 / 0.5, y: 2.413 },
    ]);
    expect(percentiles.datasets[2]!.data).toEqual([]);
  });

  it('gives each of fourteen transports (TRANSPORTS=all) a colour of its own, the baseline grey', () => {
    const names = [
      'websocket',
      'websocket-push',
      'grpc',
      'grpc-connect',
      'grpc-unary',
      'zeromq',
      'zeromq-pubsub',
      'redis',
      'redis-list',
      'redis-pubsub',
      'nats',
      'http',
      'http-json',
    ];
    const all = fixtureReport([
      ...names.map((transport) => fixtureSection(fixturePlan({ transport, label: transport }), [1, 2], null, cost)),
      fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }), [1, 2], null, cost),
    ]);
    const percentiles = specsOf(renderHtmlReport([all], LIBRARIES)).find((s) => s.name === 'latency-percentiles')!;
    const colours = percentiles.datasets.map((d) => [d.transport, (d as { borderColor?: string }).borderColor]);
    expect(colours.map(([transport]) => transport)).toEqual([...names, 'tcp']);
    expect(new Set(colours.map(([, colour]) => colour)).size).toBe(14);
    expect(colours.at(-1)![1]).toBe('#6f7782');
  });

  it('shows the header facts', () => {
    for (const text of [
      '2026-11-23 08:00:00 UTC',
      'assets/sample.png, 533.0 KiB (545,792 bytes)',
      'Images per transport',
      'Warm-up',
      'Test CPU, 2 cores',
      'Node v20.20.2',
      'ws 8.23.0 · zeromq 6.8.0',
    ]) {
      expect(html).toContain(text);
    }
  });

  it('lists every transport in the table, the failed one marked FAILED with its reason (escaped)', () => {
    const rows = [...html.matchAll(/<tr data-transport="([^"]+)"[^>]*>([\s\S]*?)<\/tr>/g)];
    expect(rows.map((r) => r[1])).toEqual(['websocket', 'grpc', 'tcp']);
    const tcp = rows[2]![0];
    expect(tcp).toContain('class="failed"');
    expect(tcp).toContain(
      '<span class="badge failed">FAILED</span> <span class="reason">connect ECONNREFUSED 127.0.0.1:7001 ' +
        '&lt;/script&gt;&lt;img src=x&gt;</span>',
    );
    // Lost images without a failure are a failure too, and say what went missing.
    expect(rows[0]![0]).toContain('<span class="reason">1 lost</span>');
    expect(rows[1]![0]).toContain('<span class="badge ok">ok</span>');
    expect(rows[1]![0]).toContain('gRPC &lt;&amp;&gt; &quot;quoted&quot;');
    expect(html).toContain('2 of 3 transports FAILED');
    expect(html).toContain(
      '<span class="details">WebSocket: 1 lost · TCP (baseline): connect ECONNREFUSED 127.0.0.1:7001 ' +
        '&lt;/script&gt;&lt;img src=x&gt;</span>',
    );
    // Chart notes name the transport without data.
    expect(html).toMatch(/<span class="tag failed">no data<\/span> TCP \(baseline\)/);
  });

  it('overlays two runs: both runs in every chart, both values and the change in the table', () => {
    const before = sampleReport('2026-11-22T08:00:00.000Z');
    const after = sampleReport();
    const two = renderHtmlReport([before, after], LIBRARIES);
    expect(JSON.parse(scriptBlock(two, 'itb-results'))).toEqual([withoutBulk(before), withoutBulk(after)]);
    const specs = JSON.parse(scriptBlock(two, 'itb-chart-specs')) as { name: string; datasets: { run: string }[] }[];
    for (const spec of specs) expect(new Set(spec.datasets.map((d) => d.run))).toEqual(new Set(['before', 'after']));
    expect(two).toContain('Before (2026-11-22 08:00:00 UTC) against after (2026-11-23 08:00:00 UTC)');
    expect(two).toMatch(
      /<span class="now">([\d.,]+)<\/span><span class="was">\1<\/span><span class="change same">±0%<\/span>/,
    );
    // Results the same in both runs are not repeated.
    expect(two).not.toContain('before:');
  });

  it('gives no change between a closed loop and RATE, or two rates, and says why', () => {
    const closed = fixtureReport([
      fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [2, 2], null, cost),
    ]);
    const atRate = (ratePerSecond: number) =>
      fixtureReport([
        fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket', ratePerSecond }), [1, 1], null, cost),
      ]);
    for (const [before, after, why] of [
      [closed, atRate(30), 'not comparable: closed loop vs RATE 30/s'],
      [atRate(30), atRate(60), 'not comparable: RATE 30/s vs RATE 60/s'],
    ] as const) {
      const row = /<tr data-transport="websocket"[\s\S]*?<\/tr>/.exec(renderHtmlReport([before, after], LIBRARIES))![0];
      expect(row).not.toMatch(/class="change (better|worse)|%<\/span>/);
      expect(row).toContain(`<span class="change same" title="${why}">not comparable</span>`);
    }
    // The same rate in both runs: changes as ever.
    expect(renderHtmlReport([atRate(30), atRate(30)], LIBRARIES)).toContain('<span class="change same">±0%</span>');
  });

  it('marks a better and a worse change by what is better for the figure', () => {
    const faster = fixtureReport([
      fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [1, 1], null, cost),
    ]);
    const slower = fixtureReport([
      fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [2, 2], null, cost),
    ]);
    const html = renderHtmlReport([slower, faster], LIBRARIES);
    // p50 halved: better; throughput doubled (higher is better): better too.
    expect(html).toMatch(
      /<span class="now">1\.000<\/span><span class="was">2\.000<\/span><span class="change better">−50\.0%<\/span>/,
    );
    expect(html).toMatch(/<span class="change better">\+\d+\.\d%<\/span>/);
    expect(renderHtmlReport([faster, slower], LIBRARIES)).toMatch(/<span class="change worse">\+100\.0%<\/span>/);
    // Counts change by whole images, and not at all when equal.
    const lossy = fixtureReport([
      fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [1, null], null, cost),
    ]);
    const lossyRow = /<tr data-transport="websocket"[\s\S]*?<\/tr>/.exec(
      renderHtmlReport([lossy, faster], LIBRARIES),
    )![0];
    expect(lossyRow).toContain(
      '<span class="now">2</span><span class="was">1</span><span class="change better">+1</span>',
    );
    expect(lossyRow).toContain(
      '<span class="now">0</span><span class="was">1</span><span class="change better">−1</span>',
    );
    expect(lossyRow).toContain('<span class="now">0</span><span class="was">0</span></td>');
    expect(lossyRow).toContain(
      '<span class="badge ok">ok</span><span class="was">before: <span class="badge failed">FAILED</span> <span ' +
        'class="reason">1 lost</span></span>',
    );
  });

  it('accepts one or two runs only', () => {
    expect(() => renderHtmlReport([], LIBRARIES)).toThrow(RangeError);
    expect(() => renderHtmlReport([report, report, report], LIBRARIES)).toThrow(RangeError);
  });
});

describe('renderHtmlReport: round trip and broker figures', () => {
  const broker = {
    cpuUserMs: 2,
    cpuSystemMs: 1,
    cpuMs: 3,
    cpuMsPerImage: 0.75,
    peakRssBytes: 12 * 1024 * 1024,
    eventLoopUtilization: null,
  };
  const withBroker = (brokerMsPerImage = 0.75, startedAt?: string): RunReport =>
    fixtureReport(
      [
        fixtureSection(
          fixturePlan({ transport: 'grpc', label: 'gRPC', sectionId: 1 }),
          [3.1, 2.9, 3.3, 3.0],
          null,
          cost,
        ),
        fixtureSection(fixturePlan({ transport: 'redis', label: 'Redis', sectionId: 2 }), [2.0, 2.2, 2.1, 2.4], null, {
          ...cost,
          broker: { ...broker, cpuMsPerImage: brokerMsPerImage },
        }),
      ],
      startedAt === undefined ? {} : { startedAt },
    );

  it('shows the median section’s RTT p50 and p99, defined as output.log defines the round trip', () => {
    const report = sampleReport();
    const html = renderHtmlReport([report], LIBRARIES);
    const grpc = report.sections[report.transports[1]!.medianSection!]!;
    expect(grpc.rtt).not.toBeNull();
    const cells = cellsOf(html, 'grpc');
    expect(cells['RTT p50 ms']).toBe(grpc.rtt!.p50Ms.toFixed(3));
    // Fewer than 100 round trips: p99 would be the max, so the cell shows a dash.
    expect([grpc.rtt!.count < 100, grpc.rtt!.p99Ms]).toEqual([true, null]);
    expect(cells['RTT p99 ms']).toBe('–');
    const roundTrip = TIMING_DEFINITIONS.find((d) => d.startsWith('Round trip'))!;
    expect(html).toMatch(
      new RegExp(
        `<th scope="col" data-type="number" title="median round trip\\. ` +
          roundTrip.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') +
          `"><button type="button">RTT p50 ms</button>`,
      ),
    );
    // No transport went through a broker: no broker column.
    expect(html).not.toContain('Broker CPU ms/img');
  });

  it('shows the spread of RTT p50 across completed repeats on hover', () => {
    const plan = (repeat: number) => fixturePlan({ transport: 'grpc', label: 'gRPC', repeat, sectionId: repeat });
    const report = fixtureReport(
      [
        fixtureSection(plan(1), [1, 1], null, cost),
        fixtureSection(plan(2), [2, 2], null, cost),
        fixtureSection(plan(3), [4, 4], null, cost),
      ],
      { repeat: 3 },
    );
    const spread = report.transports[0]!.spread.rttP50Ms!;
    const median = report.sections[report.transports[0]!.medianSection!]!.rtt!.p50Ms;
    expect(rowOf(renderHtmlReport([report], LIBRARIES), 'grpc')).toContain(
      `title="completed repeats: ${spread.min.toFixed(3)}–${spread.max.toFixed(3)}"><span ` +
        `class="now">${median.toFixed(3)}</span>`,
    );
  });

  it('adds a Broker CPU ms/img column when a transport has a broker cost, "–" for the others', () => {
    const html = renderHtmlReport([withBroker()], LIBRARIES);
    expect(cellsOf(html, 'redis')['Broker CPU ms/img']).toBe('0.750');
    expect(cellsOf(html, 'grpc')['Broker CPU ms/img']).toBe('–');
  });

  it('adds the broker split\'s columns when a section was split at a broker\'s stamp, "–" for the others', () => {
    expect(renderHtmlReport([withBroker()], LIBRARIES)).not.toContain('To broker p50 ms');
    const report = withBroker();
    const redis = report.sections.find((s) => s.transport === 'redis')!;
    const part = { ...redis.latency!, p50Ms: 0.25 };
    redis.brokerSplit = {
      count: 4,
      toBroker: part,
      fromBroker: { ...part, p50Ms: 1.875 },
      histograms: { toBrokerNs: null, fromBrokerNs: null },
      resolutionMs: 1,
      clockBoundMs: 0.5126,
      belowZero: { toBroker: 0, fromBroker: 0 },
      beyondBound: 0,
    };
    const html = renderHtmlReport([report], LIBRARIES);
    expect(cellsOf(html, 'redis')).toMatchObject({
      'To broker p50 ms': '0.250',
      'From broker p50 ms': '1.875',
      'Broker split ± ms': '0.513',
    });
    expect(cellsOf(html, 'grpc')['To broker p50 ms']).toBe('–');
    expect(html).toContain('title="median time from the stamp to the broker&#39;s own stamp. Through a broker');
  });

  it(
    'across two hosts, adds a Clock ± ms column right after the one-way figures and says in the facts how the ' +
      'times were put on one clock',
    () => {
      const report = fixtureReport([
        twoClockSection({ transport: 'grpc', label: 'gRPC' }),
        fixtureSection(fixturePlan({ transport: 'redis', label: 'Redis', sectionId: 2 }), [2.0, 2.2], null, cost),
      ]);
      report.run.hosts.receiver = { ...report.run.hosts.receiver, bootId: 'other-kernel' };
      const html = renderHtmlReport([report], LIBRARIES);
      expect(cellsOf(html, 'grpc')).toMatchObject({ 'p50 ms': '1.200', 'Clock ± ms': '0.160', 'RTT p50 ms': '1.500' });
      expect(cellsOf(html, 'redis')['Clock ± ms']).toBe('–');
      expect(html).toMatch(
        new RegExp(
          /<button type="button">max ms<\/button><\/th><th scope="col" data-type="number" title="two /.source +
            /hosts, two clocks: [^"]+"><button type="button">Clock ± ms<\/button><\/th><th[^>]*><button /.source +
            /type="button">RTT p50 ms/.source,
        ),
      );
      expect(html).toContain(
        '<th scope="row">Clock</th><td>different or unknown kernels: send times moved onto the receiver clock by ' +
          'the offset estimated before each section: one-way figures within ± 0.160 ms at most (Clock ± column); the ' +
          'round trip (RTT) is on the transmitter clock alone, the clock-free figure</td>',
      );
      // One kernel: no such column.
      expect(renderHtmlReport([sampleReport()], LIBRARIES)).not.toContain('Clock ± ms');
    },
  );

  it('says a closed loop, and adds no open-loop column, without RATE', () => {
    const html = renderHtmlReport([sampleReport()], LIBRARIES);
    expect(html).toContain(
      '<th scope="row">Send schedule</th><td>closed loop: the next image goes as soon as the window has room</td>',
    );
    expect(html).not.toContain('p99 from due ms');
    expect(html).not.toContain('Frame age p50 ms');
    expect(cellsOf(html, 'websocket')).toHaveProperty('p50 ms');
    // Without RATE and COMMAND_RATE, no deadline table and no command lane.
    expect(html).not.toContain('aria-label="Deadline and jitter"');
    expect(html).not.toContain('aria-label="Command lane"');
  });

  it(
    'under RATE, says the schedule, labels MB/s as the load delivered, and gives the sent and delivered rates and ' +
      'OVERLOADED',
    () => {
      const plan = fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, imageCount: 2, ratePerSecond: 50 });
      const recorder = new SectionRecorder(plan);
      recorder.beginRecording({ images: 0, ms: 0, steady: null, mediansMs: null }, 0n);
      // Due at 0 and 20 ms; the second waited 5 ms for a window slot: both went out and arrived 25 ms apart, 40
      // images/s.
      recorder.record({ sectionId: 1, seq: 0, sizeBytes: plan.imageSizeBytes, checksum: 0n, sentAtNs: 0n }, 2_000_000n);
      recorder.record(
        { sectionId: 1, seq: 1, sizeBytes: plan.imageSizeBytes, checksum: 0n, sentAtNs: 25_000_000n },
        27_000_000n,
      );
      recorder.verified(0, true);
      recorder.verified(1, true);
      const section = resultWith(recorder, null, {
        rttNs: [2_500_000, 2_500_000],
        dueLagNs: [0, 5_000_000],
        achievedRatePerSecond: 40,
      });
      const report = fixtureReport([section]);
      const html = renderHtmlReport(
        [{ ...report, run: { ...report.run, config: { ...report.run.config, ratePerSecond: 50 } } }],
        LIBRARIES,
      );
      expect(html).toContain(
        '<th scope="row">Send schedule</th><td>open loop at RATE 50 images/s; an image due while WINDOW are in ' +
          'flight waits for a slot and goes late, its wait counted from its due time; MB/s is the load delivered, ' +
          'not a capacity</td>',
      );
      // Two images: the frame age p99 is withheld, not the max under another name. The frame age leads (the second
      // frame waited 5 ms to be sent: 7 ms old at arrival), the time on the link (2 ms each) beside it. The age p50
      // is its HDR bucket's top (2.001 ms); the link's is capped by its max, 2 ms.
      const cells = cellsOf(html, 'tcp');
      expect(cells).toMatchObject({
        'Frame age p50 ms': '2.001',
        'Frame age p99 ms': '–',
        'Frame age max ms': '7.000',
        'On the link p50 ms': '2.000',
        'On the link p99 ms': '–',
        'Sent/s': '40.0',
        'Delivered/s': '40.0',
        'MB/s at RATE': '~40.4',
      });
      const headers = Object.keys(cells);
      expect(headers.indexOf('Frame age p50 ms')).toBe(headers.indexOf('Corrupt') + 1);
      expect(headers.indexOf('On the link p50 ms')).toBe(headers.indexOf('Frame age max ms') + 1);
      expect(headers).not.toContain('p50 ms');
      expect(headers).not.toContain('p99 from due ms');
      expect(html).not.toContain('Unsent');
      expect(rowOf(html, 'tcp')).toContain(
        '<span class="badge ok">ok</span> <span class="reason">OVERLOADED at RATE: sent or delivered under 95 % ' +
          'of RATE; see frame age</span>',
      );
      expect(rowOf(html, 'tcp')).not.toContain('MISSED DEADLINE');
      expect(html).toContain('MB/s and images/s are what was delivered at the offered load');
      // Deadline one interval (20 ms): neither frame late; arrivals 25 ms apart, 5 ms off the interval.
      expect(cellsOf(html, 'tcp', 'deadline-table')).toEqual({
        Transport: 'TCP (baseline)',
        'Deadline ms': '20.000',
        Sent: '2',
        Late: '0',
        'Late %': '0.0',
        '> 3 intervals': '0',
        Undelivered: '0',
        'Missed %': '0.0',
        'Longest gap ms': '25.000',
        'Jitter mean ms': '5.000',
        'Jitter sd ms': '0.000',
        'Jitter p99 ms': '–',
        'Jitter max ms': '5.000',
        Verdict: 'met',
      });
    },
  );

  it('colours a broker CPU change as lower is better', () => {
    const two = renderHtmlReport([withBroker(1, '2026-11-22T08:00:00.000Z'), withBroker(0.5)], LIBRARIES);
    expect(rowOf(two, 'redis')).toContain(
      '<span class="now">0.500</span><span class="was">1.000</span><span class="change better">−50.0%</span>',
    );
    expect(
      rowOf(renderHtmlReport([withBroker(0.5, '2026-11-22T08:00:00.000Z'), withBroker(1)], LIBRARIES), 'redis'),
    ).toContain(
      '<span class="now">1.000</span><span class="was">0.500</span><span class="change worse">+100.0%</span>',
    );
  });

  it('draws the broker as a third side of the CPU chart, in its own colour, only when there is one', () => {
    const specs = specsOf(renderHtmlReport([withBroker()], LIBRARIES));
    const cpu = specs.find((s) => s.name === 'cpu-per-image')!;
    expect(cpu.datasets.map((d) => [d.side, d.label])).toEqual([
      ['transmitter', 'Transmitter'],
      ['receiver', 'Receiver'],
      ['broker', 'Broker'],
    ]);
    expect(cpu.datasets[2]!.data).toEqual([null, 0.75]);
    expect(new Set(cpu.datasets.map((d) => d.backgroundColor)).size).toBe(3);
    // The transmitter and receiver keep their colours.
    const without = specsOf(renderHtmlReport([sampleReport()], LIBRARIES)).find((s) => s.name === 'cpu-per-image')!;
    expect(without.datasets.map((d) => d.side)).toEqual(['transmitter', 'receiver']);
    expect(without.datasets.map((d) => d.backgroundColor)).toEqual(
      cpu.datasets.slice(0, 2).map((d) => d.backgroundColor),
    );
    // Peak memory stays two-sided: a broker's RSS is two readings of a whole server, not a sampled peak.
    expect(specs.find((s) => s.name === 'peak-rss')!.datasets.map((d) => d.side)).toEqual(['transmitter', 'receiver']);

    const two = specsOf(renderHtmlReport([withBroker(1, '2026-11-22T08:00:00.000Z'), withBroker(0.5)], LIBRARIES)).find(
      (s) => s.name === 'cpu-per-image',
    )!;
    expect(two.datasets.filter((d) => d.side === 'broker').map((d) => [d.label, d.data])).toEqual([
      ['Broker · before', [null, 1]],
      ['Broker · after', [null, 0.5]],
    ]);
  });
});

describe('renderHtmlReport: a transport with no completed repeat', () => {
  const report = sampleReport();
  const page = renderHtmlReport([report], LIBRARIES);
  const specs = specsOf(page);
  const figure = (name: string): string =>
    new RegExp(`<figure class="card chart-card chart-${name}">[\\s\\S]*?</figure>`).exec(page)![0];

  it('still draws its last repeat with arrivals on the percentile chart, tagged', () => {
    for (const name of ['latency-percentiles']) {
      const websocket = specs.find((s) => s.name === name)!.datasets.find((d) => d.transport === 'websocket')!;
      expect(websocket.hasData).toBe(true);
      expect(websocket.failedRepeat).toBe(true);
      expect(websocket.legendLabel).toBe('WebSocket (FAILED repeat shown)');
      expect(websocket.label).toBe('WebSocket (FAILED)');
      // Its tag sits next to its name under the chart; TCP had no arrival at all and stays "no data".
      expect(figure(name)).toContain('<span class="tag failed">FAILED repeat shown</span> WebSocket');
      expect(figure(name)).toContain('<span class="tag failed">no data</span> TCP (baseline)');
      const tcp = specs.find((s) => s.name === name)!.datasets.find((d) => d.transport === 'tcp')!;
      expect([tcp.hasData, tcp.failedRepeat, tcp.legendLabel]).toEqual([false, false, 'TCP (baseline) (no data)']);
    }
    expect(page).toContain(
      '<p class="note">Bars come from each transport’s completed repeat (every image intact) only: none for a ' +
        'transport without one. Lines of a transport with no completed repeat show its last repeat with any ' +
        'arrival, tagged “FAILED repeat shown”: for diagnosis, not a result. A section from a file written before ' +
        'per-second series were recorded has nothing to draw over time (tagged “no series in this file”); its ' +
        'latency distribution comes from its per-image times.</p>',
    );
    // A completed transport is not tagged.
    const grpc = specs[1]!.datasets.find((d) => d.transport === 'grpc')!;
    expect([grpc.failedRepeat, grpc.legendLabel]).toEqual([false, 'gRPC <&> "quoted"']);
  });

  it('has no bar and no figure in the table: those come from completed repeats only', () => {
    for (const name of ['throughput', 'cpu-per-image', 'peak-rss']) {
      const spec = specs.find((s) => s.name === name)!;
      for (const d of spec.datasets) expect(d.data[0]).toBeNull();
      expect(spec.labels![0]).toEqual(['WebSocket', '(no data)']);
      expect(figure(name)).toContain('<span class="tag failed">no data</span> WebSocket, TCP (baseline)');
      expect(figure(name)).not.toContain('FAILED repeat shown');
    }
    const cells = cellsOf(page, 'websocket');
    for (const header of ['p50 ms', 'p99 ms', 'RTT p50 ms', 'RTT p99 ms', 'Total ms', 'MB/s', 'TX CPU ms/img'])
      expect(cells[header], header).toBe('–');
    // The counts still count every repeat.
    expect([cells.OK, cells.Lost, cells.Corrupt]).toEqual(['3', '1', '0']);
    expect(page).toContain('A transport with no completed repeat has no figures (–)');
  });

  it('draws the LAST repeat that has any arrival, named in the tooltip label', () => {
    const plan = (transport: string, label: string, repeat: number) =>
      fixturePlan({ transport, label, repeat, sectionId: repeat });
    const repeated = fixtureReport(
      [
        legacySection(plan('websocket', 'WebSocket', 1), [1.5, null], null, cost),
        legacySection(plan('grpc', 'gRPC', 1), [1, 1], null, cost),
        legacySection(plan('websocket', 'WebSocket', 2), [null, 2.5], null, cost),
        legacySection(plan('grpc', 'gRPC', 2), [2, null], null, cost),
        legacySection(plan('websocket', 'WebSocket', 3), [null, null], 'connection reset', cost),
        legacySection(plan('grpc', 'gRPC', 3), [3, null], null, cost),
      ],
      { repeat: 3 },
    );
    const two = renderHtmlReport([repeated], LIBRARIES);
    const percentiles = specsOf(two).find((s) => s.name === 'latency-percentiles')!;
    const websocket = percentiles.datasets.find((d) => d.transport === 'websocket')!;
    // Repeat 3 had no arrival: repeat 2 is the last that shows anything, its one time at p50 (x = 2).
    expect(websocket.label).toBe('WebSocket (FAILED repeat 2)');
    expect(websocket.data).toEqual([{ x: 2, y: 2.5 }]);
    // gRPC completed one of its repeats: that one is its median, drawn and tabled without a tag.
    const grpc = percentiles.datasets.find((d) => d.transport === 'grpc')!;
    expect([grpc.failedRepeat, grpc.label]).toEqual([false, 'gRPC']);
    expect(grpc.data).toEqual([
      { x: 2 / 1.5, y: 1 },
      { x: 4, y: 1 },
    ]);
    expect(cellsOf(two, 'grpc')['p50 ms']).toBe('1.000');
    expect(rowOf(two, 'grpc')).toContain(
      '<span class="badge failed">FAILED</span> <span class="reason">2 lost</span> <span class="completed">1 of ' +
        '3 repeats completed</span>',
    );
    expect(two).toContain('<span class="details">WebSocket: connection reset · gRPC: 2 lost</span>');
  });

  it('says which run a failed repeat is drawn from when only one of two is', () => {
    const completed = fixtureReport(
      [legacySection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [1, 1], null, cost)],
      { startedAt: '2026-11-24T08:00:00.000Z' },
    );
    const two = renderHtmlReport([report, completed], LIBRARIES);
    const websocket = specsOf(two)[1]!.datasets.filter((d) => d.transport === 'websocket');
    expect(websocket.map((d) => [d.run, d.failedRepeat, d.label])).toEqual([
      ['after', false, 'WebSocket · after'],
      ['before', true, 'WebSocket · before (FAILED)'],
    ]);
    expect(websocket[0]!.legendLabel).toBe('WebSocket (FAILED repeat shown before)');
    expect(two).toContain('<span class="tag failed">FAILED repeat shown before</span> WebSocket');
  });
});

describe('renderHtmlReport: header facts and footnotes', () => {
  it('says repeats are interleaved, the order rotated, and the median COMPLETED repeat shown', () => {
    const plan = (repeat: number) => fixturePlan({ transport: 'grpc', label: 'gRPC', repeat, sectionId: repeat });
    const html = renderHtmlReport(
      [
        fixtureReport([fixtureSection(plan(1), [1, 1], null, cost), fixtureSection(plan(2), [2, 2], null, cost)], {
          repeat: 2,
        }),
      ],
      LIBRARIES,
    );
    expect(html).toContain(
      '<tr><th scope="row">Repeat</th><td>2, interleaved: the transport order rotated each repeat (A B C, B C ' +
        'A, C A B, …); figures from each transport’s median COMPLETED repeat</td></tr>',
    );
    expect(html).toContain('come from the median completed repeat');
  });

  it('says a run of under 1,000 images per section is too short to compare, and no more above', () => {
    const plan = fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true });
    const html = (count: number): string =>
      renderHtmlReport(
        [fixtureReport([fixtureSection({ ...plan, imageCount: count }, Array<number>(count).fill(0.5), null, cost)])],
        LIBRARIES,
      );
    expect(html(10)).toContain(
      'Short run: fewer than 1,000 images per section, so even the p50 is not comparable with another run&#39;s',
    );
    expect(html(1000)).not.toContain('Short run:');
  });

  it('lists the arrival notes when there are any', () => {
    const plain = sampleReport();
    expect(renderHtmlReport([plain], LIBRARIES)).not.toContain('Batched arrivals');
    const noted: RunReport = {
      ...plain,
      run: { ...plain.run, arrivalNotes: ['Redis: ioredis hands over <a reply> whole', 'Other: in pairs'] },
    };
    expect(renderHtmlReport([noted], LIBRARIES)).toContain(
      '<tr><th scope="row">Batched arrivals</th><td>Redis: ioredis hands over &lt;a reply&gt; whole · Other: in ' +
        'pairs</td></tr>',
    );
    // Two runs keep their rows paired: the run without notes says so.
    expect(renderHtmlReport([plain, noted], LIBRARIES)).toMatch(
      new RegExp(
        /<tr class="differs"><th scope="row">Batched arrivals <span /.source +
          /class="tag">differs<\/span><\/th><td>none<\/td><td>Redis: ioredis/.source,
      ),
    );
  });

  it(
    'says verification happens after the ack on the thread that stamps arrivals, with its share of that thread ' +
      'per transport, and when it did not happen at all',
    () => {
      const report = sampleReport();
      expect(renderHtmlReport([report], LIBRARIES)).toContain(
        'checked by the receiver after its ack, on the thread that stamps arrivals',
      );
      // The column shows the median section's share in percent; a transport with no figure gets a dash.
      report.sections[1]!.verifyBusyShare = 0.214;
      const html = renderHtmlReport([report], LIBRARIES);
      const header = [...html.matchAll(/<th scope="col"[^>]*><button type="button">([^<]*)<\/button><\/th>/g)].map(
        (m) => m[1],
      );
      const column = header.indexOf('RX hashing %');
      expect(column).toBeGreaterThan(0);
      const cellsOf = (transport: string): string[] => {
        const row = new RegExp(`<tr data-transport="${transport}"[\\s\\S]*?</tr>`).exec(html)![0];
        return [...row.matchAll(/<td [^>]*>([\s\S]*?)<\/td>/g)].map((m) => m[1]!);
      };
      expect(cellsOf('grpc')[column]).toBe('<span class="now">21</span>');
      expect(cellsOf('websocket')[column]).toBe('<span class="now">–</span>');
      const unverified: RunReport = {
        ...report,
        run: { ...report.run, config: { ...report.run.config, verify: false } },
      };
      expect(renderHtmlReport([unverified], LIBRARIES)).toContain('NOT VERIFIED (VERIFY=false)');
    },
  );

  it('defines every time as output.log does, and says the sd is the sample sd', () => {
    const footer = /<footer class="footnotes">[\s\S]*?<\/footer>/.exec(
      renderHtmlReport([sampleReport()], LIBRARIES),
    )![0];
    for (const definition of TIMING_DEFINITIONS)
      expect(footer).toContain(definition.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'));
    expect(footer).toContain('Round trip of image i');
    expect(footer).toContain('before any hash of it, and verifies it on the same thread');
    expect(footer).toContain('the sample one (n − 1)');
  });
});

describe('renderHtmlReport: charts from per-second series and histograms', () => {
  const dist = (minMs: number, p50Ms: number, maxMs: number, p99Ms: number | null = null): SecondDistribution => ({
    minMs,
    p50Ms,
    p99Ms,
    maxMs,
  });
  const size = 545_792;
  // Second 2 had no arrival; second 3 one corrupt image (no intact bytes, no one-way time, a round trip).
  const series: SecondSample[] = [
    { second: 0, images: 150, intactBytes: 150 * size, oneWay: dist(1, 2, 9, 5), rtt: dist(1.1, 2.1, 9.1, 5.1) },
    { second: 1, images: 40, intactBytes: 40 * size, oneWay: dist(1.5, 2.5, 4), rtt: dist(1.6, 2.6, 4.1) },
    { second: 3, images: 1, intactBytes: 0, oneWay: null, rtt: dist(3, 3, 3) },
  ];
  // The table's max is 5 ms exactly; the histogram's bucket of 5 ms tops out at 5.001215 ms.
  const websocket = withSeries(
    fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [1, 5], null, cost),
    series,
    { oneWayNs: histogramOf([1, 5]), rttNs: histogramOf([1.1, 5.1]) },
  );
  const fewPerSecond = [
    { second: 0, images: 10, intactBytes: 10 * size, oneWay: dist(1, 2, 3), rtt: dist(1.1, 2.1, 3.1) },
  ];
  const grpc = withSeries(
    fixtureSection(fixturePlan({ transport: 'grpc', label: 'gRPC', sectionId: 2 }), [2, 2], null, cost),
    fewPerSecond,
    { oneWayNs: histogramOf([2, 2]), rttNs: null },
  );
  const report = fixtureReport([websocket, grpc]);
  const page = renderHtmlReport([report], LIBRARIES);
  const specs = specsOf(page);
  const spec = (name: string): Spec => specs.find((s) => s.name === name)!;
  const figure = (name: string, html = page): string =>
    new RegExp(`<figure class="card chart-card chart-${name}">[\\s\\S]*?</figure>`).exec(html)![0];

  it(
    'draws the transmission time over the run: per second the p50, the p99 dashed, and the min–max band, a gap ' +
      'where none arrived',
    () => {
      const lines = spec('time-over-run').datasets.filter((d) => d.transport === 'websocket');
      expect(lines.map((d) => [d.figure, d.label, d.fill, d.borderDash])).toEqual([
        ['p50', 'WebSocket p50', false, []],
        ['p99', 'WebSocket p99', false, [5, 4]],
        ['min', 'WebSocket min', false, []],
        ['max', 'WebSocket max', '-1', []],
      ]);
      const ys = (d: { data: unknown[] }) => (d.data as { x: number; y: number | null }[]).map((p) => [p.x, p.y]);
      expect(lines.map(ys)).toEqual([
        [
          [0, 2],
          [1, 2.5],
          [2, null],
          [3, null],
        ],
        [
          [0, 5],
          [1, null],
          [2, null],
          [3, null],
        ],
        [
          [0, 1],
          [1, 1.5],
          [2, null],
          [3, null],
        ],
        [
          [0, 9],
          [1, 4],
          [2, null],
          [3, null],
        ],
      ]);
      expect([lines[0]!.bucketSeconds, lines[0]!.spanSeconds, spec('time-over-run').xMax]).toEqual([1, 4, 4]);
      expect(page).toContain('data-log-toggle="time-over-run"');
    },
  );

  it('draws MB/s over time, 0 in the seconds nothing intact arrived', () => {
    const [line] = spec('mbps-over-time').datasets.filter((d) => d.transport === 'websocket');
    expect(line!.data).toEqual([
      { x: 0, y: (150 * size) / 1e6 },
      { x: 1, y: (40 * size) / 1e6 },
      { x: 2, y: 0 },
      { x: 3, y: 0 },
    ]);
  });

  it('draws the p99 over time, one-way and round trip dashed, and says why a transport has none', () => {
    const lines = spec('p99-over-time').datasets.filter((d) => d.transport === 'websocket');
    expect(lines.map((d) => [d.figure, d.borderDash, (d.data as { y: number | null }[]).map((p) => p.y)])).toEqual([
      ['p99', [], [5, null, null, null]],
      ['RTT p99', [5, 4], [5.1, null, null, null]],
    ]);
    // gRPC's only second had 10 images: no p99 in it.
    const grpcLines = spec('p99-over-time').datasets.filter((d) => d.transport === 'grpc');
    expect(grpcLines.map((d) => [d.hasData, d.missing, d.legendLabel])).toEqual([
      [false, 'no second of 100 images', 'gRPC (no second of 100 images)'],
      [false, 'no second of 100 images', 'gRPC (no second of 100 images)'],
    ]);
    expect(figure('p99-over-time')).toContain('<span class="tag failed">no second of 100 images</span> gRPC');
    expect(figure('time-over-run')).not.toContain('no-data');
  });

  it('draws the latency distribution from the histogram, capped at the table’s max', () => {
    const [line] = spec('latency-percentiles').datasets.filter((d) => d.transport === 'websocket');
    // 1 ms is in a bucket whose top is 1.000447 ms; 5 ms's top (5.001215) is past the true max.
    expect(line!.data).toEqual([
      { x: 2 / 1.5, y: 1.000447 },
      { x: 4, y: 5 },
    ]);
  });

  it('leaves the per-second series out of the runs it carries', () => {
    expect(scriptBlock(page, 'itb-results')).not.toContain('"series"');
    expect(scriptBlock(page, 'itb-results')).toContain('"histograms"');
    expect(page).not.toContain('no series in this file');
  });

  it('merges seconds past 2,000, and says how', () => {
    const long = Array.from(
      { length: 5000 },
      (_, second): SecondSample => ({
        second,
        images: 200,
        intactBytes: 200 * size,
        oneWay: dist(1, 2, 3, 2.5),
        rtt: dist(1, 2, 3, 2.5),
      }),
    );
    const html = renderHtmlReport([fixtureReport([withSeries(websocket, long, websocket.histograms!)])], LIBRARIES);
    for (const s of specsOf(html).filter((x) => x.name.endsWith('over-time') || x.name === 'time-over-run')) {
      for (const d of s.datasets) expect(d.data.length, s.name).toBe(1667);
      expect(s.datasets[0]!.bucketSeconds).toBe(3);
    }
    expect(html).toContain(
      'Over 2,000 s a point merges consecutive seconds: the median of their p50s, the largest of their p99s (an ' +
        'upper bound: percentiles do not merge).',
    );
  });

  it(
    'overlays a file without series (before) on one with (after): the charts over time say which has none, the ' +
      'distribution draws both',
    () => {
      const older = fixtureReport(
        [legacySection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [1.5, 2.5], null, cost)],
        { startedAt: '2026-11-22T08:00:00.000Z' },
      );
      const two = renderHtmlReport([older, fixtureReport([websocket])], LIBRARIES);
      const twoSpecs = specsOf(two);
      for (const name of ['time-over-run', 'mbps-over-time', 'p99-over-time']) {
        const lines = twoSpecs.find((s) => s.name === name)!.datasets;
        expect(
          lines.filter((d) => d.run === 'after').every((d) => d.hasData && d.missing === null),
          name,
        ).toBe(true);
        expect(
          lines.filter((d) => d.run === 'before').map((d) => [d.hasData, d.missing, d.data.length]),
          name,
        ).toEqual([[false, 'no series in this file', 0]]);
        expect(lines[0]!.legendLabel).toBe('WebSocket (no series in this file before)');
        expect(figure(name, two)).toContain('<span class="tag failed">no series in this file before</span> WebSocket');
      }
      const percentiles = twoSpecs.find((s) => s.name === 'latency-percentiles')!.datasets;
      expect(percentiles.map((d) => [d.run, d.data])).toEqual([
        [
          'after',
          [
            { x: 2 / 1.5, y: 1.000447 },
            { x: 4, y: 5 },
          ],
        ],
        [
          'before',
          [
            { x: 2 / 1.5, y: 1.5 },
            { x: 4, y: 2.5 },
          ],
        ],
      ]);
      expect(two).toContain(
        'A section from a file written before per-second series were recorded has nothing to draw over time',
      );
      // Where dashes mark a figure (p99, round trip) the before run is faint, not dashed: the key says which.
      expect(figure('time-over-run', two)).toContain('<span class="key-line key-faint key-before"');
      expect(figure('p99-over-time', two)).toContain('<span class="key-line key-faint key-before"');
      expect(figure('mbps-over-time', two)).toContain('<span class="key-line key-before"');
    },
  );
});

describe('renderHtmlReport: a run of 20 million images', () => {
  const MAX_PAGE_BYTES = 5_000_000;

  it('is a page under 5 MB: five transports of 4,000,000 images (400 s each), alone and overlaid on another', () => {
    const sections = twentyMillionSections();
    // About 20 million: 10,000 a second ± 10 % at random, less ZeroMQ's 5 s stall.
    expect(sections.reduce((n, s) => n + s.okCount, 0)).toBeGreaterThan(19_500_000);
    expect(sections.reduce((n, s) => n + s.okCount, 0)).toBeLessThan(20_500_000);
    const after = fixtureReport(sections);
    const page = renderHtmlReport([after], reportLibraries());
    const pair = renderHtmlReport(
      [fixtureReport(twentyMillionSections(1.15), { startedAt: '2026-11-22T08:00:00.000Z' }), after],
      reportLibraries(),
    );
    console.log(
      `20 million images: report.html ${Buffer.byteLength(page)} bytes; before/after ` +
        `pair ${Buffer.byteLength(pair)} bytes`,
    );
    expect(Buffer.byteLength(page)).toBeLessThan(MAX_PAGE_BYTES);
    expect(Buffer.byteLength(pair)).toBeLessThan(MAX_PAGE_BYTES);
    // Every line over time is one point a second (400 of them), every percentile curve at most 2,000 points.
    for (const spec of specsOf(page)) {
      if (spec.name === 'latency-percentiles')
        for (const d of spec.datasets) expect(d.data.length).toBeLessThanOrEqual(2000);
      else if (spec.name.includes('over')) for (const d of spec.datasets) expect(d.data.length).toBe(400);
    }
  });

  it('is a page under 5 MB for a day’s soak: one section of 86,400 seconds', () => {
    const soak = soakSection();
    expect(soak.series).toHaveLength(86_400);
    expect(soak.okCount).toBeGreaterThan(19_500_000);
    const page = renderHtmlReport([fixtureReport([soak])], reportLibraries());
    console.log(
      `a day's soak (86,400 s, ${soak.okCount.toLocaleString('en-US')} images): ` +
        `report.html ${Buffer.byteLength(page)} bytes`,
    );
    expect(Buffer.byteLength(page)).toBeLessThan(MAX_PAGE_BYTES);
    for (const spec of specsOf(page).filter((s) => s.name.includes('over')))
      for (const d of spec.datasets) expect(d.data.length).toBe(1964);
  });
});
