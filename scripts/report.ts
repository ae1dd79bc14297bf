import path from 'node:path';
import { errorMessage } from '../services/core/errors.js';
import { renderHtmlReport } from '../services/core/report/html-report.js';
import { BadResultsFile, readResultsFile } from './lib/results-file.js';
import { writeFileAtomic } from '../services/shared/files.js';
import { reportLibraries } from '../services/shared/report-assets.js';

// `npm run report -- results.json [other.json] [--out path]`: report.html with charts, for one run
// or two overlaid (the first is "before", the second "after"). Written next to the first file
// unless --out says where; prints the path. Exit 0 written, 1 could not write, 2 unusable input.

const EXIT_FAILED = 1;
const EXIT_BAD_INPUT = 2;
const USAGE = 'usage: npm run report -- <results.json> [<after results.json>] [--out <report.html>]';

class BadInput extends Error {}

interface Arguments {
  files: string[];
  out: string | undefined;
}

function parseArguments(args: readonly string[]): Arguments {
  const files: string[] = [];
  let out: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--out' || arg === '-o') {
      const value = args[++i];
      if (value === undefined || value === '') throw new BadInput(`${arg} needs a path`);
      out = value;
    } else if (arg.startsWith('--out=')) {
      out = arg.slice('--out='.length);
      if (out === '') throw new BadInput('--out needs a path');
    } else if (arg.startsWith('-') && arg !== '-') {
      throw new BadInput(`unknown option ${arg}`);
    } else {
      files.push(arg);
    }
  }
  if (files.length < 1 || files.length > 2)
    throw new BadInput(`expected one or two results.json files, got ${files.length}`);
  return { files, out };
}

async function main(args: readonly string[]): Promise<number> {
  let html: string;
  let target: string;
  try {
    const { files, out } = parseArguments(args);
    const runs = files.map(readResultsFile);
    target = path.resolve(out ?? path.join(path.dirname(files[0]!), 'report.html'));
    html = renderHtmlReport(runs, reportLibraries());
  } catch (err) {
    if (!(err instanceof BadInput) && !(err instanceof BadResultsFile)) {
      process.stderr.write(`report: ${errorMessage(err)}\n`);
      return EXIT_FAILED;
    }
    process.stderr.write(`report: ${err.message}\n${USAGE}\n`);
    return EXIT_BAD_INPUT;
  }
  try {
    await writeFileAtomic(target, html);
  } catch (err) {
    process.stderr.write(`report: cannot write ${target} (${errorMessage(err)})\n`);
    return EXIT_FAILED;
  }
  process.stdout.write(`${target}\n`);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
