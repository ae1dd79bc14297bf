import { runFolderStamp } from '../model/run-writer.js';
import type { SectionResult } from '../model/section.js';
import type { RunReport } from '../report/report.js';

// What the transmitter says last when a receiver went away mid-run. The receiver wrote the run as it went: every
// section that ended (its figures, its per-image file, all synced when it ended) and the open one's images up to the
// last half second, in a folder named by the run's start; the next receiver on that OUTPUT_DIR ends the run there.

/** `section` as the verdict names it: its display name, and its repeat when the run has several. */
function sectionName(section: SectionResult, repeats: number): string {
  return repeats > 1 ? `${section.label} (repeat ${section.repeat})` : section.label;
}

/**
 * The transmitter's verdict on a run that stopped because a receiver went away (`lost`: how), from its own `report`
 * (every section it ran, the one the receiver went away in last): what the receiver had written, and where.
 */
export function receiverLostVerdict(report: RunReport, lost: string): string {
  const { run, sections } = report;
  const open = sections.at(-1);
  const ended = sections.slice(0, -1).map((section) => sectionName(section, run.repeat));
  const written = [
    ended.length === 0
      ? "the run's header"
      : `the section${ended.length === 1 ? '' : 's'} that ended (${ended.join(', ')}) whole`,
    ...(open === undefined ? [] : [`the ${sectionName(open, run.repeat)} section's images up to then`]),
  ].join(', and ');
  const folder = `runs/${runFolderStamp(run.startedAt)}-…/`;
  const where =
    run.receivers > 1 ? `${folder} (receiver-<k>/${folder} for the k-th of the ${run.receivers} receivers)` : folder;
  return (
    `INCOMPLETE: the receiver went away (${lost}); the run stopped. The receiver kept what it had written in its ` +
    `OUTPUT_DIR, in ${where}: ${written}. A receiver started again on that OUTPUT_DIR ends the run there, marked ` +
    `INCOMPLETE.`
  );
}
