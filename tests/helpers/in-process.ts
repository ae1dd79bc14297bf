import path from 'node:path';
import type { Logger } from 'pino';
import { parseConfig, type Config } from '../../services/core/config/config.js';
import { buildReceiver, type ReceiverApp } from '../../services/receiver/app.js';
import type { ConnectionLimits, RunOutcome } from '../../services/core/control/control-protocol.js';
import { buildTransmitter, type RunObserver } from '../../services/transmitter/app.js';
import { loadImage } from '../../services/shared/images.js';
import { transports } from '../../services/transports/index.js';
import { TEST_AUTH_TOKEN, testLog } from './harness.js';

/** A config from env values (short timeouts and the test AUTH_TOKEN by default), with every port 0: the OS picks. */
export function configFor(outputDir: string, env: Record<string, string>): Config {
  const result = parseConfig(
    {
      OUTPUT_DIR: outputDir,
      IMAGE_TIMEOUT_MS: '5000',
      CONNECT_TIMEOUT_MS: '5000',
      AUTH_TOKEN: TEST_AUTH_TOKEN,
      // The same-host transports' socket files, beside this test's output: parallel tests never meet.
      SOCKET_DIR: path.join(outputDir, 'sockets'),
      ...env,
    },
    transports,
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return {
    ...result.config,
    controlPort: 0,
    ports: Object.fromEntries(Object.keys(result.config.ports).map((name) => [name, 0])),
  };
}

/**
 * A receiver started in this process (logging to `log`, its control port under `controlLimits` when given), and the
 * config a transmitter needs to reach it.
 */
export async function startReceiver(
  outputDir: string,
  env: Record<string, string>,
  log: Logger = testLog,
  controlLimits?: Readonly<ConnectionLimits>,
): Promise<{ receiver: ReceiverApp; transmitterConfig: Config }> {
  const receiverConfig = configFor(outputDir, env);
  const receiver = buildReceiver(receiverConfig, log, controlLimits);
  const started = await receiver.start();
  // The ports the listeners bound, for the transports whose setting is a port.
  const ports = Object.fromEntries(
    Object.entries(started.listeners).flatMap(([name, s]) => (name in receiverConfig.ports ? [[name, s.port]] : [])),
  );
  return { receiver, transmitterConfig: { ...receiverConfig, controlPort: started.controlPort, ports } };
}

/** Runs the transmitter in this process against `config`'s receiver. */
export async function runTransmitter(config: Config, observer?: RunObserver): Promise<RunOutcome> {
  const image = await loadImage({ imageSizeBytes: config.imageSizeBytes, imagePath: undefined });
  return buildTransmitter(config, image, testLog, observer).run();
}

/** Both apps in this process, over real loopback sockets: one whole run, everything closed after. */
export async function runBoth(
  outputDir: string,
  env: Record<string, string>,
  observer?: RunObserver,
): Promise<RunOutcome> {
  const { receiver, transmitterConfig } = await startReceiver(outputDir, env);
  try {
    return await runTransmitter(transmitterConfig, observer);
  } finally {
    await receiver.close();
  }
}
