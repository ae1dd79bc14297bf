import type { Reporter, TestModule } from 'vitest/node';

// After vitest's own summary: every check the machine did not let run, and why. A test that lacks
// a privilege says why in its skip (tests/helpers/privileges.ts, context.skip(reason)); other skips
// (a -t filter, an opt-in describe.runIf) give no reason and are only counted.

/** A vitest reporter that prints the checks skipped with a reason, and the reason, once the run ends. */
export default class SkipsReporter implements Reporter {
  onTestRunEnd(testModules: readonly TestModule[]): void {
    const lines: string[] = [];
    let others = 0;
    for (const testModule of testModules) {
      for (const test of testModule.children.allTests('skipped')) {
        const result = test.result();
        const note = result.state === 'skipped' ? result.note : undefined;
        if (note === undefined) others += 1;
        else lines.push(`  ${testModule.relativeModuleId} > ${test.fullName}\n      ${note}`);
      }
    }
    if (lines.length === 0) return;
    const rest = others > 0 ? `\n(and ${others} skipped without a reason: a -t filter, .skip or an opt-in runIf)` : '';
    process.stdout.write(
      `\nChecks this machine did not let run (${lines.length}), and why:\n${lines.join('\n')}${rest}\n\n`,
    );
  }
}
