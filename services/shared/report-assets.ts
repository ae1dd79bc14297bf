import { existsSync, readFileSync } from 'node:fs';
import type { HtmlReportLibraries } from '../core/report/html-report.js';
import type { LivePageLibraries } from '../core/report/live-page.js';
import { projectPath } from './paths.js';
import { ErrorCode, ItbError } from '../core/errors.js';

// What the HTML report inlines, read from files so the report needs no network: Chart.js from
// node_modules, the page's own style and script from assets/ (which the runtime image ships). The
// receiver's live page (GET / during a run) inlines the same Chart.js and style, and its own script.
// Kept apart from services/core/report/html-report.ts so the renderer stays pure.

let cached: HtmlReportLibraries | undefined;

/** The report's inlined sources, read once per process; throws naming the file when one is missing. */
export function reportLibraries(): HtmlReportLibraries {
  cached ??= {
    chartJs: readSource('Chart.js', 'run "npm install"', 'node_modules', 'chart.js', 'dist', 'chart.umd.js'),
    pageCss: readSource(
      'its style',
      'restore assets/report-page/ from the repository',
      'assets',
      'report-page',
      'report.css',
    ),
    pageScript: readSource(
      'its script',
      'restore assets/report-page/ from the repository',
      'assets',
      'report-page',
      'report.js',
    ),
  };
  return cached;
}

let cachedLive: LivePageLibraries | undefined;

/** The live page's inlined sources, read once per process; throws naming the file when one is missing. */
export function livePageLibraries(): LivePageLibraries {
  const { chartJs, pageCss } = reportLibraries();
  cachedLive ??= {
    chartJs,
    pageCss,
    liveScript: readSource(
      'its script',
      'restore assets/report-page/ from the repository',
      'assets',
      'report-page',
      'live.js',
    ),
    followScript: readSource(
      'its follow script',
      'restore assets/report-page/ from the repository',
      'assets',
      'report-page',
      'follow.js',
    ),
  };
  return cachedLive;
}

function readSource(what: string, remedy: string, ...segments: string[]): string {
  const file = projectPath(...segments);
  if (!existsSync(file))
    throw new ItbError(ErrorCode.setup, `${file} is missing: the HTML report inlines ${what} from it (${remedy})`);
  return readFileSync(file, 'utf8');
}
