import { configFromEnvOrExit } from '../shared/entry.js';
import { fetchWithin } from '../shared/waits.js';
import { transports } from '../transports/index.js';

// The container healthcheck (docker-compose.yml): exit 0 when the receiver's GET /health answers
// on this host within 2 s, 1 otherwise. The slim image has no curl, and node is there anyway.
const config = configFromEnvOrExit(transports);
try {
  const ok = await fetchWithin(`http://127.0.0.1:${config.controlPort}/health`, 2000, async (response) => response.ok);
  process.exit(ok ? 0 : 1);
} catch {
  process.exit(1);
}
