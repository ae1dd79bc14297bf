// A broker URL may carry a user and a password (redis://:secret@host:6379), or a password in its
// query (redis://host/0?password=secret: ioredis takes every query parameter as an option). Every
// text that leaves the process shows such a URL through redactUrl() only: results.json,
// report.html, output.log, the logs, the control server's answers and every failure reason. The
// connection itself takes the user-info credentials apart (urlCredentials()), so a library never
// sees, nor echoes, a URL with them.

/** What a URL's user and password are replaced with in every output. */
export const REDACTED = '***';

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * Query (and fragment) parameters whose value is a secret, by name, case-insensitive and once decoded: any name
 * holding `pass`, `pwd`, `token`, `secret`, `auth` or `key` (password, sasl_password, authToken, api_key). An
 * innocent one caught too (authSource) only shows as {@link REDACTED}.
 */
const SECRET_PARAMETER = /pass|pwd|token|secret|auth|key/i;

// A parameter: its separator, name and value, up to the next separator.
const PARAMETER = /([?&;#])([^=&;#]*)=([^&;#]*)/g;

/**
 * `url` with its user and password replaced by {@link REDACTED} (`redis://***@host:6379`), and the value of every
 * query parameter named like a secret (`?password=***`, see SECRET_PARAMETER); unchanged when it has none. Never
 * throws. Everything up to the last `@` after the scheme is taken as the credentials, so a password with an
 * unencoded `/`, `?`, `#` or `@` is hidden whole: a broker URL has no `@` elsewhere, and hiding too much of an odd URL
 * is cheaper than a leak.
 */
export function redactUrl(url: string): string {
  const head = SCHEME.exec(url)?.[0] ?? '';
  const at = url.lastIndexOf('@');
  const rest = at < head.length ? url.slice(head.length) : `${REDACTED}${url.slice(at)}`;
  return `${head}${redactParameters(rest)}`;
}

// The secrets among the parameters from the first `?` or `#` of `text` (a URL past its scheme) on.
function redactParameters(text: string): string {
  const query = text.search(/[?#]/);
  if (query < 0) return text;
  const redacted = text
    .slice(query)
    .replace(PARAMETER, (whole, separator: string, name: string, value: string) =>
      value !== '' && SECRET_PARAMETER.test(decoded(name)) ? `${separator}${name}=${REDACTED}` : whole,
    );
  return `${text.slice(0, query)}${redacted}`;
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
