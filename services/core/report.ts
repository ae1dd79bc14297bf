import type { SectionResult } from './section.js';
import { formatSize } from './size.js';

// One report object per run, rendered three ways: output.log text, the summary table printed at
// the end, and results.json. Renderers are pure functions of the report.

/** Version of results.json's shape; bump it when a field changes meaning or goes away. */
export const RESULTS_SCHEMA_VERSION = 1;

/** The two timing definitions, printed in output.log's header exactly as measured. */
export const TIMING_DEFINITIONS = [
  'Transmission time of image i = receiver monotonic clock when the last byte of image i is in hand − transmitter monotonic clock just before it started sending image i.',
  'Total transfer time of a transport = arrival of its last image − send start of its first (warm-up images excluded).',
] as const;

/** Facts about a run that do not depend on any transport. */
export interface RunInfo {
  startedAt: string;
  receiverHost: string;
  transmitterHost: string;
  nodeVersion: string;
  imageDescription: string;
  imageSizeBytes: number;
  imageCount: number;
  window: number;
  warmup: number;
  transports: readonly string[];
}

/** A whole run: its facts and one result per transport section, in run order. */
export interface RunReport {
  schemaVersion: typeof RESULTS_SCHEMA_VERSION;
  run: RunInfo;
  finishedAt: string;
  sections: SectionResult[];
}

const ms = (value: number | null): string => (value === null ? '-' : value.toFixed(3));

/** Title of a section: its label, "(baseline)" for the floor the others are compared against. */
export function sectionTitle(section: Pick<SectionResult, 'label' | 'baseline'>): string {
  return section.baseline ? `${section.label} (baseline)` : section.label;
}

/** True when every section of the run delivered every image intact. */
export function runSucceeded(report: Pick<RunReport, 'sections'>): boolean {
  return report.sections.length > 0 && report.sections.every((s) => s.ok);
}

function renderSection(section: SectionResult): string {
  const lines = [
    `=== ${sectionTitle(section)} performance test: ${section.imageCount} images transfer (${formatSize(section.imageSizeBytes)} each, window ${section.window}) ===`,
  ];
  for (const image of section.images) {
    if (image.timeMs === null) lines.push(`Image ${image.image}: LOST (never arrived)`);
    else if (image.status === 'corrupt') lines.push(`Image ${image.image} transmission time: ${ms(image.timeMs)} ms (CORRUPT: checksum or size mismatch)`);
    else lines.push(`Image ${image.image} transmission time: ${ms(image.timeMs)} ms`);
  }
  lines.push(section.totalMs === null ? 'Total transfer time: - (no image arrived)' : `Total transfer time: ${ms(section.totalMs)} ms`);
  const anomalies = [
    section.duplicateCount > 0 ? `${section.duplicateCount} duplicate frames` : '',
    section.outOfOrderCount > 0 ? `${section.outOfOrderCount} arrived out of order` : '',
    section.strayCount > 0 ? `${section.strayCount} stray frames` : '',
  ].filter(Boolean);
  if (anomalies.length > 0) lines.push(`Anomalies: ${anomalies.join(', ')}`);
  if (section.failure !== null) lines.push(`FAILED: ${section.failure}`);
  return lines.join('\n');
}

/** The summary table: one row per transport, failures shown in it. */
export function renderSummary(report: Pick<RunReport, 'sections'>): string {
  const header = ['Transport', 'OK', 'Lost', 'Corrupt', 'p50 ms', 'max ms', 'Total ms', 'MB/s', 'Result'];
  const rows = report.sections.map((s) => [
    sectionTitle(s),
    String(s.okCount),
    String(s.lostCount),
    String(s.corruptCount),
    ms(s.p50Ms),
    ms(s.maxMs),
    ms(s.totalMs),
    s.throughputMBps === null ? '-' : s.throughputMBps.toFixed(1),
    s.ok ? 'ok' : `FAILED${s.failure ? `: ${s.failure}` : ''}`,
  ]);
  const widths = header.map((h, col) => Math.max(h.length, ...rows.map((r) => r[col]!.length)));
  // Text columns left-aligned, numbers right-aligned; the last column is free text.
  const format = (cells: string[]): string =>
    cells
      .map((cell, col) => (col === cells.length - 1 ? cell : col === 0 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w, col) => '-'.repeat(col === widths.length - 1 ? header[col]!.length : w));
  return [format(header), format(rule), ...rows.map(format)].join('\n');
}

/** output.log: header, one section per transport, then the summary. */
export function renderOutputLog(report: RunReport): string {
  const { run } = report;
  const header = [
    'image-transfer-bench results',
    `Date: ${run.startedAt} (finished ${report.finishedAt})`,
    `Receiver host: ${run.receiverHost}; transmitter host: ${run.transmitterHost}`,
    `Node: ${run.nodeVersion}`,
    `Image: ${run.imageDescription}`,
    `Images per transport: ${run.imageCount} (${formatSize(run.imageSizeBytes)} each) after ${run.warmup} unrecorded warm-up images; window ${run.window}`,
    `Transports: ${run.transports.join(', ')}`,
    'Definitions:',
    ...TIMING_DEFINITIONS.map((d) => `  ${d}`),
    'Times are milliseconds; MB/s counts 10^6 bytes of intact images per second of total transfer time.',
  ].join('\n');
  const verdict = runSucceeded(report) ? 'Result: every transport delivered every image intact.' : 'Result: FAILED: at least one transport lost, corrupted or failed to deliver images (see above).';
  return [header, ...report.sections.map(renderSection), `=== Summary ===\n${renderSummary(report)}\n${verdict}`].join('\n\n') + '\n';
}

/** results.json: the same report, for tools, with every per-image time. */
export function renderResultsJson(report: RunReport): string {
  return JSON.stringify(report, null, 2) + '\n';
}
