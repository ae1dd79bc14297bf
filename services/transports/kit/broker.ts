import { redactUrl, urlCredentials } from '../../core/config/redact.js';
import { ErrorCode, ItbError } from '../../core/errors.js';
import type { TransmitterOptions } from '../contract.js';

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

/** What a broker transport needs set, for the error when it is not: its variable, the broker, an example value. */
export interface BrokerSetting {
  envVar: string;
  /** The broker, as the sentence "the … transport needs <broker> to go through" reads. */
  broker: string;
  example: string;
}

/** The broker of `endpoint` (its URL, and its password given apart), or a clear error naming `setting`'s variable. */
export function requiredBroker(
  endpoint: Pick<TransmitterOptions, 'url' | 'password'>,
  transport: string,
  setting: BrokerSetting,
): BrokerAddress {
  if (endpoint.url === undefined || endpoint.url === '') {
    throw new ItbError(
      ErrorCode.config,
      `${setting.envVar} is not set: the ${transport} transport needs ${setting.broker} to go through ` +
        `(e.g. ${setting.envVar}=${setting.example})`,
    );
  }
  return brokerAddress(endpoint.url, endpoint.password);
}
