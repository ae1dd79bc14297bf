import { readFileSync } from 'node:fs';
import { errorMessage } from '../../services/core/errors.js';
import { RESULTS_SCHEMA_VERSION, type RunReport } from '../../services/core/report/report.js';

/** A results.json that cannot be used; the message names the file and why. */
export class BadResultsFile extends Error {}

/** Reads one results.json for the command-line tools; every way it can be unusable is a BadResultsFile. */
export function readResultsFile(file: string): RunReport {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new BadResultsFile(`${file}: cannot read it (${errorMessage(err)})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new BadResultsFile(`${file}: not valid JSON (${errorMessage(err)})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new BadResultsFile(`${file}: not a results.json (expected a JSON object)`);
  const report = parsed as Record<string, unknown>;
  if (report.schemaVersion !== RESULTS_SCHEMA_VERSION) {
    throw new BadResultsFile(
      `${file}: schemaVersion ` +
        JSON.stringify(report.schemaVersion ?? null) +
        `, this tool reads schemaVersion ${RESULTS_SCHEMA_VERSION} only (a results.json from another version of ` +
        `image-transfer-bench)`,
    );
  }
  // The schema version vouches for the shape; these keep a hand-edited file from ending in a stack trace.
  if (
    typeof report.run !== 'object' ||
    report.run === null ||
    !Array.isArray(report.sections) ||
    !Array.isArray(report.transports)
  ) {
    throw new BadResultsFile(
      `${file}: schemaVersion ${RESULTS_SCHEMA_VERSION} but "run", "sections" or "transports" is missing`,
    );
  }
  return parsed as RunReport;
}
