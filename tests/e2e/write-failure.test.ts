import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopChild } from '../../services/shared/child-process.js';
import { escapeRegExp, TEST_AUTH_TOKEN } from '../helpers/harness.js';
import { exitWithin, freePortsEnv, startService, stopService, type ServiceProcess } from '../helpers/processes.js';

// A receiver that cannot write its files, without root: run under a file-size limit (RLIMIT_FSIZE,
// set by prlimit), where Node, which ignores SIGXFSZ, sees every write past it fail with EFBIG, as
// it would see ENOSPC on a full disk. The failure must name the file and the system's reason
// everywhere, fail the run, and leave the previous run's files as they were.

const FILES = ['output.log', 'results.json', 'report.html'] as const;
let dir: string;
const running: ServiceProcess[] = [];
const start = (...args: Parameters<typeof startService>): ServiceProcess => {
  const service = startService(...args);
  running.push(service);
  return service;
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-write-failure-'));
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => stopChild(s.child, 1000)));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('output files that cannot be written', () => {
  it("name the file and EFBIG in the receiver's log and the transmitter's output, exit 1, and leave the previous " +
    "run's files byte-equal", async () => {
    const outputDir = await mkdtemp(path.join(dir, 'out-'));
    const env: Record<string, string> = {
      ...(await freePortsEnv()),
      OUTPUT_DIR: outputDir,
      AUTH_TOKEN: TEST_AUTH_TOKEN,
      LOG_LEVEL: 'info',
      TRANSPORTS: 'tcp',
      IMAGE_COUNT: '3',
      CONNECT_TIMEOUT_MS: '10000',
    };

    // A previous run, complete.
    const plain = start('receiver', env);
    await plain.waitForLog(/"msg":"receiver ready"/);
    const previous = start('transmitter', env);
    expect(await exitWithin(previous, 30_000), previous.stderr().slice(-2000)).toBe(0);
    await stopService(plain);
    const before = Object.fromEntries(
      await Promise.all(FILES.map(async (file) => [file, await readFile(path.join(outputDir, file))] as const)),
    );

    // The limit sits between the small files and report.html (it carries the chart library), so
    // results.json is written whole before report.html fails: only all-or-nothing keeps it.
    const limitBytes = 64 * 1024;
    expect(before['results.json']!.length).toBeLessThan(limitBytes);
    expect(before['report.html']!.length).toBeGreaterThan(limitBytes);
    const limited = start('receiver', env, ['prlimit', `--fsize=${limitBytes}`, '--']);
    await limited.waitForLog(/"msg":"receiver ready"/);
    const failed = start('transmitter', { ...env, IMAGE_COUNT: '5' });
    expect(await exitWithin(failed, 30_000), failed.stderr().slice(-2000)).toBe(1);

    // The run's own folder is where its files go; report.html is the one over the limit.
    const named = new RegExp(
      `could not write ` +
        escapeRegExp(path.join(outputDir, 'runs')) +
        `/\\d{8}T\\d{6}Z-[0-9a-f]{6}/report\\.html: EFBIG: file too large`,
    );
    const reason = named.exec(failed.stdout())?.[0];
    expect(reason, failed.stdout()).toBeDefined();
    expect(failed.stdout()).toContain(`FAILED: the receiver could not save this run's files (${reason!})`);
    // The run's figures are not lost with its files: the summary is printed.
    expect(failed.stdout()).toMatch(/^TCP \(baseline\)\s+5\s+0\s+0\s/m);
    expect(failed.stderr()).toContain(reason!);
    // The receiver logs it at error level, and goes on serving.
    const errorLine = limited
      .stderr()
      .split('\n')
      .find((line) => line.includes('"msg":"output files not written; the previous run stays the latest"'));
    expect(errorLine).toBeDefined();
    expect(JSON.parse(errorLine!)).toMatchObject({ level: 50, err: reason, outputDir });
    const served = await fetch(`http://127.0.0.1:${env.CONTROL_PORT}/output.log`, {
      signal: AbortSignal.timeout(10_000),
    });
    expect(await served.text()).toBe(before['output.log']!.toString());

    for (const file of FILES)
      expect((await readFile(path.join(outputDir, file))).equals(before[file]!), file).toBe(true);
    // No temporary file left behind either: the links, `latest` (still the previous run) and the run folders.
    expect((await readdir(outputDir)).sort()).toEqual([...FILES, 'latest', 'runs'].sort());
  }, 90_000);
});
