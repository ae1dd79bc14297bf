import { type IncomingMessage, STATUS_CODES } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../core/config/config.js';
import { errorMessage } from '../core/errors.js';
import { bearerToken, secretsEqual } from '../core/wire/auth.js';
import {
  CONTROL_BODY_LIMIT_BYTES,
  CONTROL_CONNECTION_LIMITS,
  type ConnectionLimits,
  type ListenerStatus,
} from '../core/control/control-protocol.js';
import { receiverAuthToken } from '../shared/auth-token.js';
import { guardConnections } from '../shared/connection-guard.js';
import { throttledWarn, type ThrottledWarn } from '../shared/throttled-log.js';
import { hostFacts } from '../shared/host.js';
import { hostPort, singleListenHost } from '../shared/net.js';
import { transportByName } from '../transports/index.js';
import { controlRoutes } from './control-routes.js';
import { latestRunRoutes } from './latest-run-routes.js';
import { Doorkeeper } from './door.js';
import { answerOncePerKey } from './idempotent-requests.js';
import { EVENT_CLIENT_LIMITS, EventClients, type EventClientLimits, eventsRoute } from './events-route.js';
import { LiveFeed } from './live-feed.js';
import { Listeners } from './listeners.js';
import { metricsRoute } from './metrics-route.js';
import { buildRunKeeper } from './run-keeper.js';
import { runsRoutes } from './runs-routes.js';
import { RunSession } from './session.js';

/** A receiver: one listener per configured transport plus the HTTP control endpoint. */
export interface ReceiverApp {
  /**
   * Opens the control endpoint, then starts every listener at once and ends the runs a receiver died in; resolves when
   * all that is done (the receiver ready). A listener that fails is reported, not fatal.
   */
  start(): Promise<{ controlPort: number; listeners: Record<string, ListenerStatus> }>;
  /**
   * Writes the output files of a run still in progress (marked incomplete with `reason`), then
   * closes the control endpoint and every listener; safe to call twice.
   */
  close(reason?: string): Promise<void>;
}

export { OUTPUT_FILES } from '../core/report/run-files.js';

/**
 * Builds a receiver from a validated config; nothing listens until start(). `controlLimits` bound the control port's
 * connections (tests shorten its timeouts).
 */
export function buildReceiver(
  config: Readonly<Config>,
  log: Logger,
  controlLimits: Readonly<ConnectionLimits> = CONTROL_CONNECTION_LIMITS,
  eventClientLimits: Readonly<EventClientLimits> = EVENT_CLIENT_LIMITS,
): ReceiverApp {
  // The libraries this receiver's listeners use: only theirs are loaded.
  const receiverHost = (): ReturnType<typeof hostFacts> => hostFacts(config.transports.map(transportByName));
  // A flood on a port would write a warning per connection: one line per cause a second, with its count.
  const warn = throttledWarn(log);
  const doorkeeper = new Doorkeeper((transport, reason, refusedConnections) =>
    warn(`refused on ${transport}`, { transport, reason, refusedConnections }, 'connection refused'),
  );
  // The listeners deliver into the session; the session reads brokers through the listeners once a section measures.
  const listeners = new Listeners(config, log, doorkeeper);
  const session = new RunSession(log, receiverHost, config.verify, (transport) => listeners.readBroker(transport));
  const runs = buildRunKeeper(config, log, session, listeners, doorkeeper);
  // GET /events: the session's transitions and its open section's seconds, to the open streams.
  const feed = new LiveFeed(log, (transport) => listeners.readBroker(transport));
  session.observe(feed);
  const eventClients = new EventClients(feed, log, eventClientLimits);
  let control: FastifyInstance | undefined;
  let watchdog: NodeJS.Timeout | undefined;
  let closing: Promise<void> | undefined;

  // The control endpoint, its routes answering for `authToken`.
  function buildControl(authToken: string): FastifyInstance {
    // No type coercion and no silent dropping of unknown fields: a body that does not match the
    // protocol is refused, not reinterpreted.
    const app = Fastify({
      logger: false,
      bodyLimit: CONTROL_BODY_LIMIT_BYTES,
      ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
    });
    guardControlConnections(app, controlLimits, authToken, log, warn);
    answerOncePerKey(app);
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
    void app.register(controlRoutes, { config, log, session, listeners, doorkeeper, runs, authToken, receiverHost });
    void app.register(latestRunRoutes, { config, log, session, runs });
    void app.register(runsRoutes, { config, session, runs, log });
    // Open like GET / and /health: no AUTH_TOKEN, and the events hold no secret.
    void app.register(eventsRoute, { feed, clients: eventClients });
    void app.register(metricsRoute, { session, transports: config.transports });
    return app;
  }

  return {
    async start() {
      // AUTH_TOKEN, or the token file (created here when missing).
      const resolved = receiverAuthToken(config);
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
      // The control port first: it answers GET /health ("starting", and what for) at once, while the listeners start
      // (a broker that is down takes its connect bound) and a run a receiver died in is ended.
      control = buildControl(resolved.token);
      await control.listen({ port: config.controlPort, host: await singleListenHost(config.bindHost) });
      const address = control.server.address();
      const controlPort = typeof address === 'object' && address !== null ? address.port : config.controlPort;
      const ready = Promise.all([listeners.startAll(session), runs.completeAbandonedRuns(true)]);
      log.info({ controlPort, waitingFor: listeners.waitingFor() }, 'control port open; starting');
      watchdog = setInterval(() => {
        runs.checkTransmitterAlive();
        runs.lookForAbandonedRuns();
      }, 1000).unref();
      await ready;
      log.info({ controlPort }, 'receiver ready');
      return { controlPort, listeners: listeners.status() };
    },
    close(reason = 'receiver shut down during the run') {
      closing ??= (async () => {
        clearInterval(watchdog);
        await runs
          .endRun(reason)
          .catch((err: unknown) => log.error({ err: errorMessage(err) }, 'could not write the output files'));
        // The streams end first: the control server's close waits for every open response.
        feed.close();
        eventClients.closeAll();
        await control?.close();
        await listeners.closeAll();
        warn.close();
      })();
      return closing;
    },
  };
}

/**
 * Guards the control port's connections within `limits`: the port is open to anyone on the network (GET /health, /),
 * and a flood of connections must not shut out the transmitter or a health check. Connections that showed `authToken`
 * are the transmitter's: the guard keeps room for them that no anonymous load takes.
 */
function guardControlConnections(
  app: FastifyInstance,
  limits: Readonly<ConnectionLimits>,
  authToken: string,
  log: Logger,
  warn: ThrottledWarn,
): void {
  let closedControlConnections = 0;
  const trusts = (request: IncomingMessage): boolean => {
    const presented = bearerToken(request.headers.authorization);
    return presented !== undefined && secretsEqual(presented, authToken);
  };
  const guard = guardConnections(
    app.server,
    limits,
    (peer, why) => {
      // An idle keep-alive connection closed is housekeeping (the transmitter's, between requests);
      // a head that never came whole, a push-out or a connection closed at the cap is what a flood looks like.
      if (why === 'idle after its requests') {
        log.debug({ from: hostPort(peer.address, peer.port), why }, 'idle control connection closed');
        return;
      }
      closedControlConnections++;
      warn(
        why,
        { from: hostPort(peer.address, peer.port), why, closedControlConnections },
        why === 'refused on arrival: no room'
          ? 'control connection refused: the port has its connections'
          : why === 'closed to make room for a newer connection'
            ? 'control connection closed to make room'
            : 'control connection closed before a whole request',
      );
    },
    { trusts },
  );
  // node's own cap, one over the guard's: reached only if the guard's accounting is wrong.
  app.server.on('drop', (dropped?: { remoteAddress?: string; remotePort?: number }) =>
    warn(
      'dropped',
      {
        from: hostPort(dropped?.remoteAddress ?? '?', dropped?.remotePort ?? 0),
        maxConnections: app.server.maxConnections,
        trusted: guard.trusted(),
      },
      'control connection refused: the port has its connections',
    ),
  );
}
