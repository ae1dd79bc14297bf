import { errorMessage, ErrorCode, ItbError, errorCodeOf } from '../core/errors.js';
import { authTokenFileIssues } from '../shared/auth-token.js';
import {
  configFromEnvOrExit,
  effectiveLogLevel,
  ExitCode,
  makeOutputDirOrExit,
  onShutdownSignal,
  outputDirIssues,
} from '../shared/entry.js';
import { transports } from '../transports/index.js';
import { createLogger } from '../shared/logger.js';
import { buildReceiver } from './app.js';

// Receiver entry: validates the environment, starts every listener and the control endpoint, and
// serves runs until SIGTERM/SIGINT.
const config = configFromEnvOrExit(transports, (env) => [...outputDirIssues(env), ...authTokenFileIssues(env)]);
await makeOutputDirOrExit(config);
const log = createLogger('receiver', effectiveLogLevel(config));
const receiver = buildReceiver(config, log);
onShutdownSignal(async (signal) => {
  log.info({ signal }, 'shutting down');
  await receiver.close(`receiver stopped by ${signal} during the run`);
  return ExitCode.ok;
});
try {
  await receiver.start();
} catch (err) {
  log.fatal({ err: errorMessage(err), code: errorCodeOf(err) }, 'receiver failed to start');
  process.stderr.write(`receiver failed to start: ${errorMessage(err)}\n`);
  await receiver.close();
  // A secret file refused at start (one planted after the start-up check) is configuration.
  process.exit(err instanceof ItbError && err.code === ErrorCode.config ? ExitCode.config : ExitCode.failed);
}
