/**
 * Wraps an async action so that every call after the first returns the first call's promise: close() safe to call
 * twice.
 */
export function once<T>(action: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  return () => (running ??= action());
}
