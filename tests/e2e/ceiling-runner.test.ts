import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { projectPath } from '../../services/shared/paths.js';
import { GRPC_VARIANT_ENV } from '../../services/transports/kit/ceiling-grpc.js';
import { runCeiling } from '../../scripts/lib/ceiling-run.js';

// The bench's ceiling runner as the bench starts it (dist/scripts/ceiling/main.js, its receiver a child process): the
// receiving process's CPU comes back from the child, where the in-process runs of tests/integration/ceiling.test.ts
// cannot tell it. `npm test` builds dist/ first (its pretest step).

describe('the ceiling runner in two processes', () => {
  it("reports the receiving process's CPU over the timed images beside the sender's", async () => {
    const entry = projectPath('dist', 'scripts', 'ceiling', 'main.js');
    if (!existsSync(entry)) throw new Error(`${entry} is missing: run "npm run build" first (npm test does)`);
    const figures = await runCeiling({
      transport: 'tcp',
      bytes: 545_792,
      count: 300,
      window: 16,
      warmup: 20,
      brokerUrl: undefined,
      timeoutMs: 20_000,
    });
    expect(figures).toMatchObject({ count: 300, imageBytes: 545_792, window: 16 });
    expect(figures.senderCpuMs).toBeGreaterThan(0);
    expect(figures.receiverCpuMs).not.toBeNull();
    expect(figures.receiverCpuMs).toBeGreaterThan(0);
  });

  it("hands a grpc variant to both processes: the receiver's refuses a message over its own limit", async () => {
    const run = (variant: object) =>
      runCeiling({
        transport: 'grpc',
        bytes: 4096,
        count: 20,
        window: 4,
        warmup: 2,
        brokerUrl: undefined,
        timeoutMs: 20_000,
        env: { [GRPC_VARIANT_ENV]: JSON.stringify(variant) },
      });
    expect((await run({})).count).toBe(20);
    // Set on the server alone, in the child process: the run fails there, so the variable reached it.
    await expect(run({ server: { 'grpc.max_receive_message_length': 1000 } })).rejects.toThrow(
      /Received message larger than max/,
    );
    // A malformed variant fails the run (its receiver, which reads it first, exits) rather than running the reference.
    await expect(run({ clinet: {} })).rejects.toThrow(/the ceiling run failed/);
  });
});
