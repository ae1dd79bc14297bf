import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { followingReport } from '../../services/core/report/live-page.js';
import type { ReceiverApp } from '../../services/receiver/app.js';
import { livePageLibraries, reportLibraries } from '../../services/shared/report-assets.js';
import { OUTPUT_FILES } from '../../services/core/report/run-files.js';
import { RunFolder } from '../../services/receiver/run-output/run-folder.js';
import { fixturePlan, fixtureReport } from '../helpers/fixtures.js';
import { startReceiver } from '../helpers/in-process.js';
import { makeVictims, type Victims } from '../helpers/victims.js';

// The receiver's open routes that serve files (GET /results.json, /output.log, /, /runs/<folder>/…) over real HTTP,
// on an OUTPUT_DIR holding a finished run, with links planted where a local user with write access would plant
// them: at the top-level names, in the run's folder, as the run's folder. No answer carries a link's target; each
// refusal is one log line with the reason.

let dir: string;
let out: string;
let victims: Victims;
let receiver: ReceiverApp;
let base: string;
let runName: string;
let runDir: string;
const logLines: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-served-files-'));
  victims = await makeVictims(dir);
  out = path.join(dir, 'out');
  await mkdir(out);
  const log = pino({ level: 'warn' }, { write: (line: string) => void logLines.push(line) });
  const started = await startReceiver(out, { TRANSPORTS: 'tcp' }, log);
  receiver = started.receiver;
  base = `http://127.0.0.1:${started.transmitterConfig.controlPort}`;
});
afterAll(async () => {
  await receiver?.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  logLines.length = 0;
  await rm(path.join(out, 'runs'), { recursive: true, force: true });
  const folder = await RunFolder.create(out, fixtureReport([]).run);
  await folder.openSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, imageCount: 1 }));
  await folder.finish(folder.report(null), reportLibraries());
  ({ name: runName, dir: runDir } = folder);
});
afterEach(async () => {
  await victims.expectUntouched();
});

async function get(route: string, method = 'GET'): Promise<{ status: number; body: string; headers: Headers }> {
  const response = await fetch(`${base}${route}`, { method, signal: AbortSignal.timeout(10_000) });
  return { status: response.status, body: await response.text(), headers: response.headers };
}

/** Replaces `at` (a file or a link) by a link to `target`: `ln -sfn target at`. */
async function plantLink(target: string, at: string): Promise<void> {
  await rm(at, { force: true });
  await symlink(target, at);
}

/** The 'file not served' lines logged since the test began, by their reason. */
const refusals = (): string[] =>
  logLines
    .map((line) => JSON.parse(line) as { msg: string; reason?: string })
    .flatMap((entry) => (entry.msg === 'file not served' ? [entry.reason ?? ''] : []));

describe('files served as files', () => {
  it("serve the last run's files as written, HEAD with their length and no body", async () => {
    for (const [route, file] of [
      ['/results.json', OUTPUT_FILES.results],
      ['/output.log', OUTPUT_FILES.log],
    ] as const) {
      const onDisk = await readFile(path.join(runDir, file), 'utf8');
      const answer = await get(route);
      expect(answer.status, route).toBe(200);
      expect(answer.body, route).toBe(onDisk);
      const head = await get(route, 'HEAD');
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(String((await stat(path.join(runDir, file))).size));
      expect(head.body).toBe('');
    }
    // GET /: the report streamed from its file, edited as followingReport edits the whole text.
    const report = await readFile(path.join(runDir, OUTPUT_FILES.report), 'utf8');
    const page = await get('/');
    expect(page.body).toBe(followingReport(report, livePageLibraries().followScript));
    expect(page.body).not.toBe(report);
    expect(Number(page.headers.get('content-length'))).toBe(Buffer.byteLength(page.body));
    expect((await get(`/runs/${runName}/results.json`)).body).toBe(
      await readFile(path.join(runDir, OUTPUT_FILES.results), 'utf8'),
    );
    expect(refusals()).toEqual([]);
  });

  it('a link planted at OUTPUT_DIR/results.json (ln -sfn /etc/passwd): never followed, the run is served', async () => {
    await plantLink('/etc/passwd', path.join(out, OUTPUT_FILES.results));
    await plantLink(victims.file, path.join(out, OUTPUT_FILES.log));
    const results = await get('/results.json');
    expect(results.body).not.toMatch(/^root:/m);
    expect(results.body).toBe(await readFile(path.join(runDir, OUTPUT_FILES.results), 'utf8'));
    const log = await get('/output.log');
    expect(log.body).not.toContain(await readFile(victims.file, 'utf8'));
    expect(log.body).toContain('=== TCP (baseline)');
  });

  it(
    "a link planted in the run's folder: 404, the target's " + 'content in no answer, one log line with the reason',
    async () => {
      const victimText = await readFile(victims.file, 'utf8');
      for (const file of Object.values(OUTPUT_FILES)) await plantLink(victims.file, path.join(runDir, file));
      for (const route of [
        '/results.json',
        '/output.log',
        `/runs/${runName}/results.json`,
        `/runs/${runName}/report.html`,
      ]) {
        const answer = await get(route);
        expect(answer.status, route).toBe(404);
        expect(answer.body, route).not.toContain(victimText.trim());
      }
      // GET / shows the live page instead of a report it will not open.
      const page = await get('/');
      expect(page.status).toBe(200);
      expect(page.body).not.toContain(victimText.trim());
      const linkReason = (file: string): string => `${path.join(runDir, file)} is a symbolic link (to ${victims.file})`;
      expect(refusals()).toEqual([
        linkReason(OUTPUT_FILES.results),
        linkReason(OUTPUT_FILES.log),
        linkReason(OUTPUT_FILES.results),
        linkReason(OUTPUT_FILES.report),
        linkReason(OUTPUT_FILES.report),
      ]);
    },
  );

  it('a linked folder on the way (latest naming a run folder that is a link): 404 and the reason', async () => {
    const elsewhere = path.join(dir, 'elsewhere');
    await mkdir(elsewhere, { recursive: true });
    await writeFile(path.join(elsewhere, OUTPUT_FILES.results), '{"planted": "elsewhere"}\n');
    const linked = path.join(out, 'runs', '29990101T000000Z-abcdef');
    await symlink(elsewhere, linked);
    await plantLink('runs/29990101T000000Z-abcdef', path.join(out, 'latest'));
    const answer = await get('/results.json');
    expect(answer.status).toBe(404);
    expect(answer.body).not.toContain('planted');
    expect(refusals()).toEqual([`${linked} is a symbolic link (to ${elsewhere})`]);
  });

  it('a latest pointing anywhere but at a run folder: 404 and the reason', async () => {
    await plantLink(victims.folder, path.join(out, 'latest'));
    expect((await get('/output.log')).status).toBe(404);
    expect(refusals()).toEqual([
      `${path.join(out, 'latest')} points at ${victims.folder}, not at a run folder (runs/<name>)`,
    ]);
  });
});
