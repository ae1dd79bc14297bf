import { readFileSync } from 'node:fs';
import { compareRuns, renderComparison } from '../services/core/compare.js';
import { errorMessage } from '../services/core/errors.js';
import { RESULTS_SCHEMA_VERSION, type RunReport } from '../services/core/report.js';

// `npm run compare -- before/results.json after/results.json`: how each transport's p50, p99 and
// MB/s moved between two runs. Exit 0 with the table, 2 when an input cannot be used.

const EXIT_BAD_INPUT = 2;
const USAGE = 'usage: npm run compare -- <before results.json> <after results.json>';

class BadInput extends Error {}

/** Reads one results.json; every way it can be unusable is a BadInput naming the file. */
function readReport(file: string): RunReport {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new BadInput(`${file}: cannot read it (${errorMessage(err)})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new BadInput(`${file}: not valid JSON (${errorMessage(err)})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new BadInput(`${file}: not a results.json (expected a JSON object)`);
  const report = parsed as Record<string, unknown>;
  if (report.schemaVersion !== RESULTS_SCHEMA_VERSION) {
    throw new BadInput(
      `${file}: schemaVersion ${JSON.stringify(report.schemaVersion ?? null)}, this tool reads schemaVersion ${RESULTS_SCHEMA_VERSION} only (a results.json from another version of image-transfer-bench)`,
    );
  }
  // The schema version vouches for the shape; these keep a hand-edited file from ending in a stack trace.
  if (typeof report.run !== 'object' || report.run === null || !Array.isArray(report.sections) || !Array.isArray(report.transports)) {
    throw new BadInput(`${file}: schemaVersion ${RESULTS_SCHEMA_VERSION} but "run", "sections" or "transports" is missing`);
  }
  return parsed as RunReport;
}

function main(args: readonly string[]): number {
  if (args.length !== 2) {
    process.stderr.write(`compare: expected two results.json files, got ${args.length}\n${USAGE}\n`);
    return EXIT_BAD_INPUT;
  }
  const [beforeFile, afterFile] = args as [string, string];
  try {
    const before = readReport(beforeFile);
    const after = readReport(afterFile);
    process.stdout.write(renderComparison(compareRuns(before, after), before, after));
    return 0;
  } catch (err) {
    if (!(err instanceof BadInput)) throw err;
    process.stderr.write(`compare: ${err.message}\n`);
    return EXIT_BAD_INPUT;
  }
}

process.exitCode = main(process.argv.slice(2));
