import { errorMessage, ErrorCode, ItbError } from '../../core/errors.js';
import { sleep } from '../../shared/waits.js';

// The one way a transmitter side connects: try, and on a refusal or a failed handshake try again
// until the budget is spent, then fail with ITB_ERR_TIMEOUT naming the last problem. Every
// transport's connectTimeoutMs therefore means the same thing, including for a receiver that is
// still starting. An attempt the receiver refused for who we are (ITB_ERR_REFUSED) is not
// retried: the same credential would be refused again.

/** Pause between failed attempts. */
const RETRY_PAUSE_MS = 100;
/** An attempt given less time than this is not expected to finish: its failure does not replace an earlier reason. */
const SHORT_ATTEMPT_MS = 50;

/** One connect attempt: given the time left, resolves with the connection or rejects with why not. */
export type ConnectAttempt<T> = (remainingMs: number) => Promise<T>;

/**
 * Runs `attempt` until one succeeds or `timeoutMs` is over. An attempt is raced against the time
 * left, and one that succeeds too late is handed to `discard`, so nothing outlives the failure.
 */
export async function connectWithin<T>(
  what: string,
  timeoutMs: number,
  attempt: ConnectAttempt<T>,
  discard: (late: T) => void,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastProblem = 'no attempt finished';
  for (;;) {
    const remainingMs = deadline - Date.now();
    if (remainingMs <= 0) break;
    const trying = attempt(remainingMs);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), remainingMs);
    });
    try {
      const outcome = await Promise.race([trying, expired]);
      if (outcome !== 'expired') return outcome;
      // The real reason of an earlier attempt (ECONNREFUSED) says more than a last, short attempt's silence.
      if (lastProblem === 'no attempt finished') lastProblem = `attempt still unanswered after ${remainingMs} ms`;
      trying.then(discard, () => {});
      break;
    } catch (err) {
      if (err instanceof ItbError && err.code === ErrorCode.refused) {
        throw new ItbError(ErrorCode.refused, `${what} refused the link: ${err.message}`, { cause: err });
      }
      // A last attempt squeezed into the final milliseconds fails for want of time, which says
      // less than the failure before it.
      if (remainingMs >= SHORT_ATTEMPT_MS || lastProblem === 'no attempt finished') lastProblem = errorMessage(err);
    } finally {
      clearTimeout(timer);
    }
    const pauseMs = Math.min(RETRY_PAUSE_MS, deadline - Date.now());
    if (pauseMs > 0) await sleep(pauseMs);
  }
  throw new ItbError(ErrorCode.timeout, `no connection to ${what} within ${timeoutMs} ms: ${lastProblem}`);
}
