import os from 'node:os';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

/** The options every project shares. */
const shared = {
  // Real sockets and child processes: each file in its own process, so one file's leftovers
  // cannot disturb another's handle counts.
  pool: 'forks',
  testTimeout: 30_000,
  hookTimeout: 30_000,
} as const;

/** A project of the files `include` matches; its global setup checks the programs its tests start. */
function project(
  name: string,
  include: string[],
  options: { exclude?: string[]; isolate?: boolean } = {},
): TestProjectInlineConfiguration {
  return { test: { ...shared, ...options, name, include, globalSetup: ['tests/setup/tools.ts'] } };
}

// npm test runs unit, integration, e2e and privileged (package.json names them); k8s renders
// deploy/k8s with kubectl, which Debian lacks: only .ci/run runs it (npx vitest run --project k8s).
const K8S_RENDER = 'tests/e2e/k8s-kustomize.test.ts';

// Files at once: most of a file's time is spent waiting (brokers starting, open-loop runs at a fixed
// rate, timeouts that must pass, child processes starting), so two cores carry one more file than
// they have cores. ITB_TEST_WORKERS overrides it (1 reproduces a single-file order).
const WORKERS = Number(process.env.ITB_TEST_WORKERS) || os.availableParallelism() + 1;

export default defineConfig({
  test: {
    // After vitest's summary, the checks that were skipped and why (a missing privilege).
    reporters: ['default', './tests/setup/skips-reporter.ts'],
    maxWorkers: WORKERS,
    projects: [
      // The pure core holds no socket, process or global state between files: one process per
      // worker imports the core once instead of once per file.
      project('unit', ['tests/unit/**/*.test.ts'], { isolate: false }),
      project('integration', ['tests/integration/**/*.test.ts']),
      project('e2e', ['tests/e2e/**/*.test.ts'], { exclude: [K8S_RENDER] }),
      // What an unprivileged container cannot do (root, network namespaces and tc, a user
      // namespace): skipped there, run on CI's host by .ci/run.
      project('privileged', ['tests/privileged/**/*.test.ts']),
      project('k8s', [K8S_RENDER]),
    ],
  },
});
