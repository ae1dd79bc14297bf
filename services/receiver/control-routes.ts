import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../core/config/config.js';
import type { FanOut, SectionPlan } from '../core/model/section.js';
import type { WarmupOutcome } from '../core/model/warmup.js';
import type { HostFacts } from '../core/report/report.js';
import { bearerToken, secretsEqual, sectionCredential } from '../core/wire/auth.js';
import { parseProcessHeader, PROCESS_HEADER } from '../core/live/process-load.js';
import {
  CLOCK_HEADER,
  fanOutSchema,
  type HealthResponse,
  type ProgressResponse,
  ROUND_TRIP_RECORD_VALUES,
  ROUND_TRIPS_BODY_LIMIT_BYTES,
  type RunAnnouncement,
  runInfoSchema,
  SECTION_END_BODY_LIMIT_BYTES,
  type SectionEnd,
  sectionEndSchema,
  sectionPlanSchema,
  warmupOutcomeSchema,
} from '../core/control/control-protocol.js';
import { followingReportEdits, renderLivePage } from '../core/report/live-page.js';
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
import { OUTPUT_FILES } from '../shared/run-folder.js';
import type { Doorkeeper } from './door.js';
import type { Listeners } from './listeners.js';
import type { RunKeeper } from './run-keeper.js';
import type { RunSession } from './session.js';

/** What the control routes answer from and act on: the receiver's parts, and the AUTH_TOKEN it started with. */
export interface ControlRoutesOptions {
  config: Readonly<Config>;
  log: Logger;
  session: RunSession;
  listeners: Listeners;
  doorkeeper: Doorkeeper;
  runs: RunKeeper;
  authToken: string;
  /** The receiver's host facts, read at each GET /health. */
  receiverHost: () => HostFacts;
}

/** The receiver's HTTP control routes: the transmitter's run and sections, and the read-only pages and files. */
export const controlRoutes: FastifyPluginAsync<ControlRoutesOptions> = async (app, options) => {
  const { config, log, session, listeners, doorkeeper, runs, authToken, receiverHost } = options;
  // Requests refused for a missing or wrong AUTH_TOKEN since the receiver started, for GET /health.
  let refusedRequests = 0;
  // Only the transmitter holding AUTH_TOKEN may change anything or keep a run alive; GET /,
  // /health, /progress and /results.json only read and stay open. Checked on request, so a refused
  // request's body is never parsed, validated or acted on.
  const onRequest = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const presented = bearerToken(request.headers.authorization);
    if (presented === undefined || !secretsEqual(presented, authToken)) {
      refusedRequests++;
      log.warn(
        { method: request.method, url: request.url, from: request.ip, refusedRequests },
        presented === undefined
          ? 'control request without AUTH_TOKEN refused'
          : 'control request with a wrong AUTH_TOKEN refused',
      );
      const status = presented === undefined ? 401 : 403;
      if (status === 401) void reply.header('www-authenticate', 'Bearer realm="image-transfer-bench"');
      await reply.code(status).send({
        error:
          presented === undefined
            ? 'this request needs the AUTH_TOKEN the receiver was started with (Authorization: Bearer <token>)'
            : 'wrong AUTH_TOKEN',
      });
      return;
    }
    // A refused second POST /runs is not the run's transmitter: it must not keep the run alive
    // against the watchdog (the route touches on success).
    if (request.routeOptions.url !== '/runs') session.touch();
  };
  // The port opens before the listeners start: while they (or the end of a run a receiver died in) are awaited, the
  // answer says "starting" and what for, with 503 so that a probe reading only the status waits for "ready".
  app.get('/health', async (_request, reply): Promise<HealthResponse> => {
    const waitingFor = { listeners: listeners.waitingFor(), abandonedRuns: runs.findingAbandonedRuns };
    const starting = waitingFor.listeners.length > 0 || waitingFor.abandonedRuns;
    if (starting) void reply.code(503).header('retry-after', '1');
    return {
      status: starting ? 'starting' : 'ready',
      waitingFor,
      listeners: listeners.status(),
      host: receiverHost(),
      counters: {
        rejectedInputs: session.rejectedInputs,
        rejectedFrames: session.rejectedFrames,
        refusedConnections: doorkeeper.refusedConnections,
        refusedRequests,
      },
    };
  });
  // Read-only and secret-free like /health, for a soak's sampler (npm run bench -- soak): finished sections' arrivals
  // plus the open one's.
  app.get('/progress', async (): Promise<ProgressResponse> => runs.progress());
  // Read as late as the request allows before answering: the transmitter brackets this with its
  // own clock and reads it at the response headers.
  app.get('/clock', { onRequest }, (_request, reply) => {
    void reply.header(CLOCK_HEADER, String(process.hrtime.bigint())).send();
  });
  app.post('/runs', { onRequest, schema: { body: runInfoSchema } }, async (request, reply) => {
    // One run at a time: a second transmitter is refused, and the run in progress goes on and
    // keeps its files; one whose transmitter went silent is ended by the watchdog.
    if (session.inProgress) {
      const refusal = runs.inProgressRefusal();
      log.warn({ from: unmappedAddress(request.ip), reason: refusal }, 'second run refused');
      return reply.code(409).send({ error: refusal });
    }
    const announcement = request.body as RunAnnouncement;
    await runs.startRun(announcement, unmappedAddress(request.ip));
    // Under DURATION IMAGE_COUNT is unused: the run goes by time, and each section says what it sent when it ends.
    const durationMs = session.runInfo?.config.durationMs;
    log.info(
      {
        ...(durationMs === undefined ? { imageCount: announcement.imageCount } : { durationMs }),
        imageSizeBytes: announcement.imageSizeBytes,
        window: announcement.window,
        repeat: announcement.repeat,
        transports: announcement.transports,
      },
      'run started',
    );
    return reply.code(204).send();
  });
  app.post('/sections', { onRequest, schema: { body: sectionPlanSchema } }, async (request, reply) => {
    const plan = request.body as SectionPlan;
    if (!session.inProgress) return reply.code(409).send({ error: 'no run started' });
    const credential = sectionCredential(authToken, plan.sectionId);
    const refusal = await runs.openSection(plan, credential, unmappedAddress(request.ip));
    if (refusal !== undefined) {
      log.error({ transport: plan.transport, reason: refusal }, 'section refused');
      return reply.code(409).send({ error: refusal });
    }
    log.info({ transport: plan.transport, repeat: plan.repeat, sectionId: plan.sectionId }, 'section started');
    return reply.code(204).send();
  });
  app.post(
    '/sections/:sectionId/measure',
    { onRequest, schema: { body: warmupOutcomeSchema } },
    async (request, reply) => {
      if (!session.isOpen((request.params as { sectionId: string }).sectionId))
        return reply.code(409).send({ error: 'that section is not open' });
      const refusal = session.startMeasuring(request.body as WarmupOutcome);
      if (refusal !== undefined) return reply.code(409).send({ error: refusal });
      await runs.folder?.measuring(request.body as WarmupOutcome);
      return reply.code(204).send();
    },
  );
  // The transmitter's round trips, in binary batches as its acks come (see ROUND_TRIP_RECORD_VALUES).
  app.addContentTypeParser(
    'application/octet-stream',
    { parseAs: 'buffer', bodyLimit: ROUND_TRIPS_BODY_LIMIT_BYTES },
    (_request, body, done) => done(null, body),
  );
  app.post(
    '/sections/:sectionId/round-trips',
    { onRequest, bodyLimit: ROUND_TRIPS_BODY_LIMIT_BYTES },
    async (request, reply) => {
      const body = request.body;
      if (!Buffer.isBuffer(body) || body.byteLength % (ROUND_TRIP_RECORD_VALUES * 8) !== 0)
        return reply.code(400).send({
          error: `expected application/octet-stream of ${ROUND_TRIP_RECORD_VALUES * 8}-byte round-trip records`,
        });
      const sectionId = (request.params as { sectionId: string }).sectionId;
      if (!(await session.roundTrips(sectionId, body, parseProcessHeader(request.headers[PROCESS_HEADER]))))
        return reply.code(409).send({ error: 'that section is not open' });
      return reply.code(204).send();
    },
  );
  // The transmitter's side of a section, with its per-second round trips: its own, larger limit.
  app.post(
    '/sections/:sectionId/end',
    { onRequest, schema: { body: sectionEndSchema }, bodyLimit: SECTION_END_BODY_LIMIT_BYTES },
    async (request, reply) => {
      if (!session.isOpen((request.params as { sectionId: string }).sectionId))
        return reply.code(409).send({ error: 'that section is not open' });
      const result = (await runs.endSection(request.body as SectionEnd))!;
      log.info(
        {
          transport: result.transport,
          repeat: result.repeat,
          ok: result.ok,
          imageCount: result.imageCount,
          okCount: result.okCount,
          lostCount: result.lostCount,
          corruptCount: result.corruptCount,
          totalMs: result.totalMs,
        },
        'section ended',
      );
      return result;
    },
  );
  // RECEIVERS > 1: the first receiver gets every receiver's figures once the section is over everywhere.
  app.post('/sections/:sectionId/fan-out', { onRequest, schema: { body: fanOutSchema } }, async (request, reply) => {
    const result = session.attachFanOut(
      Number((request.params as { sectionId: string }).sectionId),
      request.body as FanOut,
    );
    if (result === undefined) return reply.code(409).send({ error: 'no such section in this run' });
    await runs.folder?.replaceSection(result);
    return result;
  });
  app.post('/runs/finish', { onRequest }, async (_request, reply) => {
    const finished = await runs.endRun(null);
    if (finished === undefined) return reply.code(409).send({ error: 'no run started' });
    return finished;
  });
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

const HTML_TYPE = 'text/html; charset=utf-8';

/** How far into report.html's start and end GET / looks for the policy it widens and the body end it adds before. */
const REPORT_EDIT_WINDOW_BYTES = 64 * 1024;

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
