import { describe, expect, it } from 'vitest';
import { compareRuns, renderComparison } from '../../services/core/report/compare.js';
import { escapeHtml } from '../../services/core/report/html/page.js';
import type { RunReport } from '../../services/core/report/report.js';
import {
  HEADLINE_SECTION_FIELDS,
  headlineOf,
  type HeadlineContext,
  type RunHeadline,
} from '../../services/core/report/runs-list.js';
import {
  renderComparePage,
  renderCompareRefusal,
  renderRunsPage,
  RUNS_PAGE_CSP,
} from '../../services/core/report/runs-page.js';
import { fixturePlan, fixtureReport, fixtureSection } from '../helpers/fixtures.js';

// The kept runs' page and the comparison page: pure functions of the runs' results.json.

const UNENDED = 'in progress: the run has not ended';
const CONTEXT: HeadlineContext = { openFolder: undefined, unendedStopReason: UNENDED };
const FOLDER_A = '20261123T080000Z-aaaaaa';
const FOLDER_B = '20261124T090000Z-bbbbbb';

/** A run of TCP (and WebSocket) whose median sections carry the given MB/s exactly. */
function run(startedAt: string, mbps: Record<string, number>, imageCount = 3): RunReport {
  const sections = Object.entries(mbps).map(([transport, value], i) => ({
    ...fixtureSection(
      fixturePlan({
        transport,
        label: transport === 'tcp' ? 'TCP' : 'WebSocket',
        baseline: transport === 'tcp',
        sectionId: i + 1,
      }),
      Array.from({ length: imageCount }, () => 1),
    ),
    throughputMBps: value,
  }));
  return fixtureReport(sections, { startedAt });
}

/** `report` as a DURATION=20s run writes it: no run-level count, each section's the images it sent. */
function byDuration(report: RunReport): RunReport {
  return {
    ...report,
    run: { ...report.run, imageCount: null, config: { ...report.run.config, durationMs: 20_000 } },
  };
}

describe('headlineOf', () => {
  it('gives a finished run its start, display names, median MB/s, settings and verdict', () => {
    const report = run('2026-11-23T08:00:00.000Z', { tcp: 123.456, websocket: 45.6 });
    expect(headlineOf(FOLDER_A, { ok: true, value: report }, CONTEXT)).toEqual({
      folder: FOLDER_A,
      state: 'finished',
      problem: null,
      startedAt: '2026-11-23T08:00:00.000Z',
      settings: ['3 images of 533.0 KiB', 'window 1', 'repeat 1', 'warm-up none (WARMUP=0: a cold run)', 'closed loop'],
      transports: [
        { transport: 'tcp', title: 'TCP (baseline)', throughputMBps: 123.456, indicative: true, ok: true },
        { transport: 'websocket', title: 'WebSocket', throughputMBps: 45.6, indicative: true, ok: true },
      ],
      verdict: { ok: true, text: 'every image intact' },
    } satisfies RunHeadline);
  });

  it('needs of each section only HEADLINE_SECTION_FIELDS, which is all the receiver keeps of them', () => {
    const report = run('2026-11-23T08:00:00.000Z', { tcp: 12, websocket: 3 });
    const failedSection = { ...report, sections: [report.sections[0]!, { ...report.sections[1]!, ok: false }] };
    for (const full of [report, failedSection]) {
      const kept = {
        ...full,
        sections: full.sections.map((s) => Object.fromEntries(HEADLINE_SECTION_FIELDS.map((f) => [f, s[f]]))),
      };
      expect(headlineOf(FOLDER_A, { ok: true, value: kept }, CONTEXT)).toEqual(
        headlineOf(FOLDER_A, { ok: true, value: full }, CONTEXT),
      );
    }
  });

  it('gives a DURATION run what each transport sent once it has ended, and "for 20s" alone while it goes on', () => {
    const report = byDuration(run('2026-11-23T08:00:00.000Z', { tcp: 12, websocket: 3 }));
    const settings = (value: RunReport, context = CONTEXT): string[] =>
      headlineOf(FOLDER_A, { ok: true, value }, context).settings;
    expect(settings(report)).toEqual([
      '533.0 KiB images for 20s (3 sent per transport)',
      'window 1',
      'repeat 1',
      'warm-up none (WARMUP=0: a cold run)',
      'closed loop',
    ]);
    const open = { ...report, stopReason: UNENDED };
    expect(settings(open, { ...CONTEXT, openFolder: FOLDER_A })[0]).toBe('533.0 KiB images for 20s');
    // A file written before the run's count was null under DURATION: IMAGE_COUNT's unused default there.
    expect(settings({ ...report, run: { ...report.run, imageCount: 10 } })[0]).toBe(
      '533.0 KiB images for 20s (3 sent per transport)',
    );
    // All the receiver keeps of each section is enough.
    const kept = {
      ...report,
      sections: report.sections.map((s) => Object.fromEntries(HEADLINE_SECTION_FIELDS.map((f) => [f, s[f]]))),
    };
    expect(settings(kept as unknown as RunReport)[0]).toBe('533.0 KiB images for 20s (3 sent per transport)');
  });

  it('says what failed: counts lost and corrupt, the first failure, why the run stopped', () => {
    const report = run('2026-11-23T08:00:00.000Z', { tcp: 1 });
    const failed: RunReport = {
      ...report,
      stopReason: 'transmitter went away',
      transports: [{ ...report.transports[0]!, ok: false, lostCount: 2, corruptCount: 1, failure: 'timed out' }],
    };
    expect(headlineOf(FOLDER_A, { ok: true, value: failed }, CONTEXT).verdict).toEqual({
      ok: false,
      text: 'FAILED: 2 lost, 1 corrupt; timed out; transmitter went away',
    });
  });

  it('tells the run open in this receiver from one whose receiver stopped in it', () => {
    const open = { ...run('2026-11-23T08:00:00.000Z', { tcp: 1 }), stopReason: UNENDED };
    const context = { ...CONTEXT, openFolder: FOLDER_A };
    expect(headlineOf(FOLDER_A, { ok: true, value: open }, context)).toMatchObject({
      state: 'in-progress',
      verdict: null,
    });
    expect(headlineOf(FOLDER_B, { ok: true, value: open }, context)).toMatchObject({
      state: 'not-ended',
      verdict: null,
    });
  });

  it.each([
    [
      'a read that failed',
      { ok: false as const, problem: 'not valid JSON (Unexpected end)' },
      'not valid JSON (Unexpected end)',
    ],
    ['an array', { ok: true as const, value: [] }, 'not a results.json (expected a JSON object)'],
    [
      'another schema version',
      { ok: true as const, value: { schemaVersion: 3 } },
      'schemaVersion 3, this tool reads schemaVersion 7 only (a results.json from another version of ' +
        'image-transfer-bench)',
    ],
    [
      'a run without its settings',
      { ok: true as const, value: { schemaVersion: 7, run: { startedAt: 5 }, sections: [], transports: [] } },
      'partial: run.startedAt, run.imageCount, run.imageSizeBytes, run.window, run.repeat, run.transports, ' +
        'run.warmup missing',
    ],
    [
      'a summary that is not an object',
      { ok: true as const, value: { ...run('2026-11-23T08:00:00.000Z', { tcp: 1 }), transports: [null] } },
      'partial: a transport summary is not an object',
    ],
  ])('lists %s as unreadable, saying why', (_name, read, problem) => {
    expect(headlineOf(FOLDER_A, read, CONTEXT)).toEqual({
      folder: FOLDER_A,
      state: 'unreadable',
      problem,
      startedAt: null,
      settings: [],
      transports: [],
      verdict: null,
    });
  });
});

describe('renderRunsPage', () => {
  const hostile = run('2026-11-23T08:00:00.000Z', { tcp: 10 });
  hostile.transports[0]!.label = '<script>alert(1)</script>';
  const listed = [
    headlineOf(FOLDER_B, { ok: true, value: hostile }, CONTEXT),
    headlineOf(FOLDER_A, { ok: false, problem: 'not valid JSON (<b>)' }, CONTEXT),
  ];
  const html = renderRunsPage(listed, 2, 200);

  it('escapes everything from a file, links the report of a finished run only, lists an unreadable one', () => {
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<b>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt; (baseline)</span> ~10.0 MB/s');
    expect(html).toContain(`<a href="/runs/${FOLDER_B}/report.html">report</a>`);
    expect(html).not.toContain(`/runs/${FOLDER_A}/report.html`);
    expect(html).toContain('results.json unreadable: not valid JSON (&lt;b&gt;)');
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="${escapeHtml(RUNS_PAGE_CSP)}">`);
    expect(html).toContain('@media (prefers-color-scheme: dark)');
  });

  it('offers only readable runs for comparison, and says how many of how many it lists', () => {
    expect(html).toContain('Two readable runs are needed for a comparison.');
    const third = headlineOf(
      '20261122T070000Z-cccccc',
      { ok: true, value: run('2026-11-22T07:00:00.000Z', {}) },
      CONTEXT,
    );
    const form = renderRunsPage([...listed, third], 3, 200);
    expect(form).toContain(`<option value="${FOLDER_B}">`);
    // The second newest is before, the newest after, by default.
    expect(form).toContain('<option value="20261122T070000Z-cccccc" selected>');
    expect(form).toContain(`<option value="${FOLDER_B}" selected>`);
    expect(form).not.toContain(`<option value="${FOLDER_A}"`);
    expect(renderRunsPage(listed, 250, 200)).toContain('Newest first: the newest 2 of 250 (at most 200 are listed).');
  });
});

describe('renderComparePage', () => {
  const before = run('2026-11-23T08:00:00.000Z', { tcp: 100, websocket: 50 });
  const after = run('2026-11-24T09:00:00.000Z', { tcp: 120, websocket: 40 }, 5);
  after.run.window = 4;
  after.run.hosts.receiver.libraries = { ws: '<8.18>' };
  const html = renderComparePage({ folder: FOLDER_A, report: before }, { folder: FOLDER_B, report: after }, []);

  it('shows the settings that differ first, marked, under the warning of npm run compare', () => {
    const rows = [...html.matchAll(/<tr( class="differs")?><th>([^<]+)<\/th><td>/g)].map((m) => [m[2], !!m[1]]);
    expect(rows.slice(0, 4)).toEqual([
      ['IMAGE_COUNT', true],
      ['WINDOW', true],
      ['ws', true],
      ['RATE', false],
    ]);
    expect(html).toContain(
      '<p class="warning">Warning: the runs differ in these settings; a change may come from them rather than from ' +
        'the code: IMAGE_COUNT, WINDOW, ws.</p>',
    );
    expect(html).toContain('<td>8.23.0</td><td>&lt;8.18&gt;</td>');
  });

  it('gives one line per run and transport, the change and its mark on the after line', () => {
    expect(html).toContain(
      '<tr><th rowspan="2">TCP (baseline)</th><td>before · 2026-11-23 08:00:00 UTC</td>' +
        '<td class="number">1.000</td><td class="number">-</td><td class="number">100.0</td>',
    );
    expect(html).toContain(
      '<tr><td>after · 2026-11-24 09:00:00 UTC</td><td class="number">1.000<span class="change">+0.000 (+0.0%) ' +
        'same ?</span></td><td class="number">-<span class="change">-</span></td>' +
        '<td class="number">120.0<span class="change">+20.0 (+20.0%) faster ?</span></td></tr>',
    );
    expect(html).toContain('<td class="number">40.0<span class="change">−10.0 (−20.0%) slower ?</span></td>');
  });

  it('carries npm run compare’s own text, escaped', () => {
    const text = renderComparison(compareRuns(before, after), before, after);
    expect(html).toContain(`<pre>${escapeHtml(text)}</pre>`);
  });

  it('says when the runs share every setting, without the warning', () => {
    const same = renderComparePage({ folder: FOLDER_A, report: before }, { folder: FOLDER_B, report: before }, []);
    expect(same).toContain('The runs share every setting compared.');
    expect(same).not.toContain('class="warning"');
  });

  it('gives no change between a closed-loop and a RATE run, saying why', () => {
    const atRate: RunReport = {
      ...after,
      run: { ...after.run, config: { ...after.run.config, ratePerSecond: 30 } },
      sections: after.sections.map((s) => ({ ...s, ratePerSecond: 30, frameAge: s.latency })),
    };
    const page = renderComparePage({ folder: FOLDER_A, report: before }, { folder: FOLDER_B, report: atRate }, []);
    expect(page).toContain('<td class="number">120.0<span class="change">not comparable</span></td>');
    expect(page).toContain('<td rowspan="2">not comparable: closed loop vs RATE 30/s</td>');
    expect(page).toContain('<tr class="differs"><th>RATE</th><td>unset (closed loop)</td><td>30/s</td></tr>');
    expect(page).not.toMatch(/%\)/);
  });

  it('refuses with the reason escaped', () => {
    expect(renderCompareRefusal('no <run>', [])).toContain('<p class="failed">no &lt;run&gt;</p>');
  });
});
