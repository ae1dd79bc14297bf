import os from 'node:os';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import LongestFirst from './tests/setup/sequencer.js';

/** The options every project shares. */
const shared = {
  // Real sockets and child processes: each file in its own process, so one file's leftovers
  // cannot disturb another's handle counts.
  pool: 'forks',
  // A bound against a hang, not a timing check: four files at once beside two CPU burners took
  // tests that boot a broker or run every transport past 30 s (a RabbitMQ boot alone took 30 s).
  testTimeout: 90_000,
  hookTimeout: 90_000,
} as const;

/** A project of the files `include` matches; its global setup checks the programs its tests start. */
function project(
  name: string,
  include: string[],
  options: { exclude?: string[]; isolate?: boolean; globalSetup?: string[] } = {},
): TestProjectInlineConfiguration {
  const globalSetup = ['tests/setup/tools.ts', ...(options.globalSetup ?? [])];
  return { test: { ...shared, ...options, name, include, globalSetup } };
}

// npm test runs unit, integration, integration-mocks, e2e and privileged (package.json names them); k8s renders
// deploy/k8s with kubectl, which Debian lacks: only .ci/run runs it (npx vitest run --project k8s).
const K8S_RENDER = 'tests/e2e/k8s-kustomize.test.ts';
/** The integration files that replace a module with vi.mock: each in a process of its own. */
const MOCKING = ['tests/integration/timing-faults.test.ts', 'tests/integration/command-lane-grpc.test.ts'];

// Files at once: much of a file's time is spent waiting (brokers starting, open-loop runs at a fixed
// rate, timeouts that must pass, child processes starting), so each core carries two files: on 2
// cores npm test took 7 min with three files at once, 5.7 with four.
// ITB_TEST_WORKERS overrides it (1 runs one file at a time).
const WORKERS = Number(process.env.ITB_TEST_WORKERS) || os.availableParallelism() * 2;

export default defineConfig({
  test: {
    // After vitest's summary, the checks that were skipped and why (a missing privilege).
    reporters: ['default', './tests/setup/skips-reporter.ts'],
    maxWorkers: WORKERS,
    sequence: { sequencer: LongestFirst },
    projects: [
      // The pure core holds no socket, process or global state between files: one process per
      // worker imports the core once instead of once per file.
      project('unit', ['tests/unit/**/*.test.ts'], { isolate: false }),
      // One RabbitMQ for the files that only go through a broker: its boot is seconds of CPU. The files share a
      // process per worker too (importing every transport's library is over a second of CPU per file), but for those
      // that mock a module, which must not reach a file after them.
      project('integration', ['tests/integration/**/*.test.ts'], {
        exclude: MOCKING,
        isolate: false,
        globalSetup: ['tests/setup/shared-rabbit.ts'],
      }),
      project('integration-mocks', MOCKING, { globalSetup: ['tests/setup/shared-rabbit.ts'] }),
      project('e2e', ['tests/e2e/**/*.test.ts'], { exclude: [K8S_RENDER] }),
      // What an unprivileged container cannot do (root, network namespaces and tc, a user
      // namespace): skipped there, run on CI's host by .ci/run.
      project('privileged', ['tests/privileged/**/*.test.ts']),
      project('k8s', [K8S_RENDER]),
    ],
  },
});
