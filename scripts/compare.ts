import { compareRuns, renderComparison } from '../services/core/report/compare.js';
import { BadResultsFile, readResultsFile } from './lib/results-file.js';

// `npm run compare -- before/results.json after/results.json`: how each transport's p50, p99 and
// MB/s moved between two runs. Exit 0 with the table, 2 when an input cannot be used.

const EXIT_BAD_INPUT = 2;
const USAGE = 'usage: npm run compare -- <before results.json> <after results.json>';

function main(args: readonly string[]): number {
  if (args.length !== 2) {
    process.stderr.write(`compare: expected two results.json files, got ${args.length}\n${USAGE}\n`);
    return EXIT_BAD_INPUT;
  }
  const [beforeFile, afterFile] = args as [string, string];
  try {
    const before = readResultsFile(beforeFile);
    const after = readResultsFile(afterFile);
    process.stdout.write(renderComparison(compareRuns(before, after), before, after));
    return 0;
  } catch (err) {
    if (!(err instanceof BadResultsFile)) throw err;
    process.stderr.write(`compare: ${err.message}\n`);
    return EXIT_BAD_INPUT;
  }
}

process.exitCode = main(process.argv.slice(2));
