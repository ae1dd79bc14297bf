import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { projectPath } from '../../services/shared/paths.js';

// npm run bench's arguments, through its real entry: bad ones exit 2 before anything runs (the
// bench itself takes many minutes and is never run by npm test).

function bench(...args: string[]): { code: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [projectPath('dist', 'scripts', 'bench', 'main.js'), ...args], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: result.status, stderr: result.stderr };
}

describe('npm run bench arguments', () => {
  it('refuses --ceiling-only with another part, an unknown part and an unknown transport, all at once, exit 2', () => {
    const result = bench('--ceiling-only', 'verify', 'warp', '--transports=tcp,pigeon');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown part warp');
    expect(result.stderr).toContain('unknown transport pigeon');
    expect(result.stderr).toContain('--ceiling-only runs the ceiling part alone, not verify');
    expect(result.stderr).toContain(
      'usage: npm run bench [-- [ceiling verify matrix steady clients rate] [--transports=<name>,<name>...] ' +
        '[--ceiling-only] [--shapes=large,small,latency] [--rounds=<N>] [--minutes=<N>] ' +
        '[--unverified|--no-unverified] [--out=<dir>]]',
    );
    expect(result.stderr).toContain(
      'npm run bench -- soak [--images <N>] [--from <N>] [--sample-ms <ms>] [--out=<dir>]',
    );
  });

  it(
    'refuses --count= without the grpc-options part, and a ' + 'count below 1, listing that part in its usage, exit 2',
    () => {
      const alone = bench('ceiling', '--count=50');
      expect(alone.code).toBe(2);
      expect(alone.stderr).toContain("--count= sets the grpc-options part's image count: name that part");
      expect(alone.stderr).toContain(
        'npm run bench -- grpc-options [--shapes=large,small] [--rounds=<N>] [--count=<N>] [--out=<dir>]',
      );
      const zero = bench('grpc-options', '--count=0', 'warp');
      expect(zero.code).toBe(2);
      expect(zero.stderr).toContain('--count=0: expected a whole number of at least 1');
      expect(zero.stderr).toContain(
        'unknown part warp; parts: ceiling, verify, matrix, steady, clients, rate, soak, grpc-options',
      );
    },
  );

  it(
    'refuses an unknown ceiling shape, a round count that is not a whole number of at least 1 and a budget of no ' +
      'minutes, all at once, ' +
      'exit 2',
    () => {
      const result = bench('ceiling', '--shapes=small,huge', '--rounds=0', '--minutes=0');
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('--minutes=0: expected a number of minutes above 0');
      expect(result.stderr).toContain('unknown shape huge; shapes: large, small, latency');
      expect(result.stderr).toContain('--rounds=0: expected a whole number of at least 1');
      expect(bench('ceiling', '--rounds=2.5').stderr).toContain('--rounds=2.5: expected a whole number of at least 1');
      expect(bench('ceiling', '--shapes=').stderr).toContain('unknown shape (none given)');
    },
  );

  it(
    'refuses an --out where nothing can be made (procfs, a device for a parent) at once, with the other problems, ' +
      'exit 2',
    () => {
      // Checked at start, not when the results are written hours later; a hang fails on spawnSync's timeout.
      const result = bench('ceiling', '--out=/proc/itb-bench', '--rounds=0');
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        '--out=/proc/itb-bench: expected a directory this user can create and write; /proc/itb-bench: /proc, the ' +
          'deepest part that exists, is on procfs',
      );
      expect(result.stderr).toContain('--rounds=0: expected a whole number of at least 1');
      expect(bench('soak', '--out=/dev/null/x').stderr).toContain(
        '--out=/dev/null/x: expected a directory this user can create and write; /dev/null/x: /dev/null is not a ' +
          'directory',
      );
    },
  );

  it("refuses the soak's flags out of range, or without the soak part, with the bench's own problems, exit 2", () => {
    const result = bench('soak', '--images', '500000', '--sample-ms=5', '--rounds=0');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--from 1000000 (the default): expected at least 1 and below --images (500000)');
    expect(result.stderr).toContain('--sample-ms 5: expected 10 to 60000');
    expect(result.stderr).toContain('--rounds=0: expected a whole number of at least 1');
    expect(bench('ceiling', '--images', '20000').stderr).toContain(
      "--images, --from, --sample-ms are the soak part's: name it",
    );
  });

  it("refuses the delay part's flags out of range or without the part, and a transport it cannot relay, exit 2", () => {
    const result = bench('delay', '--delay-ms=0', '--delay-images=0', '--transports=tcp,redis,zeromq-pubsub');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--delay-ms=0: expected a number of milliseconds above 0 and at most 1000');
    expect(result.stderr).toContain('--delay-images=0: expected a whole number of at least 1');
    expect(result.stderr).toContain('the delay part cannot relay redis: redis goes through a server at REDIS_URL');
    expect(result.stderr).toContain(
      'the delay part cannot relay zeromq-pubsub: zeromq-pubsub listens on ports after ZEROMQ_PUBSUB_PORT too',
    );
    expect(result.stderr).not.toContain('cannot relay tcp');
    expect(bench('ceiling', '--delay-ms=2').stderr).toContain("--delay-ms is the delay part's: name it");
  });

  it("refuses the capacity part's flags out of range or without the part, all at once, with its usage, exit 2", () => {
    const result = bench('capacity', '--sizes=533KiB,huge', '--deadline-ms=0', '--deadline-miss-percent=101');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--sizes=huge: expected sizes of at least 1 byte, each a whole number of bytes');
    expect(result.stderr).toContain('--deadline-ms=0: expected a number of milliseconds above 0 and at most 60000');
    expect(result.stderr).toContain('--deadline-miss-percent=101: expected a percentage from 0 to 100');
    expect(result.stderr).toContain(
      'npm run bench -- capacity [--transports=<name>,<name>...] [--sizes=<size>,<size>...] [--deadline-ms=<ms>] ' +
        '[--deadline-miss-percent=<percent>] [--rounds=<N>] [--out=<dir>]',
    );
    const alone = bench('rate', '--sizes=16KiB', '--deadline-miss-percent=5');
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain("--sizes, --deadline-miss-percent are the capacity part's: name it");
    expect(bench('warp').stderr).toContain(
      'parts: ceiling, verify, matrix, steady, clients, rate, soak, grpc-options, delay, capacity',
    );
  });
});
