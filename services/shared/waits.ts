import { ErrorCode, ItbError } from '../core/errors.js';

// Bounded waits: every wait in the project has an end, and none leaves a timer or listener behind.

/** Resolves true when `work` settles (either way) within `timeoutMs`, false when time ran out first. */
export async function settlesWithin(work: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      expired,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Rejects with ITB_ERR_TIMEOUT naming `what` when `work` takes longer than `timeoutMs`. */
export async function withTimeout<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ItbError(ErrorCode.timeout, `${what} took longer than ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves when a stream's write buffer has drained, or it closed: never waits on a dead socket. */
export function drainOrClose(stream: NodeJS.EventEmitter): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * One HTTP request read by `read` within `timeoutMs`, on a timer that holds the event loop. AbortSignal.timeout's
 * timer does not: a request that undici leaves with no live handle then ends a script under a top-level await,
 * silently, with exit code 13, instead of timing out (compose-check did, in CI). Rejects with ITB_ERR_TIMEOUT and
 * aborts the request when time runs out.
 */
export async function fetchWithin<T>(
  url: string,
  timeoutMs: number,
  read: (response: Response) => Promise<T>,
  init: RequestInit = {},
): Promise<T> {
  const controller = new AbortController();
  const work = fetch(url, { ...init, signal: controller.signal }).then(read);
  try {
    return await withTimeout(work, timeoutMs, `${init.method ?? 'GET'} ${url}`);
  } catch (err) {
    controller.abort();
    work.catch(() => {}); // its abort error, after ours
    throw err;
  }
}
