import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../core/config/config.js';
import { HTML_REPORT_CSP } from '../core/report/html/page.js';
import type { RunReport } from '../core/report/report.js';
import {
  HEADLINE_SECTION_FIELDS,
  headlineOf,
  type HeadlineContext,
  type ReadOutcome,
  type RunHeadline,
} from '../core/report/runs-list.js';
import { renderComparePage, renderCompareRefusal, renderRunsPage, RUNS_PAGE_CSP } from '../core/report/runs-page.js';
import { OUTPUT_FILES, RUN_FOLDER_NAME, RUN_IN_PROGRESS, RUNS_FOLDER } from '../core/report/run-files.js';
import { unmappedAddress } from '../shared/net.js';
import { folderChainProblem, openRunFile, sendServedFile } from '../shared/safe-file.js';
import { runFolders } from '../shared/run-folders.js';
import { readResultsOffThread } from './run-output/results-reader.js';
import type { RunKeeper } from './run-keeper.js';
import type { RunSession } from './session.js';

// The runs kept in OUTPUT_DIR, for people: GET /runs (a page), GET /runs.json (the same list as
// JSON), GET /runs/compare?a=<folder>&b=<folder> (two runs side by side) and each listed run's
// report.html and results.json by folder name. Open and read-only like GET /health: nothing here
// holds a secret. A folder name is served only when it has the run-folder form and is a real folder
// (not a link) in a runs/ folder of the receiver's own (runFolders); files are opened without
// following links, as services/shared/safe-file.ts says. The receiver measures on this event loop,
// so results.json files are parsed in a worker (./run-output/results-reader.ts), one batch at a
// time, and what a listing read is kept until the file changes: a finished run is read once.

/** Most runs listed (and offered for comparison), newest first; older ones stay on disk, unlisted. */
export const LISTED_RUNS_LIMIT = 200;

/** What the runs routes read: OUTPUT_DIR, where this receiver's runs go, and the run open now; where refusals go. */
export interface RunsRoutesOptions {
  config: Readonly<Config>;
  session: RunSession;
  runs: RunKeeper;
  log: Logger;
}

/** GET /runs, /runs.json, /runs/compare and /runs/<folder>/{report.html,results.json}: see the module comment. */
export const runsRoutes: FastifyPluginAsync<RunsRoutesOptions> = async (app, { config, session, runs, log }) => {
  const runsDir = (): string => path.join(path.resolve(session.outputDir(config.outputDir)), RUNS_FOLDER);
  // What each listed folder's results.json gave when last read, by folder: its file's identity then.
  const readCache = new Map<string, { fileKey: string; read: ReadOutcome }>();
  // One reading worker at a time, however many pages are asked for at once.
  let reading: Promise<unknown> = Promise.resolve();
  const oneAtATime = <T>(task: () => Promise<T>): Promise<T> => {
    const next = reading.then(task, task);
    reading = next.catch(() => undefined);
    return next;
  };
  const context = (): HeadlineContext => ({ openFolder: runs.folder?.name, unendedStopReason: RUN_IN_PROGRESS });

  // The kept run folders' names, newest first (a name starts with its start time). A second receiver's folder on the
  // way to them must be a real one of this user's, as for the files served.
  async function keptFolderNames(): Promise<string[]> {
    const below = path.relative(path.resolve(config.outputDir), path.dirname(runsDir()));
    if (below !== '' && (await folderChainProblem(config.outputDir, below.split(path.sep))) !== undefined) return [];
    const dirs = await runFolders(path.dirname(runsDir()));
    return dirs
      .map((dir) => path.basename(dir))
      .filter((name) => RUN_FOLDER_NAME.test(name))
      .reverse();
  }

  // The folder of the kept run named `name`; undefined unless it has the form and is listed as a real folder.
  async function keptFolder(name: unknown): Promise<string | undefined> {
    if (typeof name !== 'string' || !RUN_FOLDER_NAME.test(name)) return undefined;
    return (await keptFolderNames()).includes(name) ? path.join(runsDir(), name) : undefined;
  }

  // The newest LISTED_RUNS_LIMIT runs' headlines; only files new or changed since the last listing are read.
  async function listing(): Promise<{ runs: RunHeadline[]; total: number }> {
    const names = await keptFolderNames();
    const listed = names.slice(0, LISTED_RUNS_LIMIT);
    const fileKeys = await Promise.all(
      listed.map((name) =>
        lstat(path.join(runsDir(), name, OUTPUT_FILES.results)).then(
          (s) => `${s.ino}:${s.size}:${s.mtimeMs}`,
          () => 'absent',
        ),
      ),
    );
    const stale = listed.flatMap((name, i) => (readCache.get(name)?.fileKey === fileKeys[i] ? [] : [i]));
    const reads = await oneAtATime(() =>
      readResultsOffThread(
        stale.map((i) => path.join(runsDir(), listed[i]!, OUTPUT_FILES.results)),
        HEADLINE_SECTION_FIELDS,
      ),
    );
    for (const [k, i] of stale.entries()) readCache.set(listed[i]!, { fileKey: fileKeys[i]!, read: reads[k]! });
    for (const name of readCache.keys()) if (!listed.includes(name)) readCache.delete(name);
    const now = context();
    return { runs: listed.map((name) => headlineOf(name, readCache.get(name)!.read, now)), total: names.length };
  }

  const sendPage = (reply: FastifyReply, html: string, status = 200): FastifyReply =>
    reply.code(status).header('content-security-policy', RUNS_PAGE_CSP).type('text/html; charset=utf-8').send(html);

  app.get('/runs', async (_request, reply) => {
    const { runs: listed, total } = await listing();
    return sendPage(reply, renderRunsPage(listed, total, LISTED_RUNS_LIMIT));
  });
  app.get('/runs.json', async () => {
    const { runs: listed, total } = await listing();
    return { limit: LISTED_RUNS_LIMIT, total, runs: listed };
  });

  app.get('/runs/compare', async (request, reply) => {
    const query = request.query as { a?: unknown; b?: unknown };
    const [beforeDir, afterDir] = [await keptFolder(query.a), await keptFolder(query.b)];
    if (beforeDir === undefined || afterDir === undefined) {
      const { runs: listed } = await listing();
      return sendPage(reply, renderCompareRefusal('Choose two runs kept here (a= and b=).', listed), 404);
    }
    const files = [beforeDir, afterDir].map((dir) => path.join(dir, OUTPUT_FILES.results));
    const reads = await oneAtATime(() => readResultsOffThread(files, null));
    const now = context();
    const [before, after] = [beforeDir, afterDir].map((dir, i) => {
      const read = reads[i]!;
      return { folder: path.basename(dir), read, headline: headlineOf(path.basename(dir), read, now) };
    }) as [Compared, Compared];
    const { runs: listed } = await listing();
    const refusal = [before, after].flatMap((run) =>
      run.headline.state === 'finished' || run.headline.state === 'not-ended'
        ? []
        : [`${run.folder}: ${run.headline.problem ?? 'the run is in progress; compare it once it has ended'}`],
    );
    if (refusal.length > 0 || !before.read.ok || !after.read.ok)
      return sendPage(reply, renderCompareRefusal(`Cannot compare: ${refusal.join('; ')}`, listed), 409);
    const page = comparePage(before, after, listed);
    return sendPage(reply, page.html, page.status);
  });

  // A listed run's own files, by folder name: only those of a kept run, opened as safe-file.ts says (no link on the
  // way, this user's regular file, streamed up to its size when opened). HEAD is answered here: fastify's own would
  // read the whole file.
  const serveRunFile = (file: string, type: string, csp?: string): void => {
    app.route({
      method: ['GET', 'HEAD'],
      url: `/runs/:folder/${file}`,
      handler: async (request, reply) => {
        const dir = await keptFolder((request.params as { folder: string }).folder);
        if (dir === undefined) return reply.code(404).send({ error: 'no such run kept here' });
        const opening = await openRunFile(
          config.outputDir,
          session.outputDir(config.outputDir),
          path.basename(dir),
          file,
        );
        if (opening.kind === 'absent') return reply.code(404).send({ error: `this run has no ${file} (yet)` });
        if (opening.kind === 'refused') {
          log.warn({ url: request.url, from: unmappedAddress(request.ip), reason: opening.reason }, 'file not served');
          return reply.code(404).send({ error: `${file} is not served: the receiver's log says why` });
        }
        if (csp !== undefined) void reply.header('content-security-policy', csp);
        return sendServedFile(reply, opening.file, type);
      },
    });
  };
  serveRunFile(OUTPUT_FILES.report, 'text/html; charset=utf-8', HTML_REPORT_CSP);
  serveRunFile(OUTPUT_FILES.results, 'application/json; charset=utf-8');
};

/** A run chosen for comparison: its folder, what reading it gave, and its headline. */
interface Compared {
  folder: string;
  read: ReadOutcome;
  headline: RunHeadline;
}

// The comparison page; a results.json whose shape passed but whose figures do not (hand-edited) is refused, not a 500.
function comparePage(before: Compared, after: Compared, listed: RunHeadline[]): { html: string; status: number } {
  const reportOf = (run: Compared): RunReport => (run.read as { value: RunReport }).value;
  try {
    return {
      html: renderComparePage(
        { folder: before.folder, report: reportOf(before) },
        { folder: after.folder, report: reportOf(after) },
        listed,
      ),
      status: 200,
    };
  } catch (err) {
    const reason = `Cannot compare: a results.json is partial (${err instanceof Error ? err.message : String(err)})`;
    return { html: renderCompareRefusal(reason, listed), status: 409 };
  }
}
