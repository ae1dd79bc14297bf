import { transports } from '../transports/index.js';
import { freePort } from './redis-server.js';

/** CONTROL_PORT and every transport's port variable, each set to a free loopback port. */
export async function freePortsEnv(): Promise<Record<string, string>> {
  const names = ['CONTROL_PORT', ...transports.flatMap((t) => (t.port ? [t.port.envVar] : []))];
  return Object.fromEntries(await Promise.all(names.map(async (name) => [name, String(await freePort())])));
}
