import { redactUrl, urlCredentials } from '../../core/config/redact.js';

// A broker's URL taken apart once per connection: the library gets the URL without credentials
// and the user and password as options (so it can neither misread nor echo them), and every
// message, log line and failure reason names the broker by `shown`.

/** Where a broker transport connects and how it names the broker. */
export interface BrokerAddress {
  /** The URL without user and password: what the library is given. */
  url: string;
  /** The URL as every message and log shows it: user and password as *** (redactUrl). */
  shown: string;
  user: string | undefined;
  password: string | undefined;
}

/**
 * The broker at `url`; `password` (given apart, e.g. REDIS_PASSWORD) when the URL has none (the config never lets both
 * be set).
 */
export function brokerAddress(url: string, password: string | undefined): BrokerAddress {
  const parts = urlCredentials(url);
  return { url: parts.url, shown: redactUrl(url), user: parts.user, password: parts.password ?? password };
}
