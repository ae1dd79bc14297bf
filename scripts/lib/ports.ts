import { freePort } from '../../services/shared/net.js';
import { transports } from '../../services/transports/index.js';

/** CONTROL_PORT and every transport's port variable (from the transport table), each set to a free loopback port. */
export async function freePortsEnv(): Promise<Record<string, string>> {
  const names = ['CONTROL_PORT', ...transports.flatMap(({ setting }) => (setting.kind === 'port' ? [setting.envVar] : []))];
  return Object.fromEntries(await Promise.all(names.map(async (name) => [name, String(await freePort())])));
}
