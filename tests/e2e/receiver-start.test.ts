import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { HealthResponse } from '../../services/core/control/control-protocol.js';
import { freePort } from '../../services/shared/net.js';
import { projectPath } from '../../services/shared/paths.js';
import { exitWithin, freePortsEnv, startService, stopService, type ServiceProcess } from '../helpers/processes.js';

// The control port opens before the listeners: with every broker down (each listener's first attempt takes its
// connect bound, 5 s), GET /health answers at once that the receiver is starting and what it waits for, and a
// transmitter started alongside it with the default CONNECT_TIMEOUT_MS waits for it and runs.

const BROKER_TRANSPORTS = ['redis', 'redis-pubsub', 'redis-list', 'redis-kv', 'nats', 'nats-jetstream', 'mqtt', 'amqp'];

const services: ServiceProcess[] = [];
let outputDir: string | undefined;
afterEach(async () => {
  for (const service of services.splice(0)) await stopService(service);
  if (outputDir) await rm(outputDir, { recursive: true, force: true });
});

/** GET /health's status and body, or undefined while nothing answers. */
async function health(port: string): Promise<{ status: number; body: HealthResponse } | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) });
    return { status: response.status, body: (await response.json()) as HealthResponse };
  } catch {
    return undefined;
  }
}

/** GET /health's first answer that `wanted` accepts; fails the test at `deadlineMs` (epoch ms). */
async function pollHealth(
  port: string,
  deadlineMs: number,
  wanted: (health: HealthResponse) => boolean,
  receiver: ServiceProcess,
): Promise<{ status: number; body: HealthResponse }> {
  for (;;) {
    const answer = await health(port);
    if (answer !== undefined && wanted(answer.body)) return answer;
    expect(Date.now(), `no such answer in time; receiver:\n${receiver.stderr()}`).toBeLessThan(deadlineMs);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The container healthcheck's exit code against the receiver of `env`. */
function healthcheck(env: Record<string, string>): Promise<number | null> {
  const child = spawn(process.execPath, [projectPath('dist', 'services', 'receiver', 'healthcheck.js')], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'ignore',
  });
  return new Promise((resolve) => child.on('exit', resolve));
}

describe('a receiver whose brokers are all down', () => {
  it('answers GET /health within seconds, "starting" and waiting for the broker listeners; a transmitter with the ' +
    'default CONNECT_TIMEOUT_MS runs TCP and records Redis as failed with its reason', async () => {
    outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-start-'));
    // Nothing listens on these ports: every broker connect is refused until its bound.
    const closed = async (scheme: string): Promise<string> => `${scheme}://127.0.0.1:${await freePort()}`;
    const env: Record<string, string> = {
      ...(await freePortsEnv()),
      OUTPUT_DIR: outputDir,
      LOG_LEVEL: 'info',
      IMAGE_COUNT: '20',
      REDIS_URL: await closed('redis'),
      NATS_URL: await closed('nats'),
      MQTT_URL: await closed('mqtt'),
      AMQP_URL: await closed('amqp'),
    };
    const startedAt = Date.now();
    const receiver = startService('receiver', {
      ...env,
      TRANSPORTS: ['tcp', 'websocket', ...BROKER_TRANSPORTS].join(','),
    });
    services.push(receiver);
    const transmitter = startService('transmitter', { ...env, TRANSPORTS: 'tcp,redis' });
    services.push(transmitter);

    // Before, the port opened after every listener's first attempt, one after the other: 8 × 5 s.
    const first = await pollHealth(env.CONTROL_PORT!, startedAt + 5000, () => true, receiver);
    expect(first.status).toBe(503);
    expect(first.body.status).toBe('starting');
    expect(first.body.waitingFor.listeners).toEqual(expect.arrayContaining(BROKER_TRANSPORTS));
    expect(first.body.listeners.redis).toMatchObject({ ready: false, retrying: true });
    // Not healthy while it starts: compose's healthcheck means "ready".
    expect(await healthcheck(env)).toBe(1);

    // The listeners start together: ready once the slowest first attempt is over, not their sum.
    const ready = await pollHealth(env.CONTROL_PORT!, startedAt + 25_000, (h) => h.status === 'ready', receiver);
    expect(ready.status).toBe(200);
    expect(ready.body.waitingFor).toEqual({ listeners: [], abandonedRuns: false });
    for (const name of BROKER_TRANSPORTS)
      expect(ready.body.listeners[name], name).toMatchObject({ ready: false, retrying: true });
    expect(ready.body.listeners.tcp).toMatchObject({ ready: true });
    expect(await healthcheck(env)).toBe(0);

    // CONNECT_TIMEOUT_MS (30 s) for the redis section's listener, then on.
    expect(await exitWithin(transmitter, 90_000)).toBe(1);
    expect(transmitter.stdout()).toMatch(/^TCP \(baseline\)\s+20\s+0\s+0\s.*\sok$/m);
    expect(transmitter.stdout()).toMatch(
      /^Redis\s+0\s+20\s+0\s.*FAILED: receiver's redis listener is not available: .*ECONNREFUSED/m,
    );
  }, 150_000);
});
