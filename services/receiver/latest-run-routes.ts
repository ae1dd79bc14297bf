import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../core/config/config.js';
import { followingReportEdits, renderLivePage } from '../core/report/live-page.js';
import { OUTPUT_FILES } from '../core/report/run-files.js';
import { unmappedAddress } from '../shared/net.js';
import { livePageLibraries } from '../shared/report-assets.js';
import {
  closeServedFile,
  openLatestRunFile,
  readServedBytes,
  sendServedFile,
  type ServedFile,
  type ServedPiece,
  wholeFile,
} from '../shared/safe-file.js';
import type { RunKeeper } from './run-keeper.js';
import type { RunSession } from './session.js';

// The last run's files, for people and for a receiver on another node (a cluster: no copy out needed): GET / (the
// live page during a run), /results.json and /output.log. Open like GET /health: nothing here holds a secret. The
// files are opened through `latest` without following a link planted on the way (services/shared/safe-file.ts).

/** What the last run's routes read: OUTPUT_DIR, where this receiver's runs go, the run open now; where refusals go. */
export interface LatestRunRoutesOptions {
  config: Readonly<Config>;
  log: Logger;
  session: RunSession;
  runs: RunKeeper;
}

const HTML_TYPE = 'text/html; charset=utf-8';

/** How far into report.html's start and end GET / looks for the policy it widens and the body end it adds before. */
const REPORT_EDIT_WINDOW_BYTES = 64 * 1024;

/** GET / and the last run's /results.json and /output.log: see the module comment. */
export const latestRunRoutes: FastifyPluginAsync<LatestRunRoutesOptions> = async (app, options) => {
  const { config, log, session, runs } = options;
  // A file refused (a link, another user's, too large): one line with the reason; the client learns only that it is
  // not served.
  const refused = (request: FastifyRequest, reason: string): void =>
    log.warn({ url: request.url, from: unmappedAddress(request.ip), reason }, 'file not served');
  // For people: the live page during a run (and before any), the last run's report otherwise. A run
  // that just ended is waited for: the live page reloads on `run-end`, which goes out before
  // report.html is written. HEAD is answered here too: fastify's own would read the whole file.
  app.route({
    method: ['GET', 'HEAD'],
    url: '/',
    handler: async (request, reply) => {
      await runs.filesWritten();
      const libraries = livePageLibraries();
      const opening = session.inProgress
        ? undefined
        : await openLatestRunFile(config.outputDir, session.outputDir(config.outputDir), OUTPUT_FILES.report);
      if (opening?.kind === 'file') {
        const pieces = await followingReportPieces(opening.file, libraries.followScript).catch(async (err: unknown) => {
          await closeServedFile(opening.file);
          throw err;
        });
        return sendServedFile(reply, opening.file, HTML_TYPE, pieces);
      }
      if (opening?.kind === 'refused') refused(request, opening.reason);
      return reply.type(HTML_TYPE).send(renderLivePage(libraries));
    },
  });
  // The last run's files, for a receiver on another node (a cluster): no copy out needed.
  const serveFile = (url: string, file: string, type: string): void => {
    app.route({
      method: ['GET', 'HEAD'],
      url,
      handler: async (request, reply) => {
        const opening = await openLatestRunFile(config.outputDir, session.outputDir(config.outputDir), file);
        if (opening.kind === 'file') return sendServedFile(reply, opening.file, type);
        if (opening.kind === 'absent') return reply.code(404).send({ error: 'no run has finished yet' });
        refused(request, opening.reason);
        return reply.code(404).send({ error: `${file} is not served: the receiver's log says why` });
      },
    });
  };
  serveFile('/results.json', OUTPUT_FILES.results, 'application/json; charset=utf-8');
  serveFile('/output.log', OUTPUT_FILES.log, 'text/plain; charset=utf-8');
};

// report.html as followingReport makes it, streamed from its file: its start and end are read to find where the
// edits go, the rest is sent as it is read. A report without them (another version's) is sent unchanged.
async function followingReportPieces(file: ServedFile, followScript: string): Promise<ServedPiece[]> {
  const edits = followingReportEdits(followScript);
  const head = await readServedBytes(file, 0, REPORT_EDIT_WINDOW_BYTES);
  const tailFromByte = Math.max(0, file.sizeBytes - REPORT_EDIT_WINDOW_BYTES);
  const tail = await readServedBytes(file, tailFromByte, file.sizeBytes - tailFromByte);
  const policyAt = head.indexOf(edits.policy);
  const policyEnd = policyAt + Buffer.byteLength(edits.policy);
  const bodyEndInTail = tail.lastIndexOf(edits.bodyEnd);
  const bodyEndAt = tailFromByte + bodyEndInTail;
  if (policyAt < 0 || bodyEndInTail < 0 || bodyEndAt < policyEnd) return wholeFile(file);
  return [
    { fromByte: 0, toByte: policyAt },
    Buffer.from(edits.livePolicy),
    { fromByte: policyEnd, toByte: bodyEndAt },
    Buffer.from(edits.beforeBodyEnd),
    { fromByte: bodyEndAt, toByte: file.sizeBytes },
  ];
}
