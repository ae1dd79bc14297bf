import { readFileSync } from 'node:fs';
import { errorMessage } from '../../services/core/errors.js';
import type { RunReport } from '../../services/core/report/report.js';
import { resultsShapeProblem } from '../../services/core/report/results-shape.js';

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
  const problem = resultsShapeProblem(parsed);
  if (problem !== null) throw new BadResultsFile(`${file}: ${problem}`);
  return parsed as RunReport;
}
