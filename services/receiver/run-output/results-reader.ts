import { Worker } from 'node:worker_threads';
import type { ReadOutcome } from '../../core/report/runs-list.js';

// Reading kept runs' results.json for the receiver's GET /runs without stalling its event loop,
// which stamps arrivals: a day-long soak's results.json holds tens of megabytes of per-second
// series, and JSON.parse of that is a synchronous stretch of 100 ms and more. A worker thread reads
// and parses each file, drops the bulk (per-image records, per-second series, or every section
// field but those asked for), and posts one file's value at a time, so what the event loop takes
// in is small and comes in small pieces. One worker per batch, ended when it is done: nothing
// stays running between page views.

/** Largest results.json read: a bigger one is listed as too large (its files are still served as they are). */
export const MAX_RESULTS_BYTES = 64 * 1024 * 1024;
/** The worker's heap: JSON.parse of MAX_RESULTS_BYTES of results takes several times the text. */
const WORKER_HEAP_MB = 1024;

// CommonJS, evaluated (not a file): the same source runs under tsc's output and under vitest.
// O_NOFOLLOW: a link planted in a run's folder is not followed.
const READER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { files, keep, maxBytes } = workerData;
const trim = (value) => {
  if (value === null || typeof value !== 'object' || !Array.isArray(value.sections)) return value;
  const sections = value.sections.map((s) => {
    if (s === null || typeof s !== 'object') return s;
    if (keep === null) {
      const { images, series, ...rest } = s;
      return rest;
    }
    const kept = {};
    for (const key of keep) if (key in s) kept[key] = s[key];
    return kept;
  });
  return { ...value, sections };
};
for (const file of files) {
  let result;
  try {
    const fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW || 0));
    try {
      const stats = fs.fstatSync(fd);
      if (!stats.isFile()) result = { ok: false, problem: 'not a regular file' };
      else if (stats.size > maxBytes)
        result = { ok: false, problem: 'too large to list (' + stats.size + ' bytes, over ' + maxBytes + ')' };
      else {
        const text = fs.readFileSync(fd, 'utf8');
        try {
          result = { ok: true, value: trim(JSON.parse(text)) };
        } catch (err) {
          result = { ok: false, problem: 'not valid JSON (' + err.message + ')' };
        }
      }
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    result = { ok: false, problem: 'cannot read it (' + (err.code || err.message) + ')' };
  }
  parentPort.postMessage(result);
}
`;

/**
 * Reads and parses `files` (results.json paths) in a worker thread, in order. `keep` names the
 * section fields kept (null: every field but the bulk). Never rejects: a file that cannot be read,
 * or a worker that died (out of memory), gives a problem in that file's place.
 */
export function readResultsOffThread(files: readonly string[], keep: readonly string[] | null): Promise<ReadOutcome[]> {
  if (files.length === 0) return Promise.resolve([]);
  return new Promise((resolve) => {
    const results: ReadOutcome[] = [];
    let failure = 'the reader stopped';
    const worker = new Worker(READER_SOURCE, {
      eval: true,
      workerData: { files, keep, maxBytes: MAX_RESULTS_BYTES },
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
    });
    // A page view never keeps the receiver from exiting.
    worker.unref();
    worker.on('message', (result: ReadOutcome) => results.push(result));
    worker.on('error', (err) => {
      failure = `the reader failed: ${err.message}`;
    });
    worker.on('exit', () => {
      while (results.length < files.length) results.push({ ok: false, problem: failure });
      resolve(results);
    });
  });
}
