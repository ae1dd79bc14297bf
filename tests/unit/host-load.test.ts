import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  hostBusySigns,
  hostLoadBetween,
  ownCpuMsOnHost,
  parseProcStat,
  sectionHostLoad,
  transmitterOnHostOf,
  type HostLoad,
  type HostLoadReading,
  type ProcStatCpuTicks,
} from '../../services/core/model/host-load.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { hostLoadRunText, hostLoadSectionText, hostLoadWarnings } from '../../services/core/report/host-load-text.js';
import { renderHtmlReport } from '../../services/core/report/html-report.js';
import { renderHostLoadLines, renderOutputLog } from '../../services/core/report/text/output-log.js';
import { readHostLoad, readHostLoadAfterThisTurn } from '../../services/shared/host-load-reading.js';
import { reportLibraries } from '../../services/shared/report-assets.js';
import { fixtureCost, fixturePlan, fixtureReport, fixtureSection } from '../helpers/fixtures.js';

// The host's load over a section: /proc/stat parsed, the shares between two readings, this run's own CPU told apart
// from other processes', the warning rule, and the lines both headers show.

/** /proc/stat of a 2-CPU guest, as Linux 6.x writes it (guest and guest_nice after steal). */
const PROC_STAT = `cpu  18981 0 7377 68450 223 0 136 17 0 0
cpu0 9304 0 3502 34747 24 0 41 8 0 0
cpu1 9677 0 3875 33703 199 0 94 9 0 0
intr 1094043 0 0 0 0 0 0 0 0
ctxt 1796651
btime 1764000000
processes 12755
procs_running 2
procs_blocked 0
softirq 401222 0 91021 12 3501 0 0 88 10200 0 298400
`;

const START_TICKS: ProcStatCpuTicks = {
  user: 1000,
  nice: 0,
  system: 500,
  idle: 8000,
  iowait: 40,
  irq: 0,
  softirq: 20,
  steal: 5,
};

/** START_TICKS grown by `delta`, as a reading `atMs` later on a host of `cores`. */
function reading(
  atMs: number,
  delta: Partial<ProcStatCpuTicks>,
  loadAverage1m: number | null = 1.5,
  cores = 2,
): HostLoadReading {
  const cpu = { ...START_TICKS };
  for (const [name, ticks] of Object.entries(delta)) cpu[name as keyof ProcStatCpuTicks] += ticks;
  return { atMs, loadAverage1m, stat: { cpu, cpus: cores }, cores };
}

const START = reading(1000, {}, 0.5);

/**
 * 2 s on 2 CPUs (400 ticks): 160 ticks in processes (1,600 ms), 10 in interrupts, 190 idle, 20 stolen, 20 never
 * accounted.
 */
const BUSY_END = reading(3000, {
  user: 100,
  nice: 10,
  system: 50,
  idle: 180,
  iowait: 10,
  irq: 2,
  softirq: 8,
  steal: 20,
});

/** 2 s on 2 CPUs: 30 ticks in processes (300 ms), 2 in interrupts, 366 idle, 2 never accounted. */
const QUIET_END = reading(3000, { user: 20, system: 10, idle: 364, iowait: 2, softirq: 2 }, 0.75);

/** A host load with every figure quiet, to change one at a time. */
const QUIET: HostLoad = {
  transmitterOnHost: true,
  cores: 2,
  loadAverage1mStart: 0.5,
  loadAverage1mEnd: 0.75,
  spanMs: 2000,
  hostBusyShare: 0.08,
  stealShare: 0,
  unaccountedShare: 0.005,
  otherProcessesCores: 0.01,
};

describe('parseProcStat', () => {
  it('reads the cpu line up to steal and counts the CPUs', () => {
    expect(parseProcStat(PROC_STAT)).toEqual({
      cpu: { user: 18981, nice: 0, system: 7377, idle: 68450, iowait: 223, irq: 0, softirq: 136, steal: 17 },
      cpus: 2,
    });
  });

  it.each([
    ['no steal column (Linux before 2.6.11)', 'cpu  1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\n'],
    ['a column that is not a count', 'cpu  1 2 3 4 5 6 7 x\ncpu0 1 2 3 4 5 6 7 8\n'],
    ['a negative column', 'cpu  1 2 3 -4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n'],
    ['no cpuN line', 'cpu  1 2 3 4 5 6 7 8\n'],
    ['no cpu line', 'cpu0 1 2 3 4 5 6 7 8\nintr 5\n'],
    ['nothing', ''],
  ])('gives null for %s', (_, text) => {
    expect(parseProcStat(text)).toBeNull();
  });
});

describe('hostLoadBetween', () => {
  it("gives the shares of the CPUs' time, steal and unaccounted apart, and the others' CPU in cores", () => {
    // 1,600 ms in processes less this run's 600 ms, over 2,000 ms.
    expect(hostLoadBetween(START, BUSY_END, 600, true)).toEqual({
      transmitterOnHost: true,
      cores: 2,
      loadAverage1mStart: 0.5,
      loadAverage1mEnd: 1.5,
      spanMs: 2000,
      hostBusyShare: 0.425,
      stealShare: 0.05,
      unaccountedShare: 0.05,
      otherProcessesCores: 0.5,
    });
    expect(hostLoadBetween(START, QUIET_END, 280, true)).toEqual(QUIET);
  });

  it('counts no other process below zero when the run measured more CPU than the host accounted', () => {
    expect(hostLoadBetween(START, QUIET_END, 900, false).otherProcessesCores).toBe(0);
  });

  it('leaves the others out when the run’s own CPU is not known, the rest stays', () => {
    expect(hostLoadBetween(START, BUSY_END, null, null)).toMatchObject({
      transmitterOnHost: null,
      hostBusyShare: 0.425,
      otherProcessesCores: null,
    });
  });

  it('gives the load average alone without /proc (macOS), and nothing at all without either', () => {
    const noProc = (atMs: number, load: number | null): HostLoadReading => ({
      atMs,
      loadAverage1m: load,
      stat: null,
      cores: load === null ? null : 8,
    });
    expect(hostLoadBetween(noProc(0, 2.5), noProc(1500, 3.25), 100, true)).toEqual({
      transmitterOnHost: true,
      cores: 8,
      loadAverage1mStart: 2.5,
      loadAverage1mEnd: 3.25,
      spanMs: null,
      hostBusyShare: null,
      stealShare: null,
      unaccountedShare: null,
      otherProcessesCores: null,
    });
    expect(hostBusySigns(hostLoadBetween(noProc(0, null), noProc(1500, null), 100, true))).toEqual([]);
  });

  it('gives no shares when the counters went back (another boot) or no time passed', () => {
    const back = reading(3000, { user: -1 });
    expect(hostLoadBetween(START, back, 0, true).hostBusyShare).toBeNull();
    expect(hostLoadBetween(START, reading(1000, { user: 5 }), 0, true).stealShare).toBeNull();
  });
});

describe("this run's own CPU on the receiver's host", () => {
  const broker = { ...fixtureCost.receiver, cpuMs: 2 };
  it.each([
    ['receiver and transmitter on one kernel', fixtureCost, true, false, 1, 7],
    ['the receiver alone when the transmitter is on another host', fixtureCost, false, false, 1, 3],
    ['and the broker the transport goes through', { ...fixtureCost, broker }, true, true, 1, 9],
    ['none when the broker went unmeasured', fixtureCost, true, true, 1, null],
    ['none when other receivers may share the host', fixtureCost, true, false, 3, null],
    [
      'none when the transmitter on this host went unmeasured',
      { ...fixtureCost, transmitter: null },
      true,
      false,
      1,
      null,
    ],
    [
      'the receiver alone when the unmeasured transmitter ran elsewhere',
      { ...fixtureCost, transmitter: null },
      false,
      false,
      1,
      3,
    ],
    ['none when the receiver went unmeasured', { ...fixtureCost, receiver: null }, false, false, 1, null],
    ['none when whether the transmitter shared the host is unknown', fixtureCost, null, false, 1, null],
  ] as const)('%s', (_, cost, transmitterOnHost, throughBroker, receivers, cpuMs) => {
    expect(ownCpuMsOnHost(cost, { transmitterOnHost, throughBroker, receivers })).toBe(cpuMs);
  });

  it('takes the transmitter to be on this host when its clock offset was not applied (one kernel)', () => {
    const estimate = { offsetNs: 0, uncertaintyNs: 1000, roundTripNs: 2000, samples: 8 };
    expect(transmitterOnHostOf({ clock: { ...estimate, applied: false } })).toBe(true);
    expect(transmitterOnHostOf({ clock: { ...estimate, applied: true } })).toBe(false);
    expect(transmitterOnHostOf({ clock: null })).toBeNull();
  });

  it("makes a section's host load from its readings, cost and plan; none for a section that never measured", () => {
    const section = { cost: fixtureCost, clock: null, receivers: 1 };
    expect(sectionHostLoad(undefined, BUSY_END, section, false)).toBeNull();
    const clock = { offsetNs: 0, uncertaintyNs: 1000, roundTripNs: 2000, samples: 8, applied: false };
    // 1,600 ms in processes less the receiver's 3 and the transmitter's 4, over 2,000 ms.
    expect(sectionHostLoad(START, BUSY_END, { ...section, clock }, false)).toMatchObject({
      transmitterOnHost: true,
      otherProcessesCores: 0.7965,
    });
    expect(sectionHostLoad(START, BUSY_END, section, false)).toMatchObject({
      transmitterOnHost: null,
      otherProcessesCores: null,
    });
  });
});

describe('hostBusySigns: when the host was busy enough to move the figures', () => {
  it.each([
    ['a quiet host', {}, []],
    ['steal and unaccounted time together at 5 %', { stealShare: 0.03, unaccountedShare: 0.02 }, ['stolen']],
    ['stolen time just under 5 %', { stealShare: 0.0499, unaccountedShare: 0 }, []],
    ['other processes at a quarter core', { otherProcessesCores: 0.25 }, ['otherProcesses']],
    ['other processes just under it', { otherProcessesCores: 0.2499 }, []],
    ['both', { stealShare: 0.2, otherProcessesCores: 1.1 }, ['stolen', 'otherProcesses']],
    ['a span under a second, whatever its shares', { spanMs: 999, stealShare: 0.5, otherProcessesCores: 1 }, []],
    // Without the others' figure, the load average says whether tasks outnumbered CPUs.
    [
      'a load average over the cores, the others unknown',
      { otherProcessesCores: null, loadAverage1mEnd: 2.01 },
      ['loadAverage'],
    ],
    ['a load average at the cores, the others unknown', { otherProcessesCores: null, loadAverage1mEnd: 2 }, []],
    ['a load average over the cores, the others known and few', { loadAverage1mEnd: 3 }, []],
    ['a load average over the cores in a short span', { spanMs: 500, loadAverage1mStart: 4 }, ['loadAverage']],
  ] as const)('%s', (_, change, figures) => {
    expect(hostBusySigns({ ...QUIET, ...change }).map((s) => s.figure)).toEqual(figures);
  });

  it('gives the value and the limit of each', () => {
    expect(hostBusySigns(hostLoadBetween(START, BUSY_END, 600, true))).toEqual([
      { figure: 'stolen', value: 0.1, limit: 0.05 },
      { figure: 'otherProcesses', value: 0.5, limit: 0.25 },
    ]);
    expect(hostBusySigns({ ...QUIET, otherProcessesCores: null, loadAverage1mStart: 2.5 })).toEqual([
      { figure: 'loadAverage', value: 2.5, limit: 2 },
    ]);
  });
});

/** A TCP (baseline) and a gRPC section with these host loads. */
function sections(tcp: HostLoad | null | undefined, grpc: HostLoad | null | undefined, repeat = 1): SectionResult[] {
  const of = (transport: string, label: string, load: HostLoad | null | undefined): SectionResult => ({
    ...fixtureSection(fixturePlan({ transport, label, baseline: transport === 'tcp', repeat }), [1, 1], null),
    ...(load === undefined ? {} : { hostLoad: load }),
  });
  return [of('tcp', 'TCP', tcp), of('grpc', 'gRPC', grpc)];
}

const BUSY = hostLoadBetween(START, BUSY_END, 600, true);

describe("the host load's lines", () => {
  it('gives the range over the sections and whose host it is', () => {
    expect(hostLoadRunText(sections(QUIET, BUSY))).toBe(
      '1-minute load average 0.50–1.50, CPUs busy 8.0–42.5 %, steal 0.0–5.0 %, unaccounted 0.5–5.0 %, other ' +
        "processes 0.01–0.50 cores (the receiver's host, shared with the transmitter on one kernel, 2 CPUs; over 2 " +
        "sections' measured spans)",
    );
    const remote = { ...QUIET, transmitterOnHost: false };
    expect(hostLoadRunText(sections(remote, undefined))).toBe(
      '1-minute load average 0.50–0.75, CPUs busy 8.0 %, steal 0.0 %, unaccounted 0.5 %, other processes 0.01 ' +
        "cores (the receiver's host only, the transmitter's (another kernel) not measured, 2 CPUs; over the " +
        "section's measured span)",
    );
    expect(hostLoadRunText(sections({ ...QUIET, transmitterOnHost: null }, QUIET))).toContain(
      "(the receiver's host, whether the transmitter shared it not known, 2 CPUs;",
    );
  });

  it('says when the host load was not recorded, or this system gives none of it', () => {
    expect(hostLoadRunText(sections(undefined, null))).toBe('not recorded');
    const none: HostLoad = {
      ...QUIET,
      cores: null,
      loadAverage1mStart: null,
      loadAverage1mEnd: null,
      spanMs: null,
      hostBusyShare: null,
      stealShare: null,
      unaccountedShare: null,
      otherProcessesCores: null,
    };
    expect(hostLoadRunText(sections(none, none))).toBe('not available on this system (no /proc, no load average)');
  });

  it("gives a section's own figures on one line", () => {
    expect(hostLoadSectionText(BUSY)).toBe(
      '1-minute load average 0.50 → 1.50 on 2 CPUs, CPUs busy 42.5 %, steal 5.0 %, unaccounted 5.0 %, other ' +
        'processes 0.50 cores over 2.000 s',
    );
    expect(hostLoadSectionText({ ...QUIET, otherProcessesCores: null })).toContain(
      ', other processes - (not told apart) over 2.000 s',
    );
  });

  it('warns once per figure, naming its worst value, the sections and what it means', () => {
    const alsoBusy = { ...BUSY, stealShare: 0.1, otherProcessesCores: 0.3 };
    expect(hostLoadWarnings(sections(alsoBusy, BUSY, 2))).toEqual([
      "HOST BUSY: up to 15.0 % of the CPUs' time was stolen (steal + unaccounted; this warns from 5 %) during TCP " +
        "(baseline) repeat 2, gRPC repeat 2: the hypervisor ran something else while this guest's clock ran on, so " +
        'the times hold waits no transport caused. When two runs disagree, look here first: their times moved with ' +
        'the host, not the transport.',
      'HOST BUSY: other processes used up to 0.50 of a core (this warns from 0.25) during TCP (baseline) repeat 2, ' +
        'gRPC repeat 2: they ran on the CPUs this run wanted, so its images could wait for a core. When two runs ' +
        'disagree, look here first: their times moved with the host, not the transport.',
    ]);
    expect(hostLoadWarnings(sections({ ...QUIET, otherProcessesCores: null, loadAverage1mEnd: 3.5 }, QUIET))).toEqual([
      'HOST BUSY: the 1-minute load average reached 3.50 on 2 CPUs during TCP (baseline): more tasks wanted a CPU ' +
        "than there were (this run's own among them: other processes could not be told apart). When two runs " +
        'disagree, look here first: their times moved with the host, not the transport.',
    ]);
    expect(hostLoadWarnings(sections(QUIET, QUIET))).toEqual([]);
    expect(hostLoadWarnings(sections(undefined, null))).toEqual([]);
  });

  it('names four sections in a warning and counts the rest', () => {
    const many = [...sections(BUSY, BUSY), ...sections(BUSY, BUSY), ...sections(BUSY, QUIET)];
    expect(hostLoadWarnings(many)[1]).toContain('during TCP (baseline), gRPC, TCP (baseline), gRPC and 1 more:');
  });
});

describe("the headers' host load", () => {
  it("puts the range and the warnings above output.log's verdict (its header is written before any section)", () => {
    const report = fixtureReport(sections(QUIET, BUSY));
    expect(renderHostLoadLines(report.sections)).toEqual([
      `Host load: ${hostLoadRunText(report.sections)}`,
      ...hostLoadWarnings(report.sections),
    ]);
    expect(renderHostLoadLines(report.sections)).toHaveLength(3);
    const text = renderOutputLog(report);
    expect(text).toMatch(/\nReceiver host: [^\n]*\nHost load: read on the receiver's host over each section/);
    expect(text).toMatch(
      /\nHost load: 1-minute load average 0\.50–1\.50, [^\n]*\nHOST BUSY: up[^\n]*\n(HOST BUSY[^\n]*\n)?Result: /,
    );
  });

  it("puts a Host load fact and a warning under the verdict in report.html's header", () => {
    const report = fixtureReport(sections(QUIET, BUSY));
    const page = renderHtmlReport([report], reportLibraries());
    expect(page).toContain(
      '<tr><th scope="row">Host load</th><td>1-minute load average 0.50–1.50, CPUs busy 8.0–42.5 %, ',
    );
    const warnings = [...page.matchAll(/<p class="verdict busy">([^<]*)<\/p>/g)].map((m) => m[1]);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatch(/^HOST BUSY: other processes used up to 0\.50 of a core /);
    expect(renderHtmlReport([fixtureReport(sections(QUIET, QUIET))], reportLibraries())).not.toContain('verdict busy');
  });

  it('flags the Host load fact of two runs that differ, and warns for the busy one by name', () => {
    const before = fixtureReport(sections(QUIET, QUIET));
    const after = fixtureReport(sections(QUIET, BUSY), { startedAt: '2026-11-24T08:00:00.000Z' });
    const page = renderHtmlReport([before, after], reportLibraries());
    expect(page).toContain('<tr class="differs"><th scope="row">Host load <span class="tag">differs</span>');
    expect(page).toMatch(/<p class="verdict busy">After: HOST BUSY: /);
    expect(page).not.toMatch(/<p class="verdict busy">Before: /);
  });
});

describe('readHostLoad', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'host-load-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the CPU totals of a /proc/stat and the load average', () => {
    const file = path.join(dir, 'stat');
    writeFileSync(file, PROC_STAT);
    const now = readHostLoad(file);
    expect(now.stat).toEqual(parseProcStat(PROC_STAT));
    expect(now.cores).toBe(2);
    expect(now.atMs).toBeGreaterThan(0);
    expect(now.loadAverage1m === null || now.loadAverage1m >= 0).toBe(true);
  });

  it('gives null CPU figures without /proc (macOS), never an error', async () => {
    const missing = path.join(dir, 'no-such-stat');
    expect(readHostLoad(missing).stat).toBeNull();
    expect(readHostLoad(missing).cores).toBeGreaterThan(0);
    expect((await readHostLoadAfterThisTurn(missing)).stat).toBeNull();
  });

  it("reads this host's /proc/stat where there is one", () => {
    const now = readHostLoad();
    if (!existsSync('/proc/stat')) expect(now.stat).toBeNull();
    else expect(now.stat?.cpus).toBeGreaterThan(0);
  });
});
