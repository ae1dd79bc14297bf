import { errorMessage } from '../core/errors.js';
import type { RunCompletionAnswer } from '../core/report/run-files.js';
import { ExitCode } from '../shared/entry.js';
import { reportLibraries } from '../shared/report-assets.js';
import { completeRun } from './run-output/run-completion.js';

// `node dist/services/receiver/complete-run.js <baseDir> <runDir> <reason>`: completes one run whose receiver died
// (./run-output/run-completion.ts), for npm start, which saw its receiver die and drives the receiver's code as a
// process, never as an import. Prints a RunCompletionAnswer as one JSON line and exits 0; on a failure, its reason on
// stderr and exit 1; without its three arguments, exit 2.
const [baseDir, runDir, reason] = process.argv.slice(2);
if (baseDir === undefined || runDir === undefined || reason === undefined) {
  process.stderr.write('usage: complete-run.js <baseDir> <runDir> <reason>\n');
  process.exit(ExitCode.config);
}
try {
  const report = await completeRun(baseDir, runDir, reason, reportLibraries());
  const answer: RunCompletionAnswer = { sections: report === undefined ? null : report.sections.length };
  process.stdout.write(`${JSON.stringify(answer)}\n`);
} catch (err) {
  process.stderr.write(`${errorMessage(err)}\n`);
  process.exit(ExitCode.failed);
}
