import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { AUTH_TOKEN_PATTERN, judgeSecretFile } from '../core/wire/auth.js';
import { AUTH_TOKEN_ALLOWED, DEFAULT_AUTH_TOKEN_FILE, type Config, type ConfigIssue } from '../core/config/config.js';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';

// Where the shared secret comes from. AUTH_TOKEN wins (npm start sets a fresh one per run). Without
// it, the secret lives in AUTH_TOKEN_FILE, which the receiver creates with a random secret,
// readable by its owner only, when it is missing, the way Erlang's cookie file works: a receiver
// started on its own is never open to anyone, and a transmitter started next to it (or sharing
// the file through a volume, as under docker compose) finds the secret without being told.
//
// The file is trusted only when it is the service's: opened without following a link (a link
// planted at the path would hand the service someone else's secret), then judged on the open
// descriptor, so nothing can be swapped in between the check and the read (judgeSecretFile).

/** What AUTH_TOKEN_FILE must be, in words. */
export const AUTH_TOKEN_FILE_ALLOWED =
  `a regular file (not a link) holding a secret of ${AUTH_TOKEN_ALLOWED}, owned by this service's user with mode ` +
  `0600 or 0400 (or by root, readable by its group at most)`;

/** Bytes read from a token file at most: a secret is 256 characters and a line end. */
const TOKEN_FILE_MAX_BYTES = 4096;

// O_NOFOLLOW: a link at the path fails with ELOOP. O_NONBLOCK: a FIFO planted there opens at once
// (and is refused as not a regular file) instead of waiting for a writer forever.
const OPEN_NO_FOLLOW = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/** A token file's secret, and why it was trusted (for the log). */
export interface TokenFromFile {
  token: string;
  /** The file, as an absolute path. */
  file: string;
  trustedBecause: string;
}

type TokenFileOutcome =
  | { state: 'missing' }
  | { state: 'refused'; reason: string }
  | ({ state: 'trusted' } & TokenFromFile);

/** A fresh random secret, as `npm start` and the receiver make them. */
export function newAuthToken(): string {
  return randomBytes(32).toString('base64url');
}

// Why the path is a link, which O_NOFOLLOW refused: where it points, and whether that exists.
function linkReason(file: string, err: unknown): string {
  let target: string;
  try {
    if (!lstatSync(file).isSymbolicLink()) return `cannot be read (${errorMessage(err)})`;
    target = readlinkSync(file);
  } catch {
    return `cannot be read (${errorMessage(err)})`;
  }
  let dangling = false;
  try {
    statSync(file);
  } catch {
    dangling = true;
  }
  const kind = dangling
    ? `a dangling symbolic link (to ${target}, which does not exist)`
    : `a symbolic link (to ${target})`;
  return (
    `${kind}: a link is never followed, since whoever placed it chooses the secret; point AUTH_TOKEN_FILE at the ` +
    `file itself`
  );
}

function openTokenFile(file: string): TokenFileOutcome {
  const shown = path.resolve(file);
  let fd: number;
  try {
    fd = openSync(file, OPEN_NO_FOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { state: 'missing' };
    // ELOOP (Linux, macOS) or EMLINK (FreeBSD): the last component is a link.
    if (code === 'ELOOP' || code === 'EMLINK') return { state: 'refused', reason: linkReason(file, err) };
    return { state: 'refused', reason: `cannot be read (${errorMessage(err)})` };
  }
  try {
    const stats = fstatSync(fd);
    const verdict = judgeSecretFile(
      { regularFile: stats.isFile(), ownerUid: stats.uid, mode: stats.mode },
      process.getuid?.(),
      shown,
    );
    if (!verdict.trusted) return { state: 'refused', reason: verdict.reason };
    if (stats.size > TOKEN_FILE_MAX_BYTES)
      return {
        state: 'refused',
        reason: `is ${stats.size} bytes, more than a secret's file holds (${TOKEN_FILE_MAX_BYTES} at most)`,
      };
    const token = readFileSync(fd, 'utf8').trim();
    if (!AUTH_TOKEN_PATTERN.test(token)) return { state: 'refused', reason: 'holds something other than a secret' };
    return { state: 'trusted', token, file: shown, trustedBecause: verdict.because };
  } catch (err) {
    return { state: 'refused', reason: `cannot be read (${errorMessage(err)})` };
  } finally {
    closeSync(fd);
  }
}

// "AUTH_TOKEN_FILE /x/token is a symbolic link …": the path and the reason, for an ITB_ERR_CONFIG error.
function refusal(file: string, reason: string): ItbError {
  return new ItbError(
    ErrorCode.config,
    `AUTH_TOKEN is unset and AUTH_TOKEN_FILE ${path.resolve(file)} is refused: ${reason} ` +
      `(expected ${AUTH_TOKEN_FILE_ALLOWED})`,
  );
}

/**
 * The secret in `file`; throws an ITB_ERR_CONFIG error naming the file and the reason when it is missing or not
 * trusted.
 */
export function readTokenFile(file: string): TokenFromFile {
  const outcome = openTokenFile(file);
  if (outcome.state === 'missing') {
    throw new ItbError(
      ErrorCode.config,
      `AUTH_TOKEN is unset and AUTH_TOKEN_FILE ${path.resolve(file)} does not exist: set AUTH_TOKEN to the ` +
        `receiver's, or point AUTH_TOKEN_FILE at the receiver's file`,
    );
  }
  if (outcome.state === 'refused') throw refusal(file, outcome.reason);
  return { token: outcome.token, file: outcome.file, trustedBecause: outcome.trustedBecause };
}

/** The secret in `file`, which is created (mode 0600) with a fresh one when nothing is at its path. */
export function readOrCreateTokenFile(file: string): TokenFromFile & { created: boolean } {
  const token = newAuthToken();
  try {
    // 'wx' (O_CREAT|O_EXCL): never overwrite, so two receivers starting at once agree on the first
    // one's secret, and fails on any link at the path, dangling or not, which is then refused below.
    writeFileSync(file, `${token}\n`, { flag: 'wx', mode: 0o600 });
    return { token, file: path.resolve(file), trustedBecause: 'created by this receiver, mode 0600', created: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new ItbError(
        ErrorCode.config,
        `AUTH_TOKEN is unset and AUTH_TOKEN_FILE ${path.resolve(file)} cannot be created (${errorMessage(err)})`,
        { cause: err },
      );
    }
  }
  return { ...readTokenFile(file), created: false };
}

/** The receiver's secret: AUTH_TOKEN, else AUTH_TOKEN_FILE's (created when missing), with the file it came from. */
export function receiverAuthToken(config: Pick<Config, 'authToken' | 'authTokenFile'>): {
  token: string;
  file: (TokenFromFile & { created: boolean }) | undefined;
} {
  if (config.authToken !== undefined) return { token: config.authToken, file: undefined };
  const file = readOrCreateTokenFile(config.authTokenFile);
  return { token: file.token, file };
}

/**
 * The transmitter's secret: AUTH_TOKEN, else AUTH_TOKEN_FILE's (read once the receiver answers, as it creates the
 * file).
 */
export function transmitterAuthToken(config: Pick<Config, 'authToken' | 'authTokenFile'>): {
  token: string;
  file: TokenFromFile | undefined;
} {
  if (config.authToken !== undefined) return { token: config.authToken, file: undefined };
  const file = readTokenFile(config.authTokenFile);
  return { token: file.token, file };
}

/**
 * A start-up check for either service: an AUTH_TOKEN_FILE that exists must be trusted and hold a
 * valid secret (the receiver may create a missing one); a link, dangling or not, is refused.
 */
export function authTokenFileIssues(env: NodeJS.ProcessEnv): ConfigIssue[] {
  if (env.AUTH_TOKEN?.trim()) return [];
  const file = env.AUTH_TOKEN_FILE?.trim() || DEFAULT_AUTH_TOKEN_FILE;
  const outcome = openTokenFile(file);
  if (outcome.state !== 'refused') return [];
  return [
    {
      variable: 'AUTH_TOKEN_FILE',
      value: env.AUTH_TOKEN_FILE,
      allowed: `${AUTH_TOKEN_FILE_ALLOWED}; ${path.resolve(file)} is refused: ${outcome.reason}`,
    },
  ];
}
