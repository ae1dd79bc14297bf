import type { RunReport } from '../../services/core/report/report.js';
import { resultsSchemaErrors } from './results-schema.js';

// What the checks of a real deployment (compose-check, swarm-check) assert about a finished run.

/** Ends a check with its reason. */
export function fail(message: string): never {
  throw new Error(message);
}

/** results.json's text as a report; fails when it does not match its schema. */
export function parseReport(resultsJson: string): RunReport {
  const report = JSON.parse(resultsJson) as RunReport;
  const errors = resultsSchemaErrors(report);
  if (errors.length > 0) fail(`results.json does not match its schema:\n${errors.join('\n')}`);
  return report;
}

/** The run had exactly `names`, in that order, every one ok, and output.log says so. */
export function expectAllOk(report: RunReport, log: string, names: readonly string[]): void {
  const ran = report.transports.map((t) => t.transport);
  if (ran.join(',') !== names.join(',')) fail(`transports ${ran.join(',')}, expected ${names.join(',')}`);
  const notOk = report.transports.filter((t) => !t.ok);
  if (notOk.length > 0)
    fail(`not ok: ${notOk.map((t) => `${t.transport} (${t.failure ?? 'images lost or corrupt'})`).join(', ')}`);
  if (!log.includes('Result: every transport delivered every image intact.'))
    fail('output.log does not say every transport delivered every image intact');
}

/** "WebSocket 583.9 MB/s, gRPC …": each transport's median MB/s, for the check's log. */
export function throughputLine(report: RunReport): string {
  return report.transports
    .map((t) => {
      const mbps = t.medianSection === null ? null : report.sections[t.medianSection]?.throughputMBps;
      return `${t.label} ${mbps == null ? '-' : mbps.toFixed(1)} MB/s`;
    })
    .join(', ');
}
