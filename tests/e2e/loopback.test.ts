import { describe, expect, it } from 'vitest';
import { projectPath } from '../../services/shared/paths.js';

// The bench's loopback reference for real: two processes over 127.0.0.1 (the sink is a program of
// its own, so this runs from dist/), and iperf3 when installed, else its absence said.

type LoopbackModule = typeof import('../../scripts/bench/loopback.js');

describe('the loopback reference', () => {
  it('measures the node:net pair, every byte read, and iperf3 or says why not', async () => {
    const { measureLoopback } = (await import(
      projectPath('dist', 'scripts', 'bench', 'loopback.js')
    )) as LoopbackModule;
    const figures = await measureLoopback(300);
    expect(figures.nodeNetMBps).toBeGreaterThan(0);
    if (figures.iperf3MBps === null) expect(figures.problems.join('\n')).toMatch(/iperf3/);
    else expect(figures.iperf3MBps).toBeGreaterThan(0);
  });
});
