import type { Reporter, TestModule } from 'vitest/node';

// After vitest's own summary: every check that did not run, and why. A test that lacks a privilege
// says why in its skip (tests/helpers/privileges.ts); a test skipped without a reason is an opt-in
// one (describe.runIf on an environment variable) and is listed as such.

/** The skipped tests of a run, one line each: file, name, and the reason the test gave. */
function skippedLines(testModules: readonly TestModule[]): string[] {
  return testModules.flatMap((testModule) =>
    [...testModule.children.allTests('skipped')].map((test) => {
      const result = test.result();
      const note = result.state === 'skipped' ? result.note : undefined;
      return `  ${testModule.relativeModuleId} > ${test.fullName}: ${note ?? 'no reason given (an opt-in check)'}`;
    }),
  );
}

/** A vitest reporter that prints the skipped checks, with their reasons, once the run ends. */
export default class SkipsReporter implements Reporter {
  onTestRunEnd(testModules: readonly TestModule[]): void {
    const lines = skippedLines(testModules);
    if (lines.length === 0) return;
    process.stdout.write(`\nChecks that did not run (${lines.length}):\n${lines.join('\n')}\n\n`);
  }
}
