import { receiverLostVerdict } from '../core/control/receiver-lost.js';
import { errorMessage, ErrorCode, ItbError, errorCodeOf } from '../core/errors.js';
import { configFromEnvOrExit, effectiveLogLevel, ExitCode, onShutdownSignal } from '../shared/entry.js';
import { transports } from '../transports/index.js';
import { createLogger } from '../shared/logger.js';
import { printRelayedLines } from '../shared/terminal-relay.js';
import { buildTransmitter } from './app.js';
import { transmitterEnvChecks } from './env-checks.js';
import { loadImage } from '../shared/images.js';
import { createProgressDisplay } from './progress.js';

// Transmitter entry: validates the environment, loads the image, runs every transport's section
// against the receiver and prints the summary. Exit 0: every image of every transport arrived
// intact; 1: anything else; 2: bad configuration (a secret that is not the receiver's included).
const config = configFromEnvOrExit(transports, transmitterEnvChecks);
// On stderr, so stdout carries only the final summary. On a terminal, log lines and the lines npm
// start relays (the receiver's) go through the display, which prints them above its bars.
const progress = createProgressDisplay({ stream: process.stderr, tty: Boolean(process.stderr.isTTY) });
const log = createLogger('transmitter', effectiveLogLevel(config), { print: progress.print });
printRelayedLines(progress.print);
onShutdownSignal(async (signal) => {
  progress.stop();
  log.warn({ signal }, 'interrupted; the run is incomplete');
  return ExitCode.failed;
});
try {
  const image = await loadImage({ imageSizeBytes: config.imageSizeBytes, imagePath: config.imagePath });
  log.info({ image: image.description }, 'image loaded');
  const outcome = await buildTransmitter(config, image, log, progress).run();
  progress.stop();
  // Where to read them, also when the receiver is on another node (a cluster). npm start (ITB_NPM_START) stops its
  // receiver once this process has ended, then says itself where the files are: nothing serves them by then.
  const fullResults =
    process.env.ITB_NPM_START === '1'
      ? ''
      : `\nFull results: output.log, results.json and report.html in the receiver's OUTPUT_DIR, also served on its ` +
        `control port (GET /output.log, /results.json, and / for the report; CONTROL_PORT ${config.controlPort}).`;
  if (outcome.filesNotWritten !== undefined)
    log.error({ err: outcome.filesNotWritten }, 'the receiver could not write the output files');
  const verdict = outcome.receiverLost
    ? receiverLostVerdict(outcome.report, outcome.receiverLost)
    : outcome.filesNotWritten !== undefined
      ? `FAILED: the receiver could not save this run's files (${outcome.filesNotWritten}); the summary above is ` +
        `all that is kept of this run, and its OUTPUT_DIR keeps the previous run's files, if any.`
      : outcome.succeeded
        ? `Every transport delivered every image intact.${fullResults}`
        : `FAILED: at least one transport lost, corrupted or failed to deliver images.${fullResults}`;
  process.stdout.write(`\n${outcome.summary}\n\n${verdict}\n`);
  // Exit explicitly: a library handle left open by a failed transport must not keep us running.
  process.exit(outcome.succeeded ? ExitCode.ok : ExitCode.failed);
} catch (err) {
  progress.stop();
  log.error({ err: errorMessage(err), code: errorCodeOf(err) }, 'run failed');
  process.stderr.write(`transmitter: ${errorMessage(err)}\n`);
  const misconfigured = err instanceof ItbError && (err.code === ErrorCode.config || err.code === ErrorCode.refused);
  process.exit(misconfigured ? ExitCode.config : ExitCode.failed);
}
