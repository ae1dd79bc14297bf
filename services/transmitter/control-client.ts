import { randomUUID } from 'node:crypto';
import http from 'node:http';
import pRetry from 'p-retry';
import type { ClockSample } from '../core/model/clock.js';
import {
  CLOCK_HEADER,
  CONTROL_CONNECTION_LIMITS,
  type HealthResponse,
  IDEMPOTENCY_HEADER,
  type RunAnnouncement,
  type RunFinish,
  type SectionEnd,
} from '../core/control/control-protocol.js';
import { CPU_PROFILE_CONTENT_TYPE } from '../core/control/cpu-profile.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { PROCESS_HEADER, processHeaderValue } from '../core/live/process-load.js';
import type { FanOut, SectionPlan, SectionResult } from '../core/model/section.js';
import type { WarmupOutcome } from '../core/model/warmup.js';
import { bracketHost } from '../shared/net.js';

// Pauses between tries of a control request: 50 ms doubling to 1 s, each stretched by up to 2× at random.
const CONTROL_RETRY_PAUSES = Object.freeze({ firstMs: 50, factor: 2, longestMs: 1000 });

/** One try's answer, with this clock just before the try went out and when its response's head came. */
interface Exchange {
  statusCode: number;
  body: string;
  headers: http.IncomingHttpHeaders;
  sentNs: bigint;
  receivedNs: bigint;
}

// A try that failed: `retry` when another may get through (the connection failed, or the port was full), with the
// answer when there was one (a 503), used as it is once the tries are spent.
class TryFailure extends Error {
  constructor(
    message: string,
    readonly retry: boolean,
    readonly answer?: Exchange,
    // A kept-alive socket the receiver closed as this try went out: tried again at once, on a new socket.
    readonly staleSocket = false,
  ) {
    super(message);
  }
}

/**
 * The transmitter's side of the control protocol: every request bounded in time, and tried again on any connection
 * failure (reset, refused, cut before its answer) or a 503 within `retryWithinMs`, with growing pauses. A POST carries
 * IDEMPOTENCY_HEADER, so one the receiver took whose answer was lost is not acted on twice.
 */
export class ControlClient {
  private readonly baseUrl: string;
  /**
   * Every request's kept-alive sockets: once one has carried AUTH_TOKEN the receiver keeps room for it that no
   * anonymous load takes (its connection guard), so the run's requests stay on them. Each is let go after half the
   * receiver's keep-alive timeout idle, so one idle through a section is not reused just as the receiver closes it.
   */
  private readonly agent = new http.Agent({
    keepAlive: true,
    maxSockets: 4,
    timeout: CONTROL_CONNECTION_LIMITS.keepAliveTimeoutMs / 2,
  });
  /** `Authorization` header for every request but GET /health; set by authorize(). */
  private authorization: Record<string, string> = {};
  /** This client's part of every idempotency key: keys of two transmitters never meet. */
  private readonly keyPrefix = randomUUID();
  private requestsSent = 0;
  /**
   * A request failed after trying for the whole bound: the receiver is taken for gone, and later requests (a failed
   * section's end, the last round trips) get one try each until one is answered, so the run stops without waiting the
   * bound again for each.
   */
  private givenUp = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly requestTimeoutMs: number,
    /** How long a request is tried again after a connection failure (CONNECT_TIMEOUT_MS in a run). */
    private readonly retryWithinMs = requestTimeoutMs,
  ) {
    this.baseUrl = `http://${bracketHost(host)}:${port}`;
  }

  /**
   * Polls GET /health with growing pauses until the receiver is ready (no `transports`), or answers with every listener
   * of `transports` ready or down for good (a setting missing, or not one of its transports), for at most `timeoutMs`.
   * A receiver still starting (503, "starting": its listeners' first attempts, the end of a run a receiver died in) is
   * waited on like a listener that retries; one that answers so, or with some listeners still retrying, by then (a
   * broker that never came up) is returned as it is: their sections fail with the reason. One that never answers
   * fails with ITB_ERR_RECEIVER_UNREACHABLE naming the address.
   */
  async waitUntilReady(timeoutMs: number, transports: readonly string[] = []): Promise<HealthResponse> {
    const deadline = Date.now() + timeoutMs;
    let pauseMs = 50;
    let lastError = 'no answer';
    let answered: HealthResponse | undefined;
    for (;;) {
      try {
        const remainingMs = Math.max(1, Math.min(2000, deadline - Date.now()));
        const response = await fetch(`${this.baseUrl}/health`, { signal: AbortSignal.timeout(remainingMs) });
        // A starting receiver answers 503 with its health, which says what it waits for.
        const body: unknown = response.ok || response.status === 503 ? await response.json().catch(() => null) : null;
        const health =
          typeof body === 'object' && body !== null && typeof (body as HealthResponse).listeners === 'object'
            ? (body as HealthResponse)
            : undefined;
        if (health !== undefined) {
          answered = health;
          // In a cluster the receiver may answer before its broker is up: its listener retries (and one on its
          // first attempt is reported retrying too). Without transports named, the whole receiver is waited for.
          const listeners = health.listeners;
          const settled =
            transports.length > 0
              ? transports.every((name) => listeners[name]?.retrying !== true)
              : health.status !== 'starting';
          if (settled) return health;
        } else {
          lastError = `HTTP ${response.status}`;
        }
      } catch (err) {
        lastError = describeFetchError(err);
      }
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) {
        if (answered !== undefined) return answered;
        throw new ItbError(
          ErrorCode.receiverUnreachable,
          `receiver at ${this.host}:${this.port} (CONTROL_PORT) was not ready within ${timeoutMs} ms ` +
            `(CONNECT_TIMEOUT_MS): ${lastError}`,
        );
      }
      // The last pause ends at the deadline, for one more try there.
      await new Promise((resolve) => setTimeout(resolve, Math.min(pauseMs, remainingMs)));
      pauseMs = Math.min(pauseMs * 2, 1000);
    }
  }

  /** Sends AUTH_TOKEN with every request from now on: the receiver refuses the others with 401. */
  authorize(token: string): void {
    this.authorization = { authorization: `Bearer ${token}` };
  }

  /** Announces a run's facts; the receiver resets its state for it and adds its own host. */
  async startRun(info: RunAnnouncement): Promise<void> {
    await this.post('/runs', info);
  }

  /**
   * One clock ping-pong: this clock before and after, the receiver's in between. Plain node:http
   * on a kept-alive socket, read at the response headers (where the receiver puts its clock):
   * fetch's heavier response path made round trips of 1-3 ms and skewed the estimate by 0.3 ms.
   * A sample tried again is stamped again: the pause between tries is never part of it.
   */
  async clockSample(): Promise<ClockSample> {
    const answer = await this.request('GET', '/clock');
    const receiverNs = answer.headers[CLOCK_HEADER];
    if (answer.statusCode !== 200 || typeof receiverNs !== 'string' || !/^\d+$/.test(receiverNs))
      throw new ItbError(
        ErrorCode.transport,
        `receiver at ${this.host}:${this.port} answered GET /clock without a clock (HTTP ${answer.statusCode})`,
      );
    return {
      transmitterSentNs: answer.sentNs,
      receiverNs: BigInt(receiverNs),
      transmitterReceivedNs: answer.receivedNs,
    };
  }

  /** Releases the kept-alive sockets. */
  close(): void {
    this.agent.destroy();
  }

  /**
   * Tells the receiver the warm-up is over and how it went: the recorded images, and its resource readings, start now.
   */
  async startMeasuring(sectionId: number, warmedUp: WarmupOutcome): Promise<void> {
    await this.post(`/sections/${sectionId}/measure`, warmedUp);
  }

  /** Announces a section; rejects with the receiver's reason when it cannot take it. */
  async openSection(plan: SectionPlan): Promise<void> {
    await this.post('/sections', plan);
  }

  /**
   * Ends a section with the transmitter's side of it (failure or null, cost, round trips); returns the receiver's
   * record.
   */
  async endSection(sectionId: number, end: SectionEnd): Promise<SectionResult> {
    return (await this.post(`/sections/${sectionId}/end`, end)) as SectionResult;
  }

  /**
   * A batch of recorded round trips (binary records, see ROUND_TRIP_RECORD_VALUES) for the receiver's record of the
   * open section.
   */
  async roundTrips(sectionId: number, records: Buffer): Promise<void> {
    // With this process's CPU and memory now: the receiver's live page shows the transmitter's load from them.
    const { user, system } = process.cpuUsage();
    const snapshot = { cpuMicros: user + system, rssBytes: process.memoryUsage.rss(), atMs: performance.now() };
    await this.post(`/sections/${sectionId}/round-trips`, records, { [PROCESS_HEADER]: processHeaderValue(snapshot) });
  }

  /**
   * PROFILE=1: this side's CPU profile of the open section, gzipped (at most CPU_PROFILE_BODY_LIMIT_BYTES), for the
   * run's folder; sent before the section's end, which names it in output.log.
   */
  async cpuProfile(sectionId: number, gzippedProfile: Buffer): Promise<void> {
    await this.post(`/sections/${sectionId}/cpu-profile`, gzippedProfile, {}, CPU_PROFILE_CONTENT_TYPE);
  }

  /**
   * RECEIVERS > 1, to the first receiver: every receiver's figures; answers with its record of the section, now holding
   * them.
   */
  async fanOut(sectionId: number, fanOut: FanOut): Promise<SectionResult> {
    return (await this.post(`/sections/${sectionId}/fan-out`, fanOut)) as SectionResult;
  }

  /** Ends the run: the receiver writes its files and answers with the summary. */
  async finishRun(): Promise<RunFinish> {
    return (await this.post('/runs/finish', undefined)) as RunFinish;
  }

  // A Buffer goes as it is, as `bufferType`; anything else as JSON.
  private async post(
    route: string,
    body: unknown,
    extraHeaders: Record<string, string> = {},
    bufferType = 'application/octet-stream',
  ): Promise<unknown> {
    const payload =
      body === undefined
        ? undefined
        : Buffer.isBuffer(body)
          ? { bytes: body, type: bufferType }
          : { bytes: Buffer.from(JSON.stringify(body)), type: 'application/json' };
    const answer = await this.request('POST', route, extraHeaders, payload);
    if (answer.statusCode < 200 || answer.statusCode > 299) {
      // 401/403: this transmitter's AUTH_TOKEN is not the receiver's; no request of this run can succeed.
      const code = answer.statusCode === 401 || answer.statusCode === 403 ? ErrorCode.refused : ErrorCode.transport;
      throw new ItbError(
        code,
        `receiver refused POST ${route} (HTTP ${answer.statusCode}): ${refusalReason(answer.body)}`,
      );
    }
    return answer.body.length > 0 ? JSON.parse(answer.body) : undefined;
  }

  /**
   * `method route`, tried until it gets an answer other than 503, a try fails otherwise than by its connection (its
   * own timeout: the receiver is there but slow), or `retryWithinMs` is over: then ITB_ERR_RECEIVER_UNREACHABLE with
   * the last reason (a last 503 is returned as the answer). Every try of a POST carries the same idempotency key.
   */
  private async request(
    method: 'GET' | 'POST',
    route: string,
    extraHeaders: Record<string, string> = {},
    payload?: { bytes: Buffer; type: string },
  ): Promise<Exchange> {
    const headers: Record<string, string> = { ...this.authorization, ...extraHeaders };
    if (method === 'POST') headers[IDEMPOTENCY_HEADER] = `${this.keyPrefix}.${++this.requestsSent}`;
    if (payload !== undefined) {
      headers['content-type'] = payload.type;
      headers['content-length'] = String(payload.bytes.length);
    }
    let tries = 0;
    const startedMs = performance.now();
    try {
      return await pRetry(
        async () => {
          tries++;
          const answer = await this.exchange(method, route, headers, payload?.bytes);
          if (answer.statusCode === 503) throw new TryFailure('HTTP 503 (the port is full)', true, answer);
          this.givenUp = false;
          return answer;
        },
        {
          retries: this.givenUp ? 0 : Infinity,
          maxRetryTime: this.retryWithinMs,
          minTimeout: CONTROL_RETRY_PAUSES.firstMs,
          factor: CONTROL_RETRY_PAUSES.factor,
          maxTimeout: CONTROL_RETRY_PAUSES.longestMs,
          // Apart in time: tries of many requests, or of many transmitters, do not all land in one burst.
          randomize: true,
          shouldConsumeRetry: ({ error }) => !(error instanceof TryFailure && error.staleSocket),
          shouldRetry: ({ error }) => error instanceof TryFailure && error.retry,
        },
      );
    } catch (err) {
      if (err instanceof TryFailure && err.answer !== undefined) return err.answer;
      if (err instanceof TryFailure && err.retry) this.givenUp = true;
      const spent = tries > 1 ? ` (${tries} tries in ${Math.round(performance.now() - startedMs)} ms)` : '';
      throw new ItbError(
        ErrorCode.receiverUnreachable,
        `receiver at ${this.host}:${this.port} did not answer ${method} ${route}: ${errorMessage(err)}${spent}`,
        { cause: err },
      );
    }
  }

  /** One try of `method route` on the kept-alive agent, bounded by the request timeout. */
  private exchange(
    method: 'GET' | 'POST',
    route: string,
    headers: Record<string, string>,
    body: Buffer | undefined,
  ): Promise<Exchange> {
    return new Promise((resolve, reject) => {
      const signal = AbortSignal.timeout(this.requestTimeoutMs);
      // A failure of the connection may be tried again; the request's own timeout may not.
      const fail = (err: NodeJS.ErrnoException, staleSocket = false): void =>
        signal.aborted
          ? reject(new TryFailure('request timed out', false))
          : reject(new TryFailure(err.message, true, undefined, staleSocket));
      const sentNs = process.hrtime.bigint();
      const request = http.request(
        { host: this.host, port: this.port, path: route, method, headers, agent: this.agent, signal },
        (response) => {
          const receivedNs = process.hrtime.bigint();
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', fail);
          response.on('close', () => {
            if (!response.complete) fail(new Error('the connection closed before the whole answer'));
          });
          response.on('end', () =>
            resolve({
              statusCode: response.statusCode ?? 0,
              body: Buffer.concat(chunks).toString('utf8'),
              headers: response.headers,
              sentNs,
              receivedNs,
            }),
          );
        },
      );
      // A kept-alive socket the receiver closed as this try went out hangs up before any answer: not the receiver
      // gone (node's docs: request.reusedSocket).
      request.on('error', (err: NodeJS.ErrnoException) => fail(err, request.reusedSocket && err.code === 'ECONNRESET'));
      request.end(body);
    });
  }
}

/**
 * The most specific text a refusal's body carries: `message` (fastify's own errors put the reason
 * there, and the generic "Internal Server Error" in `error`), else `error` (the receiver's
 * refusals), else the body itself.
 */
export function refusalReason(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  const { message, error } = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as {
    message?: unknown;
    error?: unknown;
  };
  if (typeof message === 'string' && message.length > 0) return message;
  if (typeof error === 'string' && error.length > 0) return error;
  return body;
}

// fetch wraps the real reason (ECONNREFUSED, timeout) in `cause`.
function describeFetchError(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  if (err instanceof Error && err.name === 'TimeoutError') return 'request timed out';
  return cause instanceof Error ? `${errorMessage(err)} (${cause.message})` : errorMessage(err);
}
