import { readFileSync } from 'node:fs';
import { formatConfigIssues, parseConfig } from '../services/core/config/config.js';
import { isShaped } from '../services/core/config/link.js';
import { ExitCode, readSecretFile } from '../services/shared/entry.js';
import { transports } from '../services/transports/index.js';
import { applyShaping, shapedText, shapingCommands, ShapingRefused } from './lib/shaped-link.js';

// The image's entrypoint runs this, as root, when NETWORK_* are set (docker-compose.shaped.yml):
// tc shapes this container's egress on its network interface (ITB_SHAPE_DEVICE, eth0), each
// service its own, so images and acks each cross one shaped egress. Prints the link in words
// (the service's ITB_LINK); exits 2 with the reason when it cannot shape (no NET_ADMIN, no netem).

const device = process.env.ITB_SHAPE_DEVICE?.trim() || 'eth0';
const parsed = parseConfig(process.env, transports, { shapesLink: true, readSecretFile });
if (!parsed.ok) {
  process.stderr.write(`${formatConfigIssues(parsed.issues)}\n`);
  process.exit(ExitCode.config);
}
const shaping = parsed.config.network;
if (!isShaped(shaping)) process.exit(ExitCode.ok);
try {
  await applyShaping(shapingCommands(device, shaping), shaping);
} catch (err) {
  const reason = err instanceof ShapingRefused ? err.message : String(err);
  process.stderr.write(
    `shaped link: ${reason} (the override file gives the services NET_ADMIN: docker compose -f ` +
      `docker-compose.yml -f docker-compose.shaped.yml up)\n`,
  );
  process.exit(ExitCode.config);
}
let mtu = '?';
try {
  mtu = readFileSync(`/sys/class/net/${device}/mtu`, 'utf8').trim();
} catch {
  // no such interface in sysfs: the MTU stays unknown
}
process.stdout.write(
  `the compose network, each service's ${device} (MTU ${mtu}) shaped on egress by tc in its ` +
    `container: ${shapedText(shaping)}\n`,
);
