import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../services/shared/net.js';
import { transports } from '../../services/transports/index.js';

/**
 * CONTROL_PORT and every transport's port variable (from the transport table), each set to a free loopback port (with
 * its next ports free too, where it binds them); and SOCKET_DIR, a fresh directory.
 */
export async function freePortsEnv(): Promise<Record<string, string>> {
  const wanted: [string, number][] = [
    ['CONTROL_PORT', 1],
    ...transports.flatMap(({ deployment: { setting } }): [string, number][] =>
      setting.kind === 'port' ? [[setting.envVar, 1 + (setting.nextPorts ?? 0)]] : [],
    ),
  ];
  const env: Record<string, string> = {};
  for (const [name, consecutive] of wanted) env[name] = String(await freePort(consecutive));
  // The same-host transports' socket files: a directory of their own (0700), as free as the ports.
  for (const envVar of new Set(
    transports.flatMap(({ deployment: { setting } }) => (setting.kind === 'socket' ? [setting.envVar] : [])),
  ))
    env[envVar] = await mkdtemp(path.join(os.tmpdir(), 'itb-sockets-'));
  return env;
}
