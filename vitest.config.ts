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
function project(name: string, include: string[], exclude: string[] = []): TestProjectInlineConfiguration {
  return { test: { ...shared, name, include, exclude, globalSetup: ['tests/setup/tools.ts'] } };
}

// npm test runs unit, integration and e2e (package.json names them); k8s renders deploy/k8s with
// kubectl, which Debian lacks: only .ci/run runs it (npx vitest run --project k8s).
const K8S_RENDER = 'tests/e2e/k8s-kustomize.test.ts';

export default defineConfig({
  test: {
    // After vitest's summary, the checks that were skipped and why (a missing privilege).
    reporters: ['default', './tests/setup/skips-reporter.ts'],
    projects: [
      project('unit', ['tests/unit/**/*.test.ts']),
      project('integration', ['tests/integration/**/*.test.ts']),
      project('e2e', ['tests/e2e/**/*.test.ts'], [K8S_RENDER]),
      project('k8s', [K8S_RENDER]),
    ],
  },
});
