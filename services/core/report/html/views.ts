import type { SectionResult } from '../../model/section.js';
import type { RunReport, TransportSummary } from '../report.js';
import { sectionTitle } from '../wording.js';

// What every part of the page draws from: each run in its role, each transport across the runs
// with its colour, and the facts that decide which columns and bars appear.

/** Which run of the page a run is: the only one, or the before or after of a pair. */
export type RunRole = 'only' | 'before' | 'after';

// One colour per transport of a TRANSPORTS=all run (thirteen besides the baseline): Tableau 10 without
// its red (red means failure on this page) and its grey (the baseline's), then four of Tableau 20's
// darker shades and a dark olive. The baseline is neutral grey.
/** The transports' colours in order, shared by report.html and the live page. */
export const TRANSPORT_COLORS = [
  '#4e79a7',
  '#f28e2b',
  '#59a14f',
  '#b07aa1',
  '#76b7b2',
  '#edc948',
  '#9c755f',
  '#ff9da7',
  '#2c5f8a',
  '#a0522d',
  '#3d7a36',
  '#17becf',
  '#8c6d31',
];
/** The baseline's colour. */
export const BASELINE_COLOR = '#6f7782';

/** A run as the page shows it. */
export interface RunView {
  report: RunReport;
  role: RunRole;
  /** "Before", "After", or "" for a lone run. */
  name: string;
}

/** One transport in one run. */
export interface TransportInRun {
  summary: TransportSummary;
  /** The median completed repeat, the only source of figures (table, bars); undefined when no repeat completed. */
  median: SectionResult | undefined;
  /**
   * What the line charts draw: the median, or with no completed repeat the last repeat with any
   * arrival, so a failure can still be diagnosed from its times.
   */
  drawn: SectionResult | undefined;
}

/** One transport across the runs shown, with its title and colour. */
export interface TransportView {
  key: string;
  title: string;
  color: string;
  /** Aligned with the run views; undefined where that run did not include the transport. */
  perRun: (TransportInRun | undefined)[];
}

/** The runs in their roles: one alone, or before then after. */
export function runViewsOf(runs: readonly RunReport[]): RunView[] {
  if (runs.length === 1) return [{ report: runs[0]!, role: 'only', name: '' }];
  return [
    { report: runs[0]!, role: 'before', name: 'Before' },
    { report: runs[1]!, role: 'after', name: 'After' },
  ];
}

function medianOf(report: RunReport, summary: TransportSummary): SectionResult | undefined {
  return summary.medianSection === null ? undefined : report.sections[summary.medianSection];
}

function transportInRun(report: RunReport, summary: TransportSummary): TransportInRun {
  const median = medianOf(report, summary);
  const lastArrived = [...report.sections]
    .reverse()
    .find((s) => s.transport === summary.transport && s.okCount + s.corruptCount > 0);
  return { summary, median, drawn: median ?? lastArrived };
}

/** One image's record as files written before per-second series held it inline (SectionResult.images then). */
export interface LegacyImageRecord {
  timeMs: number | null;
  status: 'ok' | 'corrupt' | 'lost';
}

/** A section as any results.json of this schema may hold it: with every image's record (older files) or not. */
type StoredSection = Omit<SectionResult, 'images'> & { images?: readonly LegacyImageRecord[] };

/** The per-image records of a section from an older file; undefined in a file that keeps them apart. */
export function legacyImages(section: SectionResult): readonly LegacyImageRecord[] | undefined {
  return (section as StoredSection).images;
}

/** A run as the page carries it: its sections without per-image records and per-second series. */
export function withoutBulk(report: RunReport): unknown {
  return {
    ...report,
    sections: report.sections.map((section) => {
      const { images: _images, series: _series, ...rest } = section as StoredSection;
      return rest;
    }),
  };
}

/** True when the figures to show include a broker's cost, in any run: the broker's bars and column appear only then. */
export function hasBroker(transports: readonly TransportView[]): boolean {
  return transports.some((t) => t.perRun.some((r) => (r?.median?.cost.broker ?? null) !== null));
}

/** True when any run shown split a one-way time at a broker's stamp: the split's columns appear only then. */
export function hasBrokerSplit(transports: readonly TransportView[]): boolean {
  return transports.some((t) => t.perRun.some((r) => (r?.median?.brokerSplit ?? null) !== null));
}

/** True when any run shown crossed two clocks (two kernels): the clock-error column appears only then. */
export function hasTwoClocks(transports: readonly TransportView[]): boolean {
  return transports.some((t) => t.perRun.some((r) => (r?.median?.oneWayClockErrorMs ?? null) !== null));
}

/** True when any run shown had several clients: the fairness columns appear only then. */
export function hasClients(transports: readonly TransportView[]): boolean {
  return transports.some((t) => t.perRun.some((r) => (r?.drawn?.clientFairness ?? null) !== null));
}

/** True when any run shown was open-loop (RATE): its columns appear only then. */
export function hasOpenLoop(transports: readonly TransportView[]): boolean {
  return transports.some((t) => t.perRun.some((r) => (r?.drawn?.openLoop ?? null) !== null));
}

/** Every transport of either run, the latest run's order first; colours follow that order. */
export function transportViewsOf(views: readonly RunView[]): TransportView[] {
  const keys: string[] = [];
  for (const view of [...views].reverse())
    for (const t of view.report.transports) if (!keys.includes(t.transport)) keys.push(t.transport);
  let colorIndex = 0;
  return keys.map((key) => {
    const perRun = views.map((view): TransportInRun | undefined => {
      const summary = view.report.transports.find((t) => t.transport === key);
      return summary === undefined ? undefined : transportInRun(view.report, summary);
    });
    const latest = [...perRun].reverse().find((r) => r !== undefined)!.summary;
    const color = latest.baseline ? BASELINE_COLOR : TRANSPORT_COLORS[colorIndex++ % TRANSPORT_COLORS.length]!;
    return { key, title: sectionTitle(latest), color, perRun };
  });
}

/** A colour given as #rrggbb, with an alpha. */
export function withAlpha(hex: string, alpha: number): string {
  const n = Number.parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

/** Why a transport is not ok: its failure, or what went missing when nothing failed outright. */
export function failureReason(summary: TransportSummary, report: RunReport): string {
  if (summary.failure !== null) return summary.failure;
  const own = report.sections.filter((s) => s.transport === summary.transport);
  const duplicates = own.reduce((n, s) => n + s.duplicateCount, 0);
  const strays = own.reduce((n, s) => n + s.strayCount, 0);
  const parts = [
    summary.lostCount > 0 ? `${summary.lostCount} lost` : '',
    summary.corruptCount > 0 ? `${summary.corruptCount} corrupt` : '',
    duplicates > 0 ? `${duplicates} duplicate frames` : '',
    strays > 0 ? `${strays} stray frames` : '',
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(', ') : 'not every image arrived intact';
}
