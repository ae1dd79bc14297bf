import { RESULTS_SCHEMA_VERSION } from './report.js';

// Whether a parsed results.json can be read as a RunReport at all: the command-line tools and the
// receiver's list of runs take the same checks, so a file one refuses the other does too.

/** Why parsed JSON is not a usable results.json (without the file's name); null when it is one. */
export function resultsShapeProblem(parsed: unknown): string | null {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return 'not a results.json (expected a JSON object)';
  const report = parsed as Record<string, unknown>;
  if (report.schemaVersion !== RESULTS_SCHEMA_VERSION)
    return (
      `schemaVersion ` +
      JSON.stringify(report.schemaVersion ?? null) +
      `, this tool reads schemaVersion ${RESULTS_SCHEMA_VERSION} only (a results.json from another version of ` +
      `image-transfer-bench)`
    );
  // The schema version vouches for the shape; these keep a hand-edited file from ending in a stack trace.
  if (
    typeof report.run !== 'object' ||
    report.run === null ||
    !Array.isArray(report.sections) ||
    !Array.isArray(report.transports)
  )
    return `schemaVersion ${RESULTS_SCHEMA_VERSION} but "run", "sections" or "transports" is missing`;
  return null;
}
