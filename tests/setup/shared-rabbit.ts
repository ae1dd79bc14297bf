import type { TestProject } from 'vitest/node';
import { startPrivateRabbit } from '../../services/transports/kit/amqp.js';

// One private RabbitMQ for a project's run, on a free port with nothing kept on disk, which every
// test file that only needs a broker to go through shares (tests/helpers/harness.ts LocalServers).
// Each boot costs about 8 s of CPU (Erlang, Mnesia): once per file it was a sixth of npm test's CPU
// on two cores. Files never meet in it: queues are named after the section's credential, which
// derives from TEST_AUTH_TOKEN, a secret of each test process's own. A test that stops, kills,
// limits or configures its broker starts one of its own.

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared RabbitMQ's amqp:// URL. */
    sharedAmqpUrl: string;
  }
}

/** vitest's global setup: starts the broker, hands its URL to the project's files, stops it at the end. */
export default async function sharedRabbit(project: TestProject): Promise<() => Promise<void>> {
  const rabbit = await startPrivateRabbit();
  project.provide('sharedAmqpUrl', rabbit.url);
  return () => rabbit.close();
}
