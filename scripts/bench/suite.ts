import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { brokerVariables } from '../../services/core/config/config.js';
import type { RunReport } from '../../services/core/report/report.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { projectPath } from '../../services/shared/paths.js';
import { transports } from '../../services/transports/index.js';
import { freePortsEnv } from '../lib/ports.js';

// One run of the suite as `npm start` runs it, in its own processes and servers: every part's unit of work.

/** The asset's size: the suite's default image. */
export const ASSET_BYTES = 545_792;

/** One run of the suite: its configuration and the report it produced. */
export interface Cell {
  name: string;
  env: Record<string, string>;
  report: RunReport;
  seconds: number;
}

/** `items` begun at its `shift`th, wrapping round: the order of one round of interleaved runs. */
export const rotated = <T>(items: readonly T[], shift: number): T[] => [
  ...items.slice(shift % items.length),
  ...items.slice(0, shift % items.length),
];

/**
 * Runs the suite once as `npm start` does, with `env` (TRANSPORTS: `transportNames` unless `env` says), and returns its
 * results.json.
 */
export async function runSuite(
  transportNames: readonly string[],
  name: string,
  env: Record<string, string>,
): Promise<Cell> {
  const outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-bench-'));
  const ports = await freePortsEnv();
  // Each run starts its own servers (a private redis-server), never one that other work shares.
  const brokers = new Set(brokerVariables(transports));
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !brokers.has(key)));
  const startedAt = Date.now();
  process.stderr.write(`bench: ${name} ...`);
  let stderr = '';
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [projectPath('dist', 'scripts', 'start.js')], {
      env: {
        ...inherited,
        LOG_LEVEL: 'warn',
        TRANSPORTS: transportNames.join(','),
        OUTPUT_DIR: outputDir,
        ...ports,
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    // Progress lines and warnings are kept back unless the run fails.
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', resolve);
  });
  const seconds = (Date.now() - startedAt) / 1000;
  process.stderr.write(
    ` ${seconds.toFixed(1)} s${code === 0 ? '' : ` (exit ${code}: see the FAILED rows)\n${stderr.slice(-4000)}`}\n`,
  );
  const text = await readFile(path.join(outputDir, 'results.json'), 'utf8').catch(() => undefined);
  await rm(outputDir, { recursive: true, force: true });
  // No results at all (bad configuration, a crash): the bench stops here, saying which run and why.
  if (text === undefined)
    throw new Error(`bench: ${name} wrote no results.json (exit ${code}); its stderr ends:\n${stderr.slice(-2000)}`);
  return { name, env, report: JSON.parse(text) as RunReport, seconds };
}

/** The section of `transport` that its summary names the median one, if it completed one. */
export function medianSection(report: RunReport, transport: string): SectionResult | undefined {
  const summary = report.transports.find((t) => t.transport === transport);
  return summary?.medianSection === null || summary === undefined ? undefined : report.sections[summary.medianSection];
}
