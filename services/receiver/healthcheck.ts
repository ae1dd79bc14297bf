import type { HealthResponse } from '../core/control/control-protocol.js';
import { configFromEnvOrExit } from '../shared/entry.js';
import { fetchWithin } from '../shared/waits.js';
import { transports } from '../transports/index.js';

// The container healthcheck (docker-compose.yml): exit 0 when the receiver's GET /health answers
// on this host within 2 s that it is ready, 1 otherwise: the port answers while the receiver is
// still starting (503, "starting"), which is not healthy yet. The slim image has no curl, and node
// is there anyway.
const config = configFromEnvOrExit(transports);
try {
  const ok = await fetchWithin(
    `http://127.0.0.1:${config.controlPort}/health`,
    2000,
    async (response) => response.ok && ((await response.json()) as Partial<HealthResponse>).status === 'ready',
  );
  process.exit(ok ? 0 : 1);
} catch {
  process.exit(1);
}
