import { existsSync, readFileSync } from 'node:fs';
import { projectPath } from './paths.js';

// The browser libraries the HTML report inlines, read from node_modules so the report needs no
// network. Kept apart from services/core/html-report.ts so the renderer stays pure.

/** Library sources the HTML report inlines, by role. */
export interface ReportLibraries {
  /** Chart.js 4's UMD build: defines the global `Chart`. */
  chartJs: string;
}

let cached: ReportLibraries | undefined;

/** The report's libraries, read once per process; throws naming the file when one is missing. */
export function reportLibraries(): ReportLibraries {
  if (cached !== undefined) return cached;
  const chartJsPath = projectPath('node_modules', 'chart.js', 'dist', 'chart.umd.js');
  if (!existsSync(chartJsPath)) throw new Error(`${chartJsPath} is missing: the HTML report inlines Chart.js from it (run "npm install")`);
  cached = { chartJs: readFileSync(chartJsPath, 'utf8') };
  return cached;
}
