import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { HealthResponse, ListenerStatus } from '../../services/core/control/control-protocol.js';
import { ControlClient } from '../../services/transmitter/control-client.js';
import { fixtureHost } from '../helpers/fixtures.js';

// The transmitter's wait for a receiver that answers GET /health while it starts (503, "starting"): waited on within
// its bound like a listener that retries, and returned as it is at the bound.

const starting: ListenerStatus = { ready: false, port: 0, error: 'still starting', retrying: true };
const ready: ListenerStatus = { ready: true, port: 1234, error: null, retrying: false };

/** GET /health's body: starting while `waitingFor` names listeners. */
function healthOf(waitingFor: string[]): HealthResponse {
  return {
    status: waitingFor.length > 0 ? 'starting' : 'ready',
    waitingFor: { listeners: waitingFor, abandonedRuns: false },
    listeners: { tcp: ready, redis: waitingFor.includes('redis') ? starting : ready },
    host: fixtureHost('rx'),
    counters: { rejectedInputs: 0, rejectedFrames: 0, refusedConnections: 0, refusedRequests: 0 },
  };
}

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** A stand-in receiver whose GET /health says what `answer` gives now; its control client. */
async function receiverAnswering(answer: () => HealthResponse): Promise<ControlClient> {
  server = http.createServer((_request, response) => {
    const health = answer();
    response.writeHead(health.status === 'ready' ? 200 : 503, { 'content-type': 'application/json' });
    response.end(JSON.stringify(health));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return new ControlClient('127.0.0.1', (server.address() as AddressInfo).port, 1000);
}

describe('waitUntilReady against a receiver still starting', () => {
  it('waits while it is starting and returns it once ready', async () => {
    const readyAt = Date.now() + 600;
    const control = await receiverAnswering(() => healthOf(Date.now() < readyAt ? ['redis'] : []));
    const health = await control.waitUntilReady(10_000);
    expect(health.status).toBe('ready');
    expect(Date.now()).toBeGreaterThanOrEqual(readyAt);
  });

  it('returns a receiver still starting at the bound as it is, instead of failing', async () => {
    const control = await receiverAnswering(() => healthOf(['redis']));
    const startedAt = Date.now();
    const health = await control.waitUntilReady(800);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(800);
    expect(health.status).toBe('starting');
    expect(health.waitingFor.listeners).toEqual(['redis']);
  });

  it("for a section, waits only for that section's listener", async () => {
    const control = await receiverAnswering(() => healthOf(['redis']));
    const startedAt = Date.now();
    const health = await control.waitUntilReady(10_000, ['tcp']);
    expect(Date.now() - startedAt).toBeLessThan(5000);
    expect(health.listeners.tcp?.ready).toBe(true);
  });
});
