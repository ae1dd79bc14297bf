import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import {
  formatConfigIssues,
  parseConfig,
  type Config,
  type ConfigIssue,
  type ParseOptions,
  type TransportSpec,
} from '../core/config/config.js';
import { directoryProblem, makeDirectories, openToOthersProblem } from './directories.js';

/** Exit codes of every entry: 0 all intact, 1 a transport failed or lost images, 2 bad configuration. */
export const ExitCode = { ok: 0, failed: 1, config: 2 } as const;

/**
 * Reads the configuration for `transports` (the transport table) from the environment, after loading `.env` from the
 * working directory when there is one (variables already set win over the file). Extra checks that need I/O add their
 * issues so every bad variable is reported at once; on any issue it prints them all and exits with code 2 before
 * anything else happens.
 */
export function configFromEnvOrExit(
  transports: readonly TransportSpec[],
  extraChecks: (env: NodeJS.ProcessEnv) => ConfigIssue[] = () => [],
  options: Pick<ParseOptions, 'shapesLink'> = {},
): Readonly<Config> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const result = configFromEnv(process.env, transports, extraChecks, options);
  if (!result.ok) {
    process.stderr.write(`${result.message}\n`);
    process.exit(ExitCode.config);
  }
  return result.config;
}

/**
 * The configuration for `transports` from `env` with `extraChecks`' issues added, or the message naming every bad
 * variable that configFromEnvOrExit prints before it exits 2.
 */
export function configFromEnv(
  env: NodeJS.ProcessEnv,
  transports: readonly TransportSpec[],
  extraChecks: (env: NodeJS.ProcessEnv) => ConfigIssue[] = () => [],
  options: Pick<ParseOptions, 'shapesLink'> = {},
): { ok: true; config: Readonly<Config> } | { ok: false; message: string } {
  const result = parseConfig(env, transports, { ...options, readSecretFile });
  const issues = [...(result.ok ? [] : result.issues), ...extraChecks(env)];
  if (!result.ok || issues.length > 0) return { ok: false, message: formatConfigIssues(issues) };
  return { ok: true, config: result.config };
}

/** Runs `close` once on SIGINT or SIGTERM, then exits; a second signal exits at once. */
export function onShutdownSignal(close: (signal: NodeJS.Signals) => Promise<number>): void {
  let closing = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (closing) process.exit(ExitCode.failed);
    closing = true;
    // Whatever close does, the process is gone within 5 s.
    setTimeout(() => process.exit(ExitCode.failed), 5000).unref();
    close(signal).then(
      (code) => process.exit(code),
      () => process.exit(ExitCode.failed),
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

/** IMAGE_PATH, when set, must name a readable file: checked at start, with the OS's reason. */
export function imagePathIssues(env: NodeJS.ProcessEnv): ConfigIssue[] {
  const imagePath = env.IMAGE_PATH?.trim();
  if (!imagePath) return [];
  try {
    accessSync(imagePath, constants.R_OK);
    if (!statSync(imagePath).isFile()) throw new ItbError(ErrorCode.config, 'not a regular file');
    return [];
  } catch (err) {
    return [{ variable: 'IMAGE_PATH', value: env.IMAGE_PATH, allowed: `a readable file (${errorMessage(err)})` }];
  }
}

/** "alice (uid 1000)"; in a container a uid may have no name (no passwd entry): then "uid 1234". */
function processUser(): string {
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  let name: string | undefined;
  try {
    name = os.userInfo().username;
  } catch {
    // no passwd entry for this uid
  }
  if (name === undefined) return uid === undefined ? 'this process' : `uid ${uid}`;
  return uid === undefined ? name : `${name} (uid ${uid})`;
}

/**
 * OUTPUT_DIR must be a directory this process can create and write, checked at start so a run
 * never ends with results it cannot save (a root-owned bind mount is the usual cause), and one
 * that others cannot write unless it is sticky. Creates nothing: {@link makeOutputDirOrExit} does,
 * once the whole configuration is accepted.
 */
export function outputDirIssues(env: NodeJS.ProcessEnv): ConfigIssue[] {
  const outputDir = env.OUTPUT_DIR?.trim() || './output';
  const problem = directoryProblem(outputDir);
  if (problem !== undefined) return [outputDirIssue(env.OUTPUT_DIR, `${path.resolve(outputDir)}: ${problem}`)];
  // Refused before anything is made or served: whoever can plant in it chooses what the receiver's routes open.
  const open = openToOthersProblem(outputDir);
  if (open === undefined) return [];
  return [
    {
      variable: 'OUTPUT_DIR',
      value: env.OUTPUT_DIR,
      allowed: `a directory others cannot write, or one with the sticky bit; ${path.resolve(outputDir)}: ${open}`,
    },
  ];
}

/**
 * Creates OUTPUT_DIR one level at a time; when that still fails (a race, a full disk), runs
 * `undo` (what the caller set up already) and exits 2 naming OUTPUT_DIR and the reason.
 */
export async function makeOutputDirOrExit(
  config: Readonly<Config>,
  undo: () => Promise<void> = async () => undefined,
): Promise<void> {
  try {
    await makeDirectories(config.outputDir);
  } catch (err) {
    await undo().catch(() => undefined);
    process.stderr.write(
      formatConfigIssues([
        outputDirIssue(process.env.OUTPUT_DIR, `${path.resolve(config.outputDir)}: ${errorMessage(err)}`),
      ]) + `\n`,
    );
    process.exit(ExitCode.config);
  }
}

function outputDirIssue(value: string | undefined, problem: string): ConfigIssue {
  return { variable: 'OUTPUT_DIR', value, allowed: `a directory ${processUser()} can create and write; ${problem}` };
}

/**
 * The log level to run with: LOG_LEVEL when set; otherwise "warn" when stderr is a terminal, where
 * the transmitter's progress bars are drawn and info lines would break them up, and "info" in
 * containers and CI.
 */
export function effectiveLogLevel(config: Readonly<Config>, env: NodeJS.ProcessEnv = process.env): Config['logLevel'] {
  if (env.LOG_LEVEL?.trim()) return config.logLevel;
  return process.stderr.isTTY ? 'warn' : config.logLevel;
}

/** Most bytes a *_PASSWORD_FILE may hold: a password, not a data file. */
const MAX_SECRET_FILE_BYTES = 64 * 1024;

/**
 * Reads a *_PASSWORD_FILE (REDIS_PASSWORD_FILE) for parseConfig(): a regular file, so a FIFO or a
 * device never holds the start up; it may belong to anyone (Docker's /run/secrets files are root's).
 */
export function readSecretFile(filePath: string): string {
  const stats = statSync(filePath);
  if (!stats.isFile()) throw new ItbError(ErrorCode.config, `${filePath} is not a regular file`);
  if (stats.size > MAX_SECRET_FILE_BYTES)
    throw new ItbError(
      ErrorCode.config,
      `${filePath} holds ${stats.size} bytes, more than the ${MAX_SECRET_FILE_BYTES} a password file may`,
    );
  return readFileSync(filePath, 'utf8');
}
