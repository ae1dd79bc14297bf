import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// The files that take longest, started first: vitest starts files in order as workers free up,
// and by default by project name and then by size (a fresh clone has no timings cached), which
// once left limits.test.ts (64 MB images over every transport, the longest file and one of the
// smallest) to start last and run a minute alone. The seconds are from one `npm test` on 2 cores
// (each file's time as vitest reported it, 2026-11-29, beside the others); a stale list only costs time.
const LONGEST_FIRST: readonly string[] = [
  'tests/integration/live-browser.test.ts', // 73
  'tests/integration/transports.test.ts', // 61
  'tests/integration/hostile.test.ts', // 55
  'tests/e2e/terminal-output.test.ts', // 48
  'tests/integration/command-lane.test.ts', // 45
  'tests/e2e/start.test.ts', // 39
  'tests/integration/limits.test.ts', // 38
  'tests/e2e/receiver-start.test.ts', // 37
  'tests/integration/timing-faults.test.ts', // 36
  'tests/integration/run.test.ts', // 27
  'tests/e2e/long-run.test.ts', // 26
  'tests/e2e/receiver-restart.test.ts', // 26
  'tests/e2e/faults.test.ts', // 24
  'tests/e2e/broker-credentials.test.ts', // 19
  'tests/integration/redis-down.test.ts', // 18
  'tests/e2e/run-conflicts.test.ts', // 17
  'tests/integration/control-flood.test.ts', // 16
];

/** vitest's order, with the files of LONGEST_FIRST moved ahead in that order. */
export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const rank = (spec: TestSpecification): number => {
      const index = LONGEST_FIRST.indexOf(path.relative(root, spec.moduleId).split(path.sep).join('/'));
      return index === -1 ? LONGEST_FIRST.length : index;
    };
    // Array.prototype.sort is stable: the other files keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
