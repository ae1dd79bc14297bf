import { redactUrl, urlCredentials } from '../../core/config/redact.js';
import { ErrorCode, ItbError } from '../../core/errors.js';
import type { Logger } from 'pino';
import { isThisHost, listeningPid, processName, readProcess } from '../../shared/process-reading.js';
import type { ReceiverListener, TransmitterOptions } from '../contract.js';

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

/**
 * The broker of an endpoint (its URL, and its password given apart), or a clear error naming `setting`'s variable and
 * the transport that needs it: what every transport of one broker calls.
 */
export type BrokerRequirement = (
  endpoint: Pick<TransmitterOptions, 'url' | 'password'>,
  transport: string,
) => BrokerAddress;

/** The BrokerRequirement of the broker `setting` names. */
export function brokerRequirement(setting: BrokerSetting): BrokerRequirement {
  return (endpoint, transport) => {
    if (endpoint.url === undefined || endpoint.url === '') {
      throw new ItbError(
        ErrorCode.config,
        `${setting.envVar} is not set: the ${transport} transport needs ${setting.broker} to go through ` +
          `(e.g. ${setting.envVar}=${setting.example})`,
      );
    }
    return brokerAddress(endpoint.url, endpoint.password);
  };
}

/**
 * A listener's `readBroker` for a broker with no CPU figure of its own over its protocol: the process of this host that
 * listens on the broker's port, read from /proc (shared/process-reading.ts). None (logged once, with why) when the
 * broker is on another host, or its process cannot be seen (another network namespace, another user's). Looked up
 * once, at listen (`defaultPort` when the URL names none): the /proc walk never runs inside a measured span.
 */
export async function brokerProcessReader(
  broker: BrokerAddress,
  defaultPort: number,
  log: Logger,
): Promise<Pick<ReceiverListener, 'readBroker'>> {
  const url = new URL(broker.url);
  const port = url.port === '' ? defaultPort : Number(url.port);
  const unread = (why: string): Pick<ReceiverListener, 'readBroker'> => {
    log.info({ url: broker.shown }, `broker CPU not reported: ${why}`);
    return {};
  };
  if (!isThisHost(url.hostname)) return unread(`${url.hostname} is not this host, so its process is not in /proc`);
  const pid = await listeningPid(port);
  if (pid === undefined) return unread(`no process listening on port ${port} can be seen in /proc`);
  log.info({ url: broker.shown, pid, command: await processName(pid) }, 'broker CPU and memory read from /proc');
  return { readBroker: () => readProcess(pid) };
}
