// A broker URL may carry a user and a password (redis://:secret@host:6379). Every text that leaves
// the process shows such a URL through redactUrl() only: results.json, report.html, output.log,
// the logs, the control server's answers and every failure reason. The connection itself takes
// the credentials apart (urlCredentials()), so a library never sees, nor echoes, a URL with them.

/** What a URL's user and password are replaced with in every output. */
export const REDACTED = '***';

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * `url` with its user and password replaced by {@link REDACTED} (`redis://***@host:6379`);
 * unchanged when it has neither. Never throws. Everything up to the last `@` after the scheme is
 * taken as the credentials, so a password with an unencoded `/`, `?`, `#` or `@` is hidden whole:
 * a broker URL has no `@` elsewhere, and hiding too much of an odd URL is cheaper than a leak.
 */
export function redactUrl(url: string): string {
  const head = SCHEME.exec(url)?.[0] ?? '';
  const at = url.lastIndexOf('@');
  if (at < head.length) return url;
  return `${head}${REDACTED}${url.slice(at)}`;
}

/** A URL taken apart for connecting: the URL without credentials, and the user and password it had (decoded). */
export interface UrlCredentials {
  /** The URL without user and password; `url` itself when it had none or does not parse. */
  url: string;
  user: string | undefined;
  password: string | undefined;
}

/**
 * The user and password of `url`, as a WHATWG URL parser (ioredis's too) reads them, and the URL
 * without them. A URL that does not parse is returned whole, with no credentials: the config
 * refuses such a URL before anything connects.
 */
export function urlCredentials(url: string): UrlCredentials {
  if (!URL.canParse(url)) return { url, user: undefined, password: undefined };
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return { url, user: undefined, password: undefined };
  const user = parsed.username === '' ? undefined : decoded(parsed.username);
  const password = parsed.password === '' ? undefined : decoded(parsed.password);
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.href, user, password };
}

// A stray `%` (not followed by two hex digits) stays as it is, as the parser left it.
function decoded(component: string): string {
  try {
    return decodeURIComponent(component);
  } catch {
    return component;
  }
}
