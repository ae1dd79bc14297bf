import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { freePortsEnv } from '../../scripts/lib/ports.js';
import { escapeRegExp } from '../helpers/harness.js';
import { requirePrivilege } from '../helpers/privileges.js';
import { runStart as runStartIn, type StartResult } from '../helpers/start-entry.js';

// `npm start` with NETWORK_* as a user runs it: the transmitter behind a veth pair in a network
// namespace of its own, shaped by tc. It needs root with network namespaces (CI's host runs it:
// the vitest project `privileged`); elsewhere it checks that NETWORK_* is refused without root,
// then skips the shaping, saying why.

let outputDir: string;
beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-shaped-'));
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

function runStart(env: Record<string, string>): Promise<StartResult> {
  return runStartIn(outputDir, env);
}

describe('npm start with a shaped link (NETWORK_*)', () => {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const namespaces = (): string[] =>
    execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.startsWith('itb-tx-'));
  /** Without root, NETWORK_* is refused before anything starts; then the shaping itself is skipped, saying why. */
  async function refusedUnlessShapeable(context: TestContext, env: Record<string, string>): Promise<void> {
    if (!isRoot) {
      const result = await runStart({ ...env, ...(await freePortsEnv()) });
      expect([result.code, result.stderr]).toEqual([2, expect.stringContaining('needs root')]);
    }
    requirePrivilege(context, 'netns', 'a link shaped by NETWORK_*');
  }

  it(
    'runs the transmitter behind a veth pair shaped to NETWORK_RATE, says so in output.log, stays under the rate, ' +
      'and removes the namespace',
    async (context) => {
      await refusedUnlessShapeable(context, { NETWORK_RATE: '40mbit', TRANSPORTS: 'tcp' });
      const before = namespaces();
      const result = await runStart({
        NETWORK_RATE: '40mbit',
        TRANSPORTS: 'tcp,redis',
        IMAGE_COUNT: '30',
        WINDOW: '4',
        WARMUP: '5',
        ...(await freePortsEnv()),
      });
      expect(result.code, result.stderr).toBe(0);
      const log = await readFile(path.join(outputDir, 'output.log'), 'utf8');
      expect(log).toMatch(
        new RegExp(
          /^Link: a veth pair, MTU 1500, between the transmitter's own network namespace /.source +
            /\(10\.213\.\d+\.\d+\) and the receiver's .*tbf rate 40mbit \(NETWORK_RATE=40mbit\)$/.source,
          'm',
        ),
      );
      // 40 mbit/s is 5 MB/s of frames: a run above it was not shaped; far below, the shaping is broken.
      for (const transport of ['TCP (baseline)', 'Redis']) {
        // One repeat: the MB/s is marked ~ (indicative), its figure is what counts here.
        const mbps = Number(
          new RegExp(`^${escapeRegExp(transport)}\\s.*\\s~?(\\d+\\.\\d)\\s+~?\\d+\\.\\d\\s+ok$`, 'm').exec(log)?.[1],
        );
        expect(mbps, transport).toBeGreaterThan(0.5 * 5);
        expect(mbps, transport).toBeLessThanOrEqual(1.05 * 5);
      }
      expect(namespaces()).toEqual(before);
    },
  );

  it(
    'applies NETWORK_DELAY with netem, or exits 2 ' + 'naming the missing sch_netem before anything starts',
    async (context) => {
      await refusedUnlessShapeable(context, { NETWORK_DELAY: '20ms', TRANSPORTS: 'tcp' });
      const before = namespaces();
      const result = await runStart({
        NETWORK_DELAY: '20ms',
        TRANSPORTS: 'tcp',
        IMAGE_COUNT: '5',
        WARMUP: '2',
        ...(await freePortsEnv()),
      });
      if (result.code === 2) {
        expect(result.stderr).toContain(
          "NETWORK_DELAY and NETWORK_LOSS need tc's netem, and this kernel has no sch_netem",
        );
      } else {
        expect(result.code, result.stderr).toBe(0);
        // 20 ms each way: every round trip takes at least 40 ms.
        const results = JSON.parse(await readFile(path.join(outputDir, 'results.json'), 'utf8')) as {
          sections: { rtt: { minMs: number } }[];
        };
        expect(results.sections[0]?.rtt.minMs).toBeGreaterThanOrEqual(40);
      }
      expect(namespaces()).toEqual(before);
    },
  );
});
