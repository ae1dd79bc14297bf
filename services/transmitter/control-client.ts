import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import type { RunInfo } from '../core/report.js';
import type { SectionPlan, SectionResult } from '../core/section.js';
import type { HealthResponse } from '../receiver/protocol.js';
import type { RunOutcome } from './app.js';

/** The transmitter's side of the control protocol: every request bounded in time. */
export class ControlClient {
  private readonly baseUrl: string;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly requestTimeoutMs: number,
  ) {
    this.baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  }

  /**
   * Polls GET /health with growing pauses until the receiver answers, for at most `timeoutMs`;
   * then fails with ITB_ERR_RECEIVER_UNREACHABLE naming the address it tried.
   */
  async waitUntilReady(timeoutMs: number): Promise<HealthResponse> {
    const deadline = Date.now() + timeoutMs;
    let pauseMs = 50;
    let lastError = 'no answer';
    for (;;) {
      try {
        const remainingMs = Math.max(1, Math.min(2000, deadline - Date.now()));
        const response = await fetch(`${this.baseUrl}/health`, { signal: AbortSignal.timeout(remainingMs) });
        if (response.ok) return (await response.json()) as HealthResponse;
        lastError = `HTTP ${response.status}`;
      } catch (err) {
        lastError = describeFetchError(err);
      }
      if (Date.now() + pauseMs > deadline) {
        throw new ItbError(ErrorCode.receiverUnreachable, `receiver at ${this.host}:${this.port} (CONTROL_PORT) was not ready within ${timeoutMs} ms (CONNECT_TIMEOUT_MS): ${lastError}`);
      }
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
      pauseMs = Math.min(pauseMs * 2, 1000);
    }
  }

  /** Announces a run's facts; the receiver resets its state for it. */
  async startRun(info: Omit<RunInfo, 'receiverHost'>): Promise<void> {
    await this.post('/runs', info);
  }

  /** Announces a section; rejects with the receiver's reason when it cannot take it. */
  async openSection(plan: SectionPlan): Promise<void> {
    await this.post('/sections', plan);
  }

  /** Ends a section with the transmitter's failure reason (or null) and returns the receiver's record. */
  async endSection(sectionId: number, failure: string | null): Promise<SectionResult> {
    return (await this.post(`/sections/${sectionId}/end`, { failure })) as SectionResult;
  }

  /** Ends the run: the receiver writes output.log and results.json and returns the report. */
  async finishRun(): Promise<RunOutcome> {
    return (await this.post('/runs/finish', undefined)) as RunOutcome;
  }

  private async post(route: string, body: unknown): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${route}`, {
        method: 'POST',
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
    } catch (err) {
      throw new ItbError(ErrorCode.receiverUnreachable, `receiver at ${this.host}:${this.port} did not answer POST ${route}: ${describeFetchError(err)}`, { cause: err });
    }
    const text = await response.text();
    if (!response.ok) {
      let reason = text;
      try {
        reason = (JSON.parse(text) as { error?: string; message?: string }).error ?? (JSON.parse(text) as { message?: string }).message ?? text;
      } catch {
        // not JSON: keep the text
      }
      throw new ItbError(ErrorCode.transport, `receiver refused POST ${route} (HTTP ${response.status}): ${reason}`);
    }
    return text.length > 0 ? JSON.parse(text) : undefined;
  }
}

// fetch wraps the real reason (ECONNREFUSED, timeout) in `cause`.
function describeFetchError(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  if (err instanceof Error && err.name === 'TimeoutError') return 'request timed out';
  return cause instanceof Error ? `${errorMessage(err)} (${cause.message})` : errorMessage(err);
}
