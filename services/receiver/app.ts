import { readFile } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { bearerToken, secretsEqual, sectionCredential } from '../core/wire/auth.js';
import type { Config } from '../core/config/config.js';
import {
  CLOCK_HEADER,
  CONTROL_BODY_LIMIT_BYTES,
  CONTROL_CONNECTION_LIMITS,
  type ConnectionLimits,
  ROUND_TRIP_RECORD_VALUES,
  ROUND_TRIPS_BODY_LIMIT_BYTES,
  runInfoSchema,
  SECTION_END_BODY_LIMIT_BYTES,
  fanOutSchema,
  sectionEndSchema,
  sectionPlanSchema,
  warmupOutcomeSchema,
  type HealthResponse,
  type ListenerStatus,
  type ProgressResponse,
  type RunAnnouncement,
  type RunFinish,
  type SectionEnd,
} from '../core/wire/control-protocol.js';
import { errorMessage } from '../core/errors.js';
import { renderSummary, runSucceeded } from '../core/report/report.js';
import type { FanOut, SectionPlan, SectionResult } from '../core/model/section.js';
import type { WarmupOutcome } from '../core/model/warmup.js';
import { receiverAuthToken } from '../shared/auth-token.js';
import { guardConnections } from '../shared/connection-guard.js';
import { hostFacts } from '../shared/host.js';
import { hostPort, singleListenHost, unmappedAddress } from '../shared/net.js';
import { reportLibraries } from '../shared/report-assets.js';
import { completeRun, lastWriteMs, OUTPUT_FILES, RunFolder, runFolders } from '../shared/run-folder.js';
import { transportByName } from '../transports/index.js';
import { connectionsPerSection, Doorkeeper } from './door.js';
import { Listeners } from './listeners.js';
import { renderLivePage } from './live-page.js';
import { RunSession } from './session.js';

/** A receiver: one listener per configured transport plus the HTTP control endpoint. */
export interface ReceiverApp {
  /** Starts every listener, then the control endpoint; a listener that fails is reported, not fatal. */
  start(): Promise<{ controlPort: number; listeners: Record<string, ListenerStatus> }>;
  /**
   * Writes the output files of a run still in progress (marked incomplete with `reason`), then
   * closes the control endpoint and every listener; safe to call twice.
   */
  close(reason?: string): Promise<void>;
}

export { OUTPUT_FILES } from '../shared/run-folder.js';

/** How much longer than the watchdog's limit a run must have been silent before a starting receiver completes it. */
const ABANDONED_RUN_GRACE_MS = 60_000;

/** Extra time the watchdog allows beyond the transmitter's own longest wait before declaring it gone. */
const WATCHDOG_GRACE_MS = 5000;

/** The run in progress: when this receiver accepted it (its own clock) and the transmitter's address as it saw it. */
interface RunHolder {
  startedAt: string;
  peer: string;
}

/** Why a second POST /runs is refused: the run in progress, and how long a silent one can still hold the receiver. */
function runInProgress(holder: RunHolder | undefined, idleLimitMs: number): string {
  const who = holder === undefined ? '' : `: started ${holder.startedAt} by ${holder.peer}`;
  return (
    `a run is in progress${who}; it keeps its files; wait for it to end (or for the receiver's ` +
    `watchdog, ${idleLimitMs / 1000} s after the transmitter goes silent: the longer of IMAGE_TIMEOUT_MS and ` +
    `CONNECT_TIMEOUT_MS, plus 5 s)`
  );
}

/**
 * Builds a receiver from a validated config; nothing listens until start(). `controlLimits` bound the control port's
 * connections (tests shorten its timeouts).
 */
export function buildReceiver(
  config: Readonly<Config>,
  log: Logger,
  controlLimits: Readonly<ConnectionLimits> = CONTROL_CONNECTION_LIMITS,
): ReceiverApp {
  // The libraries this receiver's listeners use: only theirs are loaded.
  const receiverHost = (): ReturnType<typeof hostFacts> => hostFacts(config.transports.map(transportByName));
  let rejectedInputs = 0;
  let rejectedFrames = 0;
  let refusedRequests = 0;
  // Read in start(): AUTH_TOKEN, or the token file (created there when missing).
  let authToken: string | undefined;
  const doorkeeper = new Doorkeeper((transport, reason, refusedConnections) =>
    log.warn({ transport, reason, refusedConnections }, 'connection refused'),
  );
  // The transport whose section the door is open for, so its listener can release what it prepared.
  let dataSectionTransport: string | undefined;
  // The listeners deliver into the session, and the session reads brokers through the listeners;
  // neither calls the other before start().
  const listeners: Listeners = new Listeners(config, log, doorkeeper, {
    deliver(frame) {
      const ack = session.deliver(frame);
      if (ack.status === 'rejected') rejectedFrames++;
      return ack;
    },
    onReject(transport, reason) {
      rejectedInputs++;
      log.warn({ transport, reason, rejectedInputs }, 'input rejected');
    },
    onFailure(transport, reason) {
      session.listenerFailed(transport, `receiver's ${transport} listener failed: ${reason}`);
    },
  });
  const session = new RunSession(log, receiverHost, config.verify, (transport) => listeners.readBroker(transport));
  let control: FastifyInstance | undefined;
  // GET /progress's counts of the run in progress, or of the last one once it ended.
  let lastRunCounts = { recorded: 0, imageCount: 0 };
  // The open run's folder: its files are written as the run goes.
  let folder: RunFolder | undefined;
  let watchdog: NodeJS.Timeout | undefined;
  let closing: Promise<void> | undefined;
  // The transmitter never stays silent longer than its longest wait (a connect, or an ack).
  const idleLimitMs = Math.max(config.imageTimeoutMs, config.connectTimeoutMs) + WATCHDOG_GRACE_MS;
  // Who holds the run in progress, named to a second transmitter when it is refused.
  let runHolder: RunHolder | undefined;

  // Shuts the door on the section's links and lets its listener release what it prepared.
  async function closeDataSection(): Promise<void> {
    doorkeeper.closeSection();
    const transport = dataSectionTransport;
    dataSectionTransport = undefined;
    if (transport !== undefined)
      await listeners
        .closeSection(transport)
        .catch((err: unknown) => log.warn({ transport, err: errorMessage(err) }, 'section not released'));
  }

  // Opens the door to the section's one link, after its listener prepared what it needs; returns
  // why not when it cannot. `transmitterHost` is where the section's control request came from.
  async function openDataSection(plan: SectionPlan, transmitterHost: string): Promise<string | undefined> {
    const credential = sectionCredential(authToken!, plan.sectionId);
    // The door is open before a listener that dials the transmitter (websocket-push) admits its own connection.
    // Each client holds one link's connections.
    doorkeeper.openSection(
      plan.transport,
      credential,
      plan.clients * connectionsPerSection(transportByName(plan.transport), plan.window),
    );
    try {
      await listeners.openSection(plan.transport, {
        credential,
        window: plan.window,
        transmitterHost,
        receiverIndex: plan.receiverIndex,
      });
    } catch (err) {
      doorkeeper.closeSection();
      return `receiver's ${plan.transport} listener could not prepare the section: ${errorMessage(err)}`;
    }
    dataSectionTransport = plan.transport;
    return undefined;
  }

  // Starts a run's folder; a run whose folder cannot be made does not start (the reason names the path).
  async function startRun(announcement: RunAnnouncement): Promise<void> {
    session.start(announcement);
    try {
      folder = await RunFolder.create(
        path.resolve(session.outputDir(config.outputDir)),
        session.runInfo!,
        path.resolve(config.outputDir),
      );
    } catch (err) {
      folder = undefined;
      await session.finish('its files could not be written');
      throw err;
    }
  }

  // A section's result into its run's files (output.log's figures, results.json); returns it as recorded there.
  async function recordSection(result: SectionResult | undefined): Promise<SectionResult | undefined> {
    if (result === undefined || folder === undefined) return result;
    return folder.endSection(result);
  }

  // Ends the run in progress: its open section (if any) fails with `stopReason`, then the summary,
  // results.json and report.html go into the run's folder and OUTPUT_DIR's links switch to it.
  // A failed write throws naming the path and the reason; the previous run's files stay linked.
  async function endRun(stopReason: string | null): Promise<RunFinish | undefined> {
    await closeDataSection();
    if (stopReason !== null) await recordSection(await session.endOpenSection(stopReason));
    const report = await session.finish(stopReason);
    if (report !== undefined)
      lastRunCounts = {
        recorded: report.sections.reduce((sum, section) => sum + section.okCount + section.corruptCount, 0),
        imageCount: report.run.imageCount * report.run.repeat * report.run.transports.length,
      };
    const runFolder = folder;
    folder = undefined;
    if (report === undefined || runFolder === undefined) return undefined;
    const outputDir = runFolder.baseDir;
    const finish: RunFinish = {
      summary: renderSummary(report),
      succeeded: runSucceeded(report),
      runFolder: path.relative(outputDir, runFolder.dir),
    };
    try {
      await runFolder.finish(report, reportLibraries());
    } catch (err) {
      // The run's figures still reach the transmitter; OUTPUT_DIR's links stay on the previous run.
      await runFolder.abandon();
      const filesNotWritten = errorMessage(err);
      log.error(
        { outputDir, runFolder: runFolder.name, err: filesNotWritten, stopReason },
        'output files not written; the previous run stays the latest',
      );
      return { ...finish, succeeded: false, filesNotWritten };
    }
    if (stopReason === null)
      log.info(
        { outputDir, runFolder: runFolder.name, strayFrames: session.strayFrames, rejectedInputs },
        'run finished; output files written',
      );
    else
      log.warn(
        { outputDir, runFolder: runFolder.name, stopReason, strayFrames: session.strayFrames, rejectedInputs },
        'run ended incomplete; output files written',
      );
    return finish;
  }

  // A run a receiver died in (killed, out of memory) is completed when one starts again here: its
  // finished sections as they were, the open one from its per-image file, marked incomplete. Only
  // a run nothing has written to for longer than the watchdog's limit (and a minute): never one
  // another receiver sharing OUTPUT_DIR is still writing.
  async function completeAbandonedRuns(): Promise<void> {
    const base = path.resolve(config.outputDir);
    for (const dir of await runFolders(base)) {
      const quietMs = Date.now() - (await lastWriteMs(dir));
      if (quietMs < idleLimitMs + ABANDONED_RUN_GRACE_MS) continue;
      try {
        const report = await completeRun(
          base,
          dir,
          'the receiver stopped before the run ended (completed when a receiver started again)',
          reportLibraries(),
        );
        if (report !== undefined)
          log.warn(
            { runFolder: path.basename(dir), sections: report.sections.length },
            'completed a run its receiver never ended: its open section is marked incomplete',
          );
      } catch (err) {
        log.error(
          { runFolder: path.basename(dir), err: errorMessage(err) },
          'could not complete a run its receiver never ended',
        );
      }
    }
  }

  function checkTransmitterAlive(): void {
    if (!session.inProgress || Date.now() - session.lastActivityMs <= idleLimitMs) return;
    const reason =
      `transmitter went away: no frame or control request for ` +
      Math.round((Date.now() - session.lastActivityMs) / 1000) +
      ` s`;
    endRun(reason).catch((err: unknown) => log.error({ err: errorMessage(err) }, 'could not write the output files'));
  }

  function buildControl(): FastifyInstance {
    // No type coercion and no silent dropping of unknown fields: a body that does not match the
    // protocol is refused, not reinterpreted.
    const app = Fastify({
      logger: false,
      bodyLimit: CONTROL_BODY_LIMIT_BYTES,
      ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
    });
    // The port is open to anyone on the network (GET /health, /): a flood of connections that
    // never finish a request must not shut out the transmitter or a health check.
    let closedControlConnections = 0;
    guardConnections(app.server, controlLimits, (peer, why) => {
      // An idle keep-alive connection closed is housekeeping (the transmitter's, between requests);
      // a head that never came whole, or a push-out, is what a flood looks like.
      if (why === 'idle after its requests') {
        log.debug({ from: hostPort(peer.address, peer.port), why }, 'idle control connection closed');
        return;
      }
      closedControlConnections++;
      log.warn(
        { from: hostPort(peer.address, peer.port), why, closedControlConnections },
        'control connection closed before a whole request',
      );
    });
    app.server.on('drop', (dropped?: { remoteAddress?: string; remotePort?: number }) =>
      log.warn(
        {
          from: hostPort(dropped?.remoteAddress ?? '?', dropped?.remotePort ?? 0),
          maxConnections: controlLimits.maxConnections,
        },
        'control connection refused: the port has its connections',
      ),
    );
    // fastify's own logger is off (it would log every request); a request that fails on the
    // receiver's side (a write to a full disk) is logged here with its reason, which the reply carries too.
    app.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
      const statusCode = err.statusCode ?? 500;
      if (statusCode >= 500)
        log.error({ method: request.method, url: request.url, err: errorMessage(err) }, 'control request failed');
      void reply
        .code(statusCode)
        .send({ statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message: errorMessage(err) });
    });
    // Only the transmitter holding AUTH_TOKEN may change anything or keep a run alive; GET /,
    // /health, /progress and /results.json only read and stay open. Checked on request, so a refused
    // request's body is never parsed, validated or acted on.
    const onRequest = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const presented = bearerToken(request.headers.authorization);
      if (presented === undefined || !secretsEqual(presented, authToken!)) {
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
    app.get(
      '/health',
      async (): Promise<HealthResponse> => ({
        status: 'ready',
        listeners: listeners.status(),
        host: receiverHost(),
        counters: {
          rejectedInputs,
          rejectedFrames,
          refusedConnections: doorkeeper.refusedConnections,
          refusedRequests,
        },
      }),
    );
    // Read-only and secret-free like /health, for a soak's sampler (npm run bench -- soak): finished sections' arrivals
    // plus the open one's.
    app.get('/progress', async (): Promise<ProgressResponse> => {
      const progress = session.progress();
      // Between runs the last run's counts stay: its end can fall between two readings of a sampler.
      if (progress === undefined) return { inProgress: false, transport: null, ...lastRunCounts };
      const done = progress.sections.reduce((sum, section) => sum + section.okCount + section.corruptCount, 0);
      lastRunCounts = {
        recorded: done + (progress.open?.recorded ?? 0),
        imageCount: progress.info.imageCount * progress.info.repeat * progress.info.transports.length,
      };
      return { inProgress: true, transport: progress.open?.transport ?? null, ...lastRunCounts };
    });
    // Read as late as the request allows before answering: the transmitter brackets this with its
    // own clock and reads it at the response headers.
    app.get('/clock', { onRequest }, (_request, reply) => {
      void reply.header(CLOCK_HEADER, String(process.hrtime.bigint())).send();
    });
    app.post('/runs', { onRequest, schema: { body: runInfoSchema } }, async (request, reply) => {
      // One run at a time: a second transmitter is refused, and the run in progress goes on and
      // keeps its files; one whose transmitter went silent is ended by the watchdog.
      if (session.inProgress) {
        const refusal = runInProgress(runHolder, idleLimitMs);
        log.warn({ from: unmappedAddress(request.ip), reason: refusal }, 'second run refused');
        return reply.code(409).send({ error: refusal });
      }
      const announcement = request.body as RunAnnouncement;
      await startRun(announcement);
      runHolder = { startedAt: new Date().toISOString(), peer: unmappedAddress(request.ip) };
      log.info(
        {
          imageCount: announcement.imageCount,
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
      await closeDataSection();
      const status = listeners.status()[plan.transport];
      const refusal = !status?.ready
        ? `receiver's ${plan.transport} listener is not available: ${status?.error ?? 'not in its TRANSPORTS'}`
        : plan.imageSizeBytes > config.maxImageBytes
          ? `images of ${plan.imageSizeBytes} bytes are over the receiver's MAX_IMAGE_SIZE ` +
            `(${config.maxImageBytes} bytes)`
          : await openDataSection(plan, unmappedAddress(request.ip));
      // A refused section stays in the report as failed, with the reason: never silently missing.
      // A section still open (its end never came) is recorded as failed, with the count it got.
      await recordSection(await session.endOpenSection('a new section opened before this one ended'));
      if (refusal !== undefined) await recordSection(session.openSection(plan, refusal));
      else session.openSection(plan, undefined, await folder?.openSection(plan));
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
        await folder?.measuring(request.body as WarmupOutcome);
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
        if (!(await session.roundTrips((request.params as { sectionId: string }).sectionId, body)))
          return reply.code(409).send({ error: 'that section is not open' });
        return reply.code(204).send();
      },
    );
    // The transmitter's side of a section, with its per-second round trips: its own, larger limit. (every round trip):
    // its own, larger limit.
    app.post(
      '/sections/:sectionId/end',
      { onRequest, schema: { body: sectionEndSchema }, bodyLimit: SECTION_END_BODY_LIMIT_BYTES },
      async (request, reply) => {
        if (!session.isOpen((request.params as { sectionId: string }).sectionId))
          return reply.code(409).send({ error: 'that section is not open' });
        await closeDataSection();
        const result = (await recordSection(await session.endSection(request.body as SectionEnd)))!;
        log.info(
          {
            transport: result.transport,
            repeat: result.repeat,
            ok: result.ok,
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
      await folder?.replaceSection(result);
      return result;
    });
    app.post('/runs/finish', { onRequest }, async (_request, reply) => {
      const finished = await endRun(null);
      if (finished === undefined) return reply.code(409).send({ error: 'no run started' });
      return finished;
    });
    // For people: the live page during a run, the last run's report otherwise.
    app.get('/', async (_request, reply) => {
      const progress = session.progress();
      const report =
        progress === undefined
          ? await readFile(path.join(session.outputDir(config.outputDir), OUTPUT_FILES.report), 'utf8').catch(
              () => undefined,
            )
          : undefined;
      return reply.type('text/html; charset=utf-8').send(report ?? renderLivePage(progress));
    });
    // The last run's files, for a receiver on another node (a cluster): no copy out needed.
    const serveFile = (route: string, file: string, type: string): void => {
      app.get(route, async (_request, reply) => {
        const text = await readFile(path.join(session.outputDir(config.outputDir), file), 'utf8').catch(
          () => undefined,
        );
        if (text === undefined) return reply.code(404).send({ error: 'no run has finished yet' });
        return reply.type(type).send(text);
      });
    };
    serveFile('/results.json', OUTPUT_FILES.results, 'application/json; charset=utf-8');
    serveFile('/output.log', OUTPUT_FILES.log, 'text/plain; charset=utf-8');
    return app;
  }

  return {
    async start() {
      const resolved = receiverAuthToken(config);
      authToken = resolved.token;
      if (resolved.file?.created === true)
        log.info(
          { authTokenFile: resolved.file.file },
          'AUTH_TOKEN is unset: created a random one in AUTH_TOKEN_FILE (mode 0600), where a transmitter ' +
            'started alongside reads it',
        );
      else if (resolved.file !== undefined)
        log.info(
          { authTokenFile: resolved.file.file, trustedBecause: resolved.file.trustedBecause },
          'AUTH_TOKEN is unset: using the secret in AUTH_TOKEN_FILE',
        );
      await listeners.startAll();
      control = buildControl();
      await control.listen({ port: config.controlPort, host: await singleListenHost(config.bindHost) });
      const address = control.server.address();
      const controlPort = typeof address === 'object' && address !== null ? address.port : config.controlPort;
      watchdog = setInterval(checkTransmitterAlive, 1000).unref();
      await completeAbandonedRuns();
      log.info({ controlPort }, 'receiver ready');
      return { controlPort, listeners: listeners.status() };
    },
    close(reason = 'receiver shut down during the run') {
      closing ??= (async () => {
        clearInterval(watchdog);
        await endRun(reason).catch((err: unknown) =>
          log.error({ err: errorMessage(err) }, 'could not write the output files'),
        );
        await control?.close();
        await listeners.closeAll();
      })();
      return closing;
    },
  };
}
