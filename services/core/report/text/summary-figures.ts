import type { SectionResult } from '../../model/section.js';
import type { RunReport, TransportSummary } from '../report.js';

// What every summary table reads of a run: each transport's median section, and a figure of it.

/** The figures the summary tables are drawn from. */
export interface SummaryFigures {
  report: Pick<RunReport, 'sections' | 'transports'>;
  /** The transport's median section; undefined when it has none (no repeat completed). */
  median(t: TransportSummary): SectionResult | undefined;
  /** A figure of the median section, else of the transport's first (a failed one has no median). */
  figureOf<K extends 'openLoop' | 'clientFairness' | 'fanOut' | 'commands'>(
    t: TransportSummary,
    key: K,
  ): SectionResult[K] | undefined;
}

/** The summary's figures of `report`. */
export function summaryFigures(report: Pick<RunReport, 'sections' | 'transports'>): SummaryFigures {
  const median = (t: TransportSummary): SectionResult | undefined =>
    t.medianSection === null ? undefined : report.sections[t.medianSection];
  return {
    report,
    median,
    figureOf: (t, key) => median(t)?.[key] ?? report.sections.find((s) => s.transport === t.transport)?.[key],
  };
}
