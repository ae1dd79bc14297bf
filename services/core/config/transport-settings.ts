import { errorMessage, ErrorCode, ItbError } from '../errors.js';
import { DEFAULT_CONTROL_PORT } from './bounds.js';
import { urlCredentials } from './redact.js';
import { socketPathIn } from './socket-dir.js';
import { passwordVariables } from './schema.js';
import { parsedOk, type ParsedEnv } from './parsed-env.js';

// Where each transport's peer is, as parseConfig() reads it: ports (no two variables on one), socket files, broker
// URLs and their passwords.

/** Each transport's setting by transport name, per kind; a transport whose variable is bad is absent. */
export interface TransportSettings {
  ports: Record<string, number>;
  socketPaths: Record<string, string>;
  urls: Record<string, string | undefined>;
  brokerPasswords: Record<string, string | undefined>;
}

/**
 * The password of the broker `urlVar` names, from <NAME>_PASSWORD or the file <NAME>_PASSWORD_FILE
 * names (its trailing newlines dropped, as the official images' `_FILE` variables do); pushes an
 * issue when both are set, the file cannot be read or is empty, the password has no URL to go
 * with, or the URL carries a password too (which one wins would be the library's choice).
 */
export function brokerPassword(
  parsed: ParsedEnv,
  urlVar: string,
  readSecretFile: ((filePath: string) => string) | undefined,
): string | undefined {
  const { values, issues, shown } = parsed;
  const names = passwordVariables(urlVar);
  const given = values[names.password] as string | undefined;
  const file = values[names.file] as string | undefined;
  let found = given;
  if (file !== undefined && given !== undefined) {
    issues.push({
      variable: names.file,
      value: shown(names.file),
      allowed: `unset when ${names.password} is set: the password comes from one of the two`,
    });
  } else if (file !== undefined) {
    try {
      if (readSecretFile === undefined) throw new ItbError(ErrorCode.config, 'this program reads no password file');
      found = readSecretFile(file).replace(/[\r\n]+$/, '');
      if (found === '') throw new ItbError(ErrorCode.config, 'the file is empty');
    } catch (err) {
      found = undefined;
      issues.push({
        variable: names.file,
        value: shown(names.file),
        allowed: `a readable file holding the password of the server ${urlVar} names (${errorMessage(err)})`,
      });
    }
  }
  if (found === undefined || !(urlVar in values)) return found;
  const source = given !== undefined ? names.password : names.file;
  const url = values[urlVar] as string | undefined;
  if (url === undefined) {
    issues.push({
      variable: source,
      value: shown(source),
      allowed:
        `unset while ${urlVar} is unset: it is the password of the server ${urlVar} names (a private server npm ` +
        `start runs has none)`,
    });
  } else if (urlCredentials(url).password !== undefined) {
    issues.push({
      variable: urlVar,
      value: shown(urlVar),
      allowed: `a URL without a password when ${source} is set: the password comes from one place`,
    });
  }
  return found;
}

/**
 * Each transport's setting that parsed, by kind; pushes an issue for a port another variable (CONTROL_PORT, another
 * transport's port, or the ports after it that a transport binds too) already uses.
 */
export function transportSettings(
  parsed: ParsedEnv,
  passwordsByUrlVar: ReadonlyMap<string, string | undefined>,
): TransportSettings {
  const { values, issues, specs } = parsed;
  const settings: TransportSettings = { ports: {}, socketPaths: {}, urls: {}, brokerPasswords: {} };
  // A bad port variable's default stands in for it, taken first, so a port set to it is named.
  const portOwners = new Map<number, string>([
    [
      (values.CONTROL_PORT as number | undefined) ?? DEFAULT_CONTROL_PORT,
      parsedOk(parsed, 'CONTROL_PORT') ? 'CONTROL_PORT' : "CONTROL_PORT's default",
    ],
  ]);
  for (const {
    deployment: { setting },
  } of specs) {
    if (setting.kind !== 'port' || parsedOk(parsed, setting.envVar)) continue;
    for (let offset = 0; offset <= (setting.nextPorts ?? 0); offset++)
      portOwners.set(setting.defaultPort + offset, `${setting.envVar}'s default${offset === 0 ? '' : ` + ${offset}`}`);
  }
  for (const {
    name,
    deployment: { setting },
  } of specs) {
    if (!parsedOk(parsed, setting.envVar)) continue;
    if (setting.kind === 'url') {
      settings.urls[name] = values[setting.envVar] as string | undefined;
      settings.brokerPasswords[name] = passwordsByUrlVar.get(setting.envVar);
      continue;
    }
    if (setting.kind === 'socket') {
      settings.socketPaths[name] = socketPathIn(values[setting.envVar] as string, setting.fileName);
      continue;
    }
    const port = values[setting.envVar] as number;
    settings.ports[name] = port;
    // The ports after it that the transport binds too (zeromq-pubsub's acks) are taken as well.
    const taken = Array.from({ length: 1 + (setting.nextPorts ?? 0) }, (_, offset) => port + offset);
    const clash = taken.find((p) => portOwners.has(p));
    if (clash !== undefined) {
      const owner = portOwners.get(clash)!;
      const which =
        clash === port
          ? `${owner} is ${port} too`
          : `it binds ${setting.envVar} + ${clash - port} as well, ${clash}, and ${owner} is ${clash}`;
      issues.push({
        variable: setting.envVar,
        value: String(port),
        allowed: `a port no other variable uses (${which})`,
      });
    } else {
      for (const p of taken) portOwners.set(p, p === port ? setting.envVar : `${setting.envVar} + ${p - port}`);
    }
  }
  return settings;
}
