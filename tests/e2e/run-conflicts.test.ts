import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sectionCredential } from '../../services/core/wire/auth.js';
import { imageChecksum } from '../../services/core/wire/checksum.js';
import type { RunReport } from '../../services/core/report/report.js';
import { failedSectionEnd, type RunAnnouncement } from '../../services/core/control/control-protocol.js';
import { encodeFrameHeader, type Ack } from '../../services/core/wire/frame.js';
import type { SectionPlan } from '../../services/core/model/section.js';
import { stopChild } from '../../services/shared/child-process.js';
import { hostFacts } from '../../services/shared/host.js';
import { ControlClient } from '../../services/transmitter/control-client.js';
import { transportByName, transports } from '../../services/transports/index.js';
import { escapeRegExp, eventually, TEST_AUTH_TOKEN, testLog } from '../helpers/harness.js';
import { exitWithin, freePortsEnv, startService, type ServiceProcess } from '../helpers/processes.js';

// One run at a time on a receiver, over real processes: a second transmitter is refused with the
// run in progress named, and that run goes on and keeps its files; a run whose transmitter went
// silent still frees the receiver (the watchdog); a section whose end never came is recorded as
// failed, not dropped.

let outputDir: string;
const running: ServiceProcess[] = [];
const start = (...args: Parameters<typeof startService>): ServiceProcess => {
  const service = startService(...args);
  running.push(service);
  return service;
};

beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-conflicts-'));
});
afterEach(async () => {
  // A transmitter left stopped must be able to take its SIGTERM.
  for (const service of running) service.child.kill('SIGCONT');
  await Promise.all(running.splice(0).map((s) => stopChild(s.child, 1000)));
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

async function envFor(name: string, extra: Record<string, string>): Promise<Record<string, string>> {
  return {
    ...(await freePortsEnv()),
    OUTPUT_DIR: await mkdtemp(path.join(outputDir, `${name}-`)),
    AUTH_TOKEN: TEST_AUTH_TOKEN,
    LOG_LEVEL: 'info',
    ...extra,
  };
}

/** A run's announcement as a transmitter sends it, for requests made by the test itself. */
function announcement(transport: string): RunAnnouncement {
  return {
    startedAt: new Date().toISOString(),
    imageDescription: 'random bytes',
    imageSizeBytes: 4096,
    imageCount: 3,
    window: 3,
    warmup: { mode: 'images', images: 0 },
    repeat: 1,
    transports: [transport],
    arrivalNotes: [],
    receivers: 1,
    receiverIndex: 0,
    config: {} as RunAnnouncement['config'],
    hosts: { transmitter: hostFacts(transports) },
  };
}

/** POST /runs with the test's AUTH_TOKEN: the status and the body's `error`. */
async function postRun(env: Record<string, string>): Promise<{ status: number; error: string | undefined }> {
  const response = await fetch(`http://127.0.0.1:${env.CONTROL_PORT}/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_AUTH_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(announcement('tcp')),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  return {
    status: response.status,
    error: text.length > 0 ? (JSON.parse(text) as { error?: string }).error : undefined,
  };
}

/** "a run is in progress: started <ISO> by 127.0.0.1; it keeps its files; ...", capturing the time. */
const RUN_IN_PROGRESS = new RegExp(
  /a run is in progress: started (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) by 127\.0\.0\.1; it keeps /.source +
    /its files; wait for it to end \(or for the receiver's watchdog, [\d.]+ s after the transmitter /.source +
    /goes silent/.source,
);

describe('one run at a time', () => {
  it('a second transmitter is refused with 409 naming the run in progress (start time and peer), exits 1; the ' +
    'first completes with exit 0 and its files hold its sections', async () => {
    // Long waits: the first transmitter is held stopped while the second tries, and nothing of
    // the first run may time out meanwhile. RATE paces its sections, so the stop lands inside.
    const env = await envFor('second', {
      TRANSPORTS: 'tcp,websocket',
      IMAGE_TIMEOUT_MS: '30000',
      CONNECT_TIMEOUT_MS: '30000',
    });
    const receiver = start('receiver', env);
    await receiver.waitForLog(/"msg":"receiver ready"/);
    const beforeRunMs = Date.now();
    const first = start('transmitter', { ...env, IMAGE_COUNT: '40', RATE: '20', WARMUP: '0' });
    await receiver.waitForLog(/"transport":"tcp".*"msg":"section started"/, 30_000);
    // Held inside its run: whatever the machine's load, the run is open while the others try.
    first.child.kill('SIGSTOP');

    const refused = await postRun(env);
    expect(refused.status).toBe(409);
    const startedAt = RUN_IN_PROGRESS.exec(refused.error ?? '')?.[1];
    expect(startedAt, refused.error).toBeDefined();
    expect(Date.parse(startedAt!)).toBeGreaterThanOrEqual(beforeRunMs);
    expect(Date.parse(startedAt!)).toBeLessThanOrEqual(Date.now());

    const second = start('transmitter', { ...env, IMAGE_COUNT: '3' });
    expect(await exitWithin(second, 30_000), second.stderr().slice(-2000)).toBe(1);
    expect(second.stderr()).toContain(
      `transmitter: receiver refused POST /runs (HTTP 409): a run is in progress: started ${startedAt} by ` +
        `127.0.0.1; it keeps its files`,
    );

    first.child.kill('SIGCONT');
    expect(await exitWithin(first, 60_000), first.stderr().slice(-2000)).toBe(0);
    expect(first.stdout()).toContain('Every transport delivered every image intact.');
    const log = await readFile(path.join(env.OUTPUT_DIR!, 'output.log'), 'utf8');
    expect(log.match(/^=== .* performance test: 40 images transfer /gm)).toHaveLength(2);
    // Held stopped, its RATE schedule fell behind: the verdict may add that it was OVERLOADED.
    expect(log).toMatch(/^Result: every transport delivered every image intact[.;]/m);
    const results = JSON.parse(await readFile(path.join(env.OUTPUT_DIR!, 'results.json'), 'utf8')) as {
      run: { startedAt: string };
      sections: { transport: string; okCount: number }[];
    };
    expect(results.sections.map((s) => [s.transport, s.okCount])).toEqual([
      ['tcp', 40],
      ['websocket', 40],
    ]);
    expect(receiver.stderr()).toContain('"msg":"second run refused"');
    expect(receiver.stderr()).not.toMatch(/"level":50/);
  }, 120_000);

  it('a run whose transmitter went silent is ended by the watchdog, refused attempts meanwhile do not keep it ' +
    'alive, and the next run starts', async () => {
    // The watchdog ends a run 1 s + 5 s after its transmitter's last request.
    const env = await envFor('watchdog', { TRANSPORTS: 'tcp', IMAGE_TIMEOUT_MS: '1000', CONNECT_TIMEOUT_MS: '1000' });
    const receiver = start('receiver', env);
    await receiver.waitForLog(/"msg":"receiver ready"/);
    expect((await postRun(env)).status).toBe(204);
    // The test is now a transmitter gone silent; another keeps knocking.
    const refusals: string[] = [];
    const deadline = Date.now() + 60_000;
    for (;;) {
      const attempt = await postRun(env);
      if (attempt.status === 204) break;
      expect(attempt.status).toBe(409);
      refusals.push(attempt.error ?? '');
      if (Date.now() > deadline)
        throw new Error(
          `still refused after 60 s (${refusals.length} refusals): the refusals kept the silent run alive`,
        );
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals[0]).toMatch(RUN_IN_PROGRESS);
    // The run is over before its files are: the line comes once they are written.
    await receiver.waitForLog(
      new RegExp(
        /"stopReason":"transmitter went away: no frame or control request for \d+ s".*"msg":"run ended /.source +
          /incomplete; output files written"/.source,
      ),
      30_000,
    );
    // The run that took its place finishes like any other.
    const finished = await fetch(`http://127.0.0.1:${env.CONTROL_PORT}/runs/finish`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_AUTH_TOKEN}` },
      signal: AbortSignal.timeout(10_000),
    });
    expect(finished.status).toBe(200);
  }, 90_000);

  it('a section opened while another is still open: the unfinished one is recorded as failed with the count of ' +
    'images it got', async () => {
    const env = await envFor('section', { TRANSPORTS: 'tcp', IMAGE_TIMEOUT_MS: '10000', CONNECT_TIMEOUT_MS: '10000' });
    const receiver = start('receiver', env);
    await receiver.waitForLog(/"msg":"receiver ready"/);
    const tcp = transportByName('tcp');
    const control = new ControlClient('127.0.0.1', Number(env.CONTROL_PORT), 10_000);
    control.authorize(TEST_AUTH_TOKEN);
    try {
      await control.startRun(announcement('tcp'));
      const plan = (sectionId: number): SectionPlan => ({
        sectionId,
        transport: 'tcp',
        label: tcp.label,
        baseline: tcp.traits.baseline,
        repeat: 1,
        imageCount: 3,
        warmup: { mode: 'images', images: 0 },
        imageSizeBytes: 4096,
        window: 3,
        ratePerSecond: null,
        clients: 1,
        receivers: 1,
        receiverIndex: 0,
        clock: null,
      });
      await control.openSection(plan(1));
      await control.startMeasuring(1, { images: 0, ms: 0, steady: null, mediansMs: null });
      // Two of its three images arrive, then its transmitter moves on without ending it.
      const acks: Ack[] = [];
      const link = await tcp.connect({
        host: '127.0.0.1',
        bindHost: '127.0.0.1',
        port: Number(env.TCP_PORT),
        url: undefined,
        maxImageBytes: 1024 * 1024,
        log: testLog,
        connectTimeoutMs: 10_000,
        imageBytes: 1024 * 1024,
        window: 3,
        credential: sectionCredential(TEST_AUTH_TOKEN, 1),
        onAck: (ack) => acks.push(ack),
        onFailure() {},
      });
      try {
        const image = randomBytes(4096);
        for (const seq of [0, 1])
          link.send(
            encodeFrameHeader({
              sectionId: 1,
              seq,
              sizeBytes: image.length,
              checksum: imageChecksum(image),
              sentAtNs: process.hrtime.bigint(),
            }),
            image,
          );
        await eventually(() => acks.length === 2, 20_000);
      } finally {
        await link.close();
      }
      await control.openSection(plan(2));
      await control.endSection(2, failedSectionEnd('the test ends it'));
      await control.finishRun();
      const report = JSON.parse(await readFile(path.join(env.OUTPUT_DIR!, 'results.json'), 'utf8')) as RunReport;
      expect(report.sections.map((s) => [s.sectionId, s.failure])).toEqual([
        [1, 'a new section opened before this one ended; got 2 of 3 images'],
        [2, 'the test ends it'],
      ]);
      const log = await readFile(path.join(env.OUTPUT_DIR!, 'output.log'), 'utf8');
      expect(log).toMatch(
        new RegExp(`^${escapeRegExp('FAILED: a new section opened before this one ended; got 2 of 3 images')}$`, 'm'),
      );
    } finally {
      control.close();
    }
  }, 60_000);
});
