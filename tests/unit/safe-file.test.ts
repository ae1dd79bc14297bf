import { execFileSync } from 'node:child_process';
import {
  appendFile,
  chmod,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  symlink,
  truncate,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reportLibraries } from '../../services/shared/report-assets.js';
import { OUTPUT_FILES } from '../../services/core/report/run-files.js';
import { RunFolder } from '../../services/receiver/run-output/run-folder.js';
import {
  closeServedFile,
  copyServedPieces,
  openLatestRunFile,
  openRunFile,
  openServedFile,
  type ServedFile,
  type ServedFileOpening,
  type ServedPiece,
  servedLengthBytes,
} from '../../services/shared/safe-file.js';
import { fixturePlan, fixtureReport } from '../helpers/fixtures.js';
import { makeVictims, type Victims } from '../helpers/victims.js';

// The files the receiver's open routes serve, opened on real files and planted links in a temporary OUTPUT_DIR: a
// finished run's files are served as written, and every link, foreign or odd file on the way is refused with the
// reason, its target never read.

let dir: string;
let out: string;
let victims: Victims;
let runName: string;
let runDir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-safe-file-'));
  victims = await makeVictims(dir);
  out = path.join(dir, 'out');
  ({ name: runName, dir: runDir } = await finishedRun(out));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A finished run in `baseDir` (inside `outputDir`), as the receiver leaves one: its folder, files and `latest`. */
async function finishedRun(baseDir: string, outputDir = baseDir): Promise<{ name: string; dir: string }> {
  const folder = await RunFolder.create(baseDir, fixtureReport([]).run, outputDir);
  await folder.openSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true, imageCount: 1 }));
  await folder.finish(folder.report(null), reportLibraries());
  return { name: folder.name, dir: folder.dir };
}

/** What copyServedPieces sends of `file` (then closed), as text. */
async function text(file: ServedFile, pieces?: readonly ServedPiece[]): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    await copyServedPieces(file, async (chunk) => void chunks.push(Buffer.from(chunk)), pieces);
  } finally {
    await closeServedFile(file);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The served file's text, or the opening when it is not a file. */
async function served(opening: ServedFileOpening): Promise<string | Exclude<ServedFileOpening, { kind: 'file' }>> {
  return opening.kind === 'file' ? text(opening.file) : opening;
}

const latestResults = (): Promise<ServedFileOpening> => openLatestRunFile(out, out, OUTPUT_FILES.results);

describe("the served files' openers", () => {
  it('serve the run latest names, as written, by reading the link', async () => {
    for (const file of Object.values(OUTPUT_FILES))
      expect(await served(await openLatestRunFile(out, out, file)), file).toBe(
        await readFile(path.join(runDir, file), 'utf8'),
      );
    expect(await served(await openRunFile(out, out, runName, OUTPUT_FILES.log))).toContain('=== TCP (baseline)');
  });

  it('send what the file held when opened: lines appended meanwhile are not sent', async () => {
    const opening = await openLatestRunFile(out, out, OUTPUT_FILES.log);
    if (opening.kind !== 'file') throw new Error(JSON.stringify(opening));
    const sizeBytes = opening.file.sizeBytes;
    await appendFile(path.join(runDir, OUTPUT_FILES.log), 'appended after the open\n');
    const sent = await text(opening.file);
    expect(Buffer.byteLength(sent)).toBe(sizeBytes);
    expect(sent).not.toContain('appended after the open');
  });

  it('say nothing is there before a run has finished, or for a file the run has not written', async () => {
    const empty = path.join(dir, 'empty');
    await mkdir(empty);
    expect(await openLatestRunFile(empty, empty, OUTPUT_FILES.results)).toEqual({ kind: 'absent' });
    await rm(path.join(runDir, OUTPUT_FILES.report));
    expect(await openLatestRunFile(out, out, OUTPUT_FILES.report)).toEqual({ kind: 'absent' });
  });

  it("refuse a link at the file's name in the run folder, naming where it points", async () => {
    const file = path.join(runDir, OUTPUT_FILES.results);
    await rm(file);
    await symlink(victims.file, file);
    expect(await served(await latestResults())).toEqual({
      kind: 'refused',
      reason: `${file} is a symbolic link (to ${victims.file})`,
    });
  });

  it('refuse a latest that names anything but a run folder, and one that is not a link', async () => {
    const latest = path.join(out, 'latest');
    for (const target of [victims.folder, '/etc', 'runs/../../victim-folder', `runs/${runName}/.`]) {
      await rm(latest);
      await symlink(target, latest);
      expect(await latestResults(), target).toEqual({
        kind: 'refused',
        reason: `${latest} points at ${target}, not at a run folder (runs/<name>)`,
      });
    }
    await rm(latest);
    await mkdir(latest);
    expect(await latestResults()).toEqual({
      kind: 'refused',
      reason: `${latest} is not a link (the receiver makes one)`,
    });
  });

  it('refuse a linked folder on the way: a run folder, runs, a second receiver’s folder', async () => {
    // A run folder's name, linked to a real folder elsewhere that holds a results.json.
    const elsewhere = path.join(dir, 'elsewhere');
    await mkdir(elsewhere);
    await writeFile(path.join(elsewhere, OUTPUT_FILES.results), 'not this run\n');
    const linkedRun = path.join(out, 'runs', '29990101T000000Z-abcdef');
    await symlink(elsewhere, linkedRun);
    await rm(path.join(out, 'latest'));
    await symlink('runs/29990101T000000Z-abcdef', path.join(out, 'latest'));
    expect(await latestResults()).toEqual({
      kind: 'refused',
      reason: `${linkedRun} is a symbolic link (to ${elsewhere})`,
    });
    expect(await openRunFile(out, out, '29990101T000000Z-abcdef', OUTPUT_FILES.results)).toMatchObject({
      kind: 'refused',
    });

    // runs itself, linked to the real one moved away.
    const realRuns = path.join(dir, 'real-runs');
    await rename(path.join(out, 'runs'), realRuns);
    await symlink(realRuns, path.join(out, 'runs'));
    await rm(path.join(out, 'latest'));
    await symlink(`runs/${runName}`, path.join(out, 'latest'));
    expect(await latestResults()).toEqual({
      kind: 'refused',
      reason: `${path.join(out, 'runs')} is a symbolic link (to ${realRuns})`,
    });

    // A second receiver's folder, linked to a run folder set of this user's elsewhere.
    const second = await finishedRun(path.join(dir, 'other-out'));
    expect(second.name).toMatch(/^\d{8}T/);
    await symlink(path.join(dir, 'other-out'), path.join(out, 'receiver-2'));
    expect(await openLatestRunFile(out, path.join(out, 'receiver-2'), OUTPUT_FILES.results)).toEqual({
      kind: 'refused',
      reason: `${path.join(out, 'receiver-2')} is a symbolic link (to ${path.join(dir, 'other-out')})`,
    });
  });

  it("serve a second receiver's own folder, made by its run", async () => {
    const second = await finishedRun(path.join(out, 'receiver-2'), out);
    const opening = await openLatestRunFile(out, path.join(out, 'receiver-2'), OUTPUT_FILES.log);
    expect(await served(opening)).toContain('=== TCP (baseline)');
    expect(await served(await openRunFile(out, path.join(out, 'receiver-2'), second.name, OUTPUT_FILES.log))).toContain(
      '=== TCP (baseline)',
    );
  });

  it('refuse a FIFO at the name at once (the open never waits for a writer), and a folder', async () => {
    const file = path.join(runDir, OUTPUT_FILES.results);
    await rm(file);
    execFileSync('mkfifo', [file]);
    expect(await latestResults()).toEqual({ kind: 'refused', reason: `${file} is a FIFO, not a regular file` });
    await rm(file);
    await mkdir(file);
    expect(await latestResults()).toEqual({ kind: 'refused', reason: `${file} is a folder, not a regular file` });
  });

  it('refuse a folder on the way that others can write unless it is sticky', async () => {
    await chmod(runDir, 0o777);
    expect(await latestResults()).toEqual({
      kind: 'refused',
      reason: `${runDir} is a folder others can write (mode 0777)`,
    });
    await chmod(runDir, 0o1777);
    expect((await latestResults()).kind).toBe('file');
  });

  it('refuse a file over the size bound, naming its size and the bound', async () => {
    const file = path.join(runDir, OUTPUT_FILES.results);
    await writeFile(file, 'x'.repeat(11));
    expect(await openServedFile(out, ['runs', runName, OUTPUT_FILES.results], 10)).toEqual({
      kind: 'refused',
      reason: `${file} holds 11 bytes, over the 10 one answer serves`,
    });
    const opening = await openServedFile(out, ['runs', runName, OUTPUT_FILES.results], 11);
    expect(await served(opening)).toBe('x'.repeat(11));
  });

  it('refuse any name that is not a plain one, and a run folder name of another form', async () => {
    expect(await openServedFile(out, ['runs', '..', 'victim'])).toMatchObject({ kind: 'refused' });
    expect(await openServedFile(out, ['runs/../../victim'])).toMatchObject({ kind: 'refused' });
    expect(await openRunFile(out, out, '..', OUTPUT_FILES.results)).toMatchObject({ kind: 'refused' });
    expect(await openLatestRunFile(out, dir, OUTPUT_FILES.results)).toMatchObject({ kind: 'refused' });
    await victims.expectUntouched();
  });

  it('send the pieces asked for: byte ranges of the file and bytes of their own, in order', async () => {
    const file = path.join(runDir, OUTPUT_FILES.results);
    await writeFile(file, '0123456789');
    const opening = await openServedFile(out, ['runs', runName, OUTPUT_FILES.results]);
    if (opening.kind !== 'file') throw new Error(JSON.stringify(opening));
    const pieces = [{ fromByte: 0, toByte: 3 }, Buffer.from('-ab-'), { fromByte: 7, toByte: 10 }];
    expect(servedLengthBytes(pieces)).toBe(10);
    expect(await text(opening.file, pieces)).toBe('012-ab-789');
  });
  it('refill a buffer only once the write that took it has settled, whatever the write waits for', async () => {
    const file = path.join(runDir, OUTPUT_FILES.results);
    // Four chunks' worth, each chunk of one letter: a buffer refilled too early would change a chunk in flight.
    const chunkBytes = 64 * 1024;
    await writeFile(file, Buffer.concat(['a', 'b', 'c', 'd'].map((letter) => Buffer.alloc(chunkBytes, letter))));
    const opening = await openServedFile(out, ['runs', runName, OUTPUT_FILES.results]);
    if (opening.kind !== 'file') throw new Error(JSON.stringify(opening));
    const seen: string[] = [];
    let inFlight = 0;
    await copyServedPieces(opening.file, async (chunk) => {
      inFlight++;
      const atCall = Buffer.from(chunk).toString('latin1');
      // The socket takes its time: the next chunk is read meanwhile, into the other buffer.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(Buffer.from(chunk).toString('latin1')).toBe(atCall);
      expect(inFlight).toBe(1);
      inFlight--;
      seen.push(atCall[0]!);
    });
    await closeServedFile(opening.file);
    expect(seen).toEqual(['a', 'b', 'c', 'd']);
  });

  it('reject when the write fails (a client gone), and when the file is shorter than when opened', async () => {
    const opening = await openLatestRunFile(out, out, OUTPUT_FILES.log);
    if (opening.kind !== 'file') throw new Error(JSON.stringify(opening));
    await expect(
      copyServedPieces(opening.file, async () => {
        throw new Error('the client went away');
      }),
    ).rejects.toThrow('the client went away');
    await truncate(path.join(runDir, OUTPUT_FILES.log), 10);
    await expect(copyServedPieces(opening.file, async () => undefined)).rejects.toThrow(
      `${path.join(runDir, OUTPUT_FILES.log)} ended at byte 10, before the ${opening.file.sizeBytes} it held`,
    );
    await closeServedFile(opening.file);
  });
});
