import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AUTH_TOKEN_PATTERN } from '../core/auth.js';
import { AUTH_TOKEN_ALLOWED, DEFAULT_AUTH_TOKEN_FILE, type Config, type ConfigIssue } from '../core/config.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';

// Where the shared secret comes from. AUTH_TOKEN wins (npm start sets a fresh one per run). Without
// it, the secret lives in AUTH_TOKEN_FILE, which the receiver creates with a random secret,
// readable by its owner only, when it is missing, the way Erlang's cookie file works: a receiver
// started on its own is never open to anyone, and a transmitter started next to it (or sharing
// the file through a volume, as under docker compose) finds the secret without being told.

/** A fresh random secret, as `npm start` and the receiver make them. */
export function newAuthToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The secret in `file`; throws an ITB_ERR_CONFIG error naming the file when it is missing or not a valid secret. */
export function readTokenFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ItbError(ErrorCode.config, `AUTH_TOKEN is unset and AUTH_TOKEN_FILE ${path.resolve(file)} cannot be read (${errorMessage(err)}): set AUTH_TOKEN to the receiver's, or point AUTH_TOKEN_FILE at the receiver's file`, { cause: err });
  }
  const token = text.trim();
  if (!AUTH_TOKEN_PATTERN.test(token)) throw new ItbError(ErrorCode.config, `AUTH_TOKEN_FILE ${path.resolve(file)} does not hold a valid secret: expected ${AUTH_TOKEN_ALLOWED}`);
  return token;
}

/** The secret in `file`, which is created (mode 0600) with a fresh one when it does not exist. */
export function readOrCreateTokenFile(file: string): { token: string; created: boolean } {
  const token = newAuthToken();
  try {
    // 'wx': never overwrite, so two receivers starting at once agree on the first one's secret.
    writeFileSync(file, `${token}\n`, { flag: 'wx', mode: 0o600 });
    return { token, created: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new ItbError(ErrorCode.config, `AUTH_TOKEN is unset and AUTH_TOKEN_FILE ${path.resolve(file)} cannot be created (${errorMessage(err)})`, { cause: err });
    }
  }
  return { token: readTokenFile(file), created: false };
}

/** The receiver's secret: AUTH_TOKEN, else AUTH_TOKEN_FILE's (created when missing). */
export function receiverAuthToken(config: Pick<Config, 'authToken' | 'authTokenFile'>): { token: string; createdFile: string | undefined } {
  if (config.authToken !== undefined) return { token: config.authToken, createdFile: undefined };
  const { token, created } = readOrCreateTokenFile(config.authTokenFile);
  return { token, createdFile: created ? path.resolve(config.authTokenFile) : undefined };
}

/** The transmitter's secret: AUTH_TOKEN, else AUTH_TOKEN_FILE's (read once the receiver answers, as it creates the file). */
export function transmitterAuthToken(config: Pick<Config, 'authToken' | 'authTokenFile'>): string {
  return config.authToken ?? readTokenFile(config.authTokenFile);
}

/** A start-up check for either service: an AUTH_TOKEN_FILE that exists must hold a valid secret (the receiver may create a missing one). */
export function authTokenFileIssues(env: NodeJS.ProcessEnv): ConfigIssue[] {
  if (env.AUTH_TOKEN?.trim()) return [];
  const file = env.AUTH_TOKEN_FILE?.trim() || DEFAULT_AUTH_TOKEN_FILE;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return AUTH_TOKEN_PATTERN.test(text.trim()) ? [] : [{ variable: 'AUTH_TOKEN_FILE', value: env.AUTH_TOKEN_FILE, allowed: `a file holding a secret of ${AUTH_TOKEN_ALLOWED}; ${path.resolve(file)} holds something else` }];
}
