import http from 'node:http';
import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportLibraries } from '../../services/shared/report-assets.js';
import { OUTPUT_FILES } from '../../services/core/report/run-files.js';
import { RunFolder } from '../../services/receiver/run-output/run-folder.js';
import { fixturePlan, fixtureReport } from '../helpers/fixtures.js';
import { TEST_AUTH_TOKEN } from '../helpers/harness.js';
import { freePortsEnv, startReadyReceiver, stopService, type ServiceProcess } from '../helpers/processes.js';

// A real receiver process serving a kept run whose output.log and results.json are 300 MB each (sparse files: no
// disk, and zeros to read), four GETs at once: its resident memory, read from /proc/<pid>/status (VmRSS sampled while
// the answers stream, and VmHWM, the peak, reset just before), grows by less than 20 MiB. Reading each file whole, as
// the routes once did, took it up by gigabytes. The bound is the issue's; what was measured is logged.

const FILE_BYTES = 300 * 1024 * 1024;
const RSS_GROWTH_LIMIT_BYTES = 20 * 1024 * 1024;

let dir: string;
let receiver: ServiceProcess | undefined;
let controlPort: number;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-served-memory-'));
  const folder = await RunFolder.create(dir, fixtureReport([]).run);
  await folder.openSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, imageCount: 1 }));
  await folder.finish(folder.report(null), reportLibraries());
  // Grown in place: still this user's regular files, now mostly holes.
  for (const file of [OUTPUT_FILES.log, OUTPUT_FILES.results]) await truncate(path.join(folder.dir, file), FILE_BYTES);
  const env: Record<string, string> = {
    ...(await freePortsEnv()),
    OUTPUT_DIR: dir,
    AUTH_TOKEN: TEST_AUTH_TOKEN,
    TRANSPORTS: 'tcp',
  };
  controlPort = Number(env.CONTROL_PORT);
  receiver = await startReadyReceiver(env);
});
afterAll(async () => {
  await stopService(receiver);
  await rm(dir, { recursive: true, force: true });
});

/** VmRSS and VmHWM of process `pid`, in bytes. */
async function memoryOf(pid: number): Promise<{ rssBytes: number; peakBytes: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rssBytes: kib('VmRSS'), peakBytes: kib('VmHWM') };
}

/** GETs `route`, counting the bytes and dropping them; within `timeoutMs`. */
function download(route: string, timeoutMs: number): Promise<{ status: number; lengthHeader: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port: controlPort, path: route }, (response) => {
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, lengthHeader: response.headers['content-length'] ?? '', bytes }),
      );
      response.on('error', reject);
    });
    request.setTimeout(timeoutMs, () => request.destroy(new Error(`GET ${route} took over ${timeoutMs} ms`)));
    request.on('error', reject);
  });
}

describe('a large file served four times at once', () => {
  it("keeps the receiver's resident memory within 20 MiB of where it was", async () => {
    const pid = receiver!.child.pid!;
    // The streaming path once, on a small file, so that what is measured is what serving adds.
    expect((await download('/', 10_000)).status).toBe(200);
    // The peak from here on (clear_refs 5 resets VmHWM; where that is not allowed, the samples alone count).
    const peakReset = await writeFile(`/proc/${pid}/clear_refs`, '5').then(
      () => true,
      () => false,
    );
    const before = await memoryOf(pid);
    let sampledBytes = before.rssBytes;
    const sampler = setInterval(() => {
      void memoryOf(pid).then(
        (m) => (sampledBytes = Math.max(sampledBytes, m.rssBytes)),
        () => undefined,
      );
    }, 20);
    const answers = await Promise.all(
      ['/output.log', '/results.json', '/output.log', '/results.json'].map((route) => download(route, 60_000)),
    ).finally(() => clearInterval(sampler));
    const after = await memoryOf(pid);
    for (const answer of answers)
      expect(answer).toEqual({ status: 200, lengthHeader: String(FILE_BYTES), bytes: FILE_BYTES });
    const peakBytes = Math.max(sampledBytes, after.rssBytes, peakReset ? after.peakBytes : 0);
    const growthBytes = peakBytes - before.rssBytes;
    console.info(
      `served 4 x ${FILE_BYTES} bytes: receiver RSS ${(before.rssBytes / 2 ** 20).toFixed(1)} MiB before, peak ` +
        `${(peakBytes / 2 ** 20).toFixed(1)} MiB (${peakReset ? 'VmHWM and samples' : 'samples'}), growth ` +
        `${(growthBytes / 2 ** 20).toFixed(1)} MiB`,
    );
    expect(growthBytes).toBeLessThan(RSS_GROWTH_LIMIT_BYTES);
  }, 120_000);
});
