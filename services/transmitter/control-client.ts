import http from 'node:http';
import type { ClockSample } from '../core/model/clock.js';
import {
  CLOCK_HEADER,
  CONTROL_CONNECTION_LIMITS,
  type HealthResponse,
  type RunAnnouncement,
  type RunFinish,
  type SectionEnd,
} from '../core/control/control-protocol.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { PROCESS_HEADER, processHeaderValue } from '../core/live/process-load.js';
import type { FanOut, SectionPlan, SectionResult } from '../core/model/section.js';
import type { WarmupOutcome } from '../core/model/warmup.js';
import { bracketHost } from '../shared/net.js';

/** The transmitter's side of the control protocol: every request bounded in time. */
export class ControlClient {
  private readonly baseUrl: string;
  /**
   * The clock's kept-alive socket, let go after half the receiver's keep-alive timeout: node 20's agent ignores the
   * server's `Keep-Alive: timeout` hint, so a socket idle through a section would otherwise be reused just as the
   * receiver closes it.
   */
  private readonly clockAgent = new http.Agent({
    keepAlive: true,
    maxSockets: 1,
    timeout: CONTROL_CONNECTION_LIMITS.keepAliveTimeoutMs / 2,
  });
  /** `Authorization` header for every request but GET /health; set by authorize(). */
  private authorization: Record<string, string> = {};

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly requestTimeoutMs: number,
  ) {
    this.baseUrl = `http://${bracketHost(host)}:${port}`;
  }

  /**
   * Polls GET /health with growing pauses until the receiver answers with every listener of
   * `transports` ready, or down for good (a setting missing, or not one of its transports), for
   * at most `timeoutMs`. A receiver that answers with some still retrying by then (a broker that
   * never came up) is returned as it is: their sections fail with the reason. One that never
   * answers fails with ITB_ERR_RECEIVER_UNREACHABLE naming the address.
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
        if (response.ok) {
          answered = (await response.json()) as HealthResponse;
          // In a cluster the receiver may answer before its broker is up: its listener retries.
          const listeners = answered.listeners;
          if (transports.every((name) => listeners[name]?.retrying !== true)) return answered;
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
   * A kept-alive socket the receiver closed as this request went out (it hangs up before any answer) is not the
   * receiver gone: the sample is taken again once, on a new socket, as node's docs advise (request.reusedSocket).
   */
  clockSample(retryOnStaleSocket = true): Promise<ClockSample> {
    return new Promise((resolve, reject) => {
      const transmitterSentNs = process.hrtime.bigint();
      const request = http.get(
        {
          host: this.host,
          port: this.port,
          path: '/clock',
          headers: this.authorization,
          agent: this.clockAgent,
          timeout: this.requestTimeoutMs,
        },
        (response) => {
          const transmitterReceivedNs = process.hrtime.bigint();
          response.resume();
          const receiverNs = response.headers[CLOCK_HEADER];
          if (response.statusCode !== 200 || typeof receiverNs !== 'string' || !/^\d+$/.test(receiverNs)) {
            reject(
              new ItbError(
                ErrorCode.transport,
                `receiver at ${this.host}:${this.port} answered GET /clock without a clock ` +
                  `(HTTP ${response.statusCode})`,
              ),
            );
            return;
          }
          resolve({ transmitterSentNs, receiverNs: BigInt(receiverNs), transmitterReceivedNs });
        },
      );
      request.on('timeout', () => request.destroy(new Error('request timed out')));
      request.on('error', (err: NodeJS.ErrnoException) => {
        if (retryOnStaleSocket && request.reusedSocket && err.code === 'ECONNRESET') {
          this.clockSample(false).then(resolve, reject);
          return;
        }
        reject(
          new ItbError(
            ErrorCode.receiverUnreachable,
            `receiver at ${this.host}:${this.port} did not answer GET /clock: ${err.message}`,
            { cause: err },
          ),
        );
      });
    });
  }

  /** Releases the kept-alive socket of the clock exchanges. */
  close(): void {
    this.clockAgent.destroy();
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

  private async post(route: string, body: unknown, extraHeaders: Record<string, string> = {}): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${route}`, {
        method: 'POST',
        headers:
          body === undefined
            ? { ...this.authorization, ...extraHeaders }
            : {
                ...this.authorization,
                ...extraHeaders,
                'content-type': Buffer.isBuffer(body) ? 'application/octet-stream' : 'application/json',
              },
        body:
          body === undefined
            ? undefined
            : Buffer.isBuffer(body)
              ? new Uint8Array(body.buffer as ArrayBuffer, body.byteOffset, body.byteLength)
              : JSON.stringify(body),
        signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
    } catch (err) {
      throw new ItbError(
        ErrorCode.receiverUnreachable,
        `receiver at ${this.host}:${this.port} did not answer POST ${route}: ${describeFetchError(err)}`,
        { cause: err },
      );
    }
    const text = await response.text();
    if (!response.ok) {
      // 401/403: this transmitter's AUTH_TOKEN is not the receiver's; no request of this run can succeed.
      const code = response.status === 401 || response.status === 403 ? ErrorCode.refused : ErrorCode.transport;
      throw new ItbError(code, `receiver refused POST ${route} (HTTP ${response.status}): ${refusalReason(text)}`);
    }
    return text.length > 0 ? JSON.parse(text) : undefined;
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
