import http from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CPU_PROFILE_BODY_LIMIT_BYTES, CPU_PROFILE_CONTENT_TYPE } from '../../services/core/control/cpu-profile.js';
import type { RunReport } from '../../services/core/report/report.js';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';
import { TEST_AUTH_TOKEN } from '../helpers/harness.js';
import { runBoth, startReceiver } from '../helpers/in-process.js';
import { logSections } from '../helpers/run-files.js';

// PROFILE=1: each side's CPU profile of each section lands in the run's folder (the transmitter's through the control
// port), named in output.log and results.json. Both apps run in this process, each with an inspector session of its
// own. Only the mechanism is checked: files there, parsed, named; never how long anything took.

let outputDir: string;
beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-profile-'));
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

/** The run's results.json and output.log, from the folder the run reported. */
async function runFiles(runFolder: string): Promise<{ results: RunReport; log: string }> {
  const dir = path.join(outputDir, runFolder);
  return {
    results: JSON.parse(await readFile(path.join(dir, 'results.json'), 'utf8')) as RunReport,
    log: await readFile(path.join(dir, 'output.log'), 'utf8'),
  };
}

/** Expects `file` (relative to the run's folder) to be a CPU profile V8 wrote: JSON with nodes and samples. */
async function expectCpuProfile(runFolder: string, file: string): Promise<void> {
  const profile = JSON.parse(await readFile(path.join(outputDir, runFolder, file), 'utf8')) as {
    nodes?: unknown;
    samples?: unknown;
  };
  expect(Array.isArray(profile.nodes), file).toBe(true);
  expect((profile.nodes as unknown[]).length, file).toBeGreaterThan(0);
  expect(Array.isArray(profile.samples), file).toBe(true);
}

describe('PROFILE=1', () => {
  it('writes the receiver’s and the transmitter’s profile of a section into the run’s folder and names them in ' +
    'output.log and results.json', async () => {
    const outcome = await runBoth(outputDir, {
      TRANSPORTS: 'tcp',
      IMAGE_COUNT: '20',
      IMAGE_SIZE: '64KB',
      WARMUP: '2',
      PROFILE: '1',
    });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    const { results, log } = await runFiles(outcome.runFolder!);
    expect(resultsSchemaErrors(results)).toEqual([]);
    expect(results.run.config.profile).toBe(true);
    const receiverFile = 'profiles/tcp-receiver.cpuprofile';
    const transmitterFile = 'profiles/tcp-transmitter.cpuprofile';
    expect(results.sections.map((s) => s.cpuProfiles)).toEqual([
      { receiver: receiverFile, transmitter: transmitterFile },
    ]);
    await expectCpuProfile(outcome.runFolder!, receiverFile);
    await expectCpuProfile(outcome.runFolder!, transmitterFile);
    const [section] = logSections(log);
    expect(section?.footer).toContain(
      `CPU profiles: ${receiverFile}, ${transmitterFile} (open in Chrome DevTools or speedscope; summary: ` +
        'node dist/scripts/tools/profile-summary.js <file>)',
    );
  }, 60_000);

  it('names each repeat’s profiles apart', async () => {
    const outcome = await runBoth(outputDir, {
      TRANSPORTS: 'tcp',
      IMAGE_COUNT: '5',
      IMAGE_SIZE: '16KB',
      WARMUP: '0',
      REPEAT: '2',
      PROFILE: 'true',
    });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    const { results, log } = await runFiles(outcome.runFolder!);
    const named = results.sections.map((s) => [s.repeat, s.cpuProfiles]);
    expect(named).toEqual(
      [1, 2].map((repeat) => [
        repeat,
        {
          receiver: `profiles/tcp-repeat${repeat}-receiver.cpuprofile`,
          transmitter: `profiles/tcp-repeat${repeat}-transmitter.cpuprofile`,
        },
      ]),
    );
    for (const section of results.sections) {
      await expectCpuProfile(outcome.runFolder!, section.cpuProfiles!.receiver!);
      await expectCpuProfile(outcome.runFolder!, section.cpuProfiles!.transmitter!);
    }
    expect(log.match(/^CPU profiles: /gm)).toHaveLength(2);
  }, 60_000);

  it('takes none, and names none, when unset', async () => {
    const outcome = await runBoth(outputDir, { TRANSPORTS: 'tcp', IMAGE_COUNT: '3', IMAGE_SIZE: '16KB', WARMUP: '0' });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    const { results, log } = await runFiles(outcome.runFolder!);
    expect(results.sections[0]?.cpuProfiles).toBeUndefined();
    expect(log).not.toContain('CPU profiles:');
  }, 60_000);
});

describe("the control port's CPU profile route", () => {
  /** POST /sections/:id/cpu-profile to a receiver on `port` with `body`, its content-length `claimedBytes`. */
  function postProfile(
    port: number,
    body: Buffer,
    claimedBytes = body.byteLength,
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const request = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/sections/123/cpu-profile',
          headers: {
            authorization: `Bearer ${TEST_AUTH_TOKEN}`,
            'content-type': CPU_PROFILE_CONTENT_TYPE,
            'content-length': String(claimedBytes),
          },
          timeout: 10_000,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
            request.destroy();
          });
        },
      );
      request.on('timeout', () => request.destroy(new Error('no answer within 10 s')));
      request.on('error', reject);
      // A body shorter than claimed: the receiver answers from content-length alone when that is over the limit.
      if (claimedBytes === body.byteLength) request.end(body);
      else request.write(body);
    });
  }

  it('refuses a body over its limit before reading it, and a profile for no open section', async () => {
    const { receiver, transmitterConfig } = await startReceiver(outputDir, {});
    try {
      const port = transmitterConfig.controlPort;
      const tooLarge = await postProfile(port, Buffer.alloc(1024), CPU_PROFILE_BODY_LIMIT_BYTES + 1);
      expect(tooLarge.status).toBe(413);
      expect(JSON.parse(tooLarge.body)).toEqual({ error: 'a CPU profile over 64.0 MiB gzipped is refused' });
      const profile = gzipSync(JSON.stringify({ nodes: [], samples: [], timeDeltas: [] }));
      const noSection = await postProfile(port, profile);
      expect(noSection.status).toBe(409);
      expect(JSON.parse(noSection.body)).toEqual({ error: 'that section is not open' });
    } finally {
      await receiver.close();
    }
  });
});
