import { freePort } from '../../services/shared/net.js';
import { transports } from '../../services/transports/index.js';

/**
 * CONTROL_PORT and every transport's port variable (from the transport table), each set to a free loopback port (with
 * its next ports free too, where it binds them).
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
  return env;
}
