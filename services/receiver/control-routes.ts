import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../core/config/config.js';
import type { FanOut, SectionPlan } from '../core/model/section.js';
import type { WarmupOutcome } from '../core/model/warmup.js';
import type { HostFacts } from '../core/report/report.js';
import { bearerToken, secretsEqual, sectionCredential } from '../core/wire/auth.js';
import { parseProcessHeader, PROCESS_HEADER } from '../core/live/process-load.js';
import {
  CLOCK_HEADER,
  CONTROL_BODY_LIMIT_BYTES,
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
import { CPU_PROFILE_BODY_LIMIT_BYTES, CPU_PROFILE_CONTENT_TYPE } from '../core/control/cpu-profile.js';
import { formatSize } from '../core/config/size.js';
import { unmappedAddress } from '../shared/net.js';
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

/** Checks a control request's AUTH_TOKEN before anything else is done with it; counts the requests it refused. */
interface TransmitterGuard {
  onRequest: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** Requests refused for a missing or wrong AUTH_TOKEN since the receiver started, for GET /health. */
  refusedRequests(): number;
}

/**
 * The receiver's HTTP control routes: the read-only probes and the transmitter's run and sections (the last run's
 * files are ./latest-run-routes.ts's).
 */
export const controlRoutes: FastifyPluginAsync<ControlRoutesOptions> = async (app, options) => {
  const guard = transmitterGuard(options);
  probeRoutes(app, options, guard);
  runRoutes(app, options, guard);
  sectionRoutes(app, options, guard);
};

// Only the transmitter holding AUTH_TOKEN may change anything or keep a run alive; GET /,
// /health, /progress and /results.json only read and stay open. Checked on request, so a refused
// request's body is never parsed, validated or acted on.
function transmitterGuard({ log, session, authToken }: ControlRoutesOptions): TransmitterGuard {
  let refusedRequests = 0;
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
  return { onRequest, refusedRequests: () => refusedRequests };
}

/** GET /health, /progress and /clock: what a probe, a soak's sampler and the transmitter's clock reading ask. */
function probeRoutes(app: FastifyInstance, options: ControlRoutesOptions, guard: TransmitterGuard): void {
  const { session, listeners, doorkeeper, runs, receiverHost } = options;
  const { onRequest } = guard;
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
        refusedRequests: guard.refusedRequests(),
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
}

/** POST /runs and /runs/finish: the transmitter starts a run, and ends it. */
function runRoutes(app: FastifyInstance, options: ControlRoutesOptions, { onRequest }: TransmitterGuard): void {
  const { log, session, runs } = options;
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
  app.post('/runs/finish', { onRequest }, async (_request, reply) => {
    const finished = await runs.endRun(null);
    if (finished === undefined) return reply.code(409).send({ error: 'no run started' });
    return finished;
  });
}

/** POST /sections and the open section's measure, round trips, end and fan-out: one section after another. */
function sectionRoutes(app: FastifyInstance, options: ControlRoutesOptions, { onRequest }: TransmitterGuard): void {
  const { log, session, runs, authToken } = options;
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
  cpuProfileRoute(app, options, onRequest);
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
}

/**
 * POST /sections/:sectionId/cpu-profile (PROFILE=1): the transmitter's CPU profile of the open section, gzipped, for
 * the run's folder. Only this route takes a body up to CPU_PROFILE_BODY_LIMIT_BYTES; a larger one is refused with 413
 * before it is read.
 */
function cpuProfileRoute(
  app: FastifyInstance,
  options: ControlRoutesOptions,
  onRequest: TransmitterGuard['onRequest'],
): void {
  const { session, runs } = options;
  // Other routes given this type keep the control port's own limit.
  app.addContentTypeParser(
    CPU_PROFILE_CONTENT_TYPE,
    { parseAs: 'buffer', bodyLimit: CONTROL_BODY_LIMIT_BYTES },
    (_request, body, done) => done(null, body),
  );
  app.post(
    '/sections/:sectionId/cpu-profile',
    {
      onRequest,
      bodyLimit: CPU_PROFILE_BODY_LIMIT_BYTES,
      errorHandler: (error, _request, reply) => {
        const tooLarge = error.code === 'FST_ERR_CTP_BODY_TOO_LARGE';
        void reply.code(tooLarge ? 413 : (error.statusCode ?? 500)).send({
          error: tooLarge
            ? `a CPU profile over ${formatSize(CPU_PROFILE_BODY_LIMIT_BYTES)} gzipped is refused`
            : error.message,
        });
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (!Buffer.isBuffer(body))
        return reply.code(400).send({ error: `expected ${CPU_PROFILE_CONTENT_TYPE}: a gzipped .cpuprofile` });
      const sectionIdText = (request.params as { sectionId: string }).sectionId;
      if (!session.isOpen(sectionIdText)) return reply.code(409).send({ error: 'that section is not open' });
      const refusal = await runs.transmitterProfile(Number(sectionIdText), body);
      if (refusal !== undefined) return reply.code(refusal.statusCode).send({ error: refusal.error });
      return reply.code(204).send();
    },
  );
}
