import type { ConfigIssue } from '../core/config/config.js';
import { authTokenFileIssues } from '../shared/auth-token.js';
import { imagePathIssues } from '../shared/entry.js';

/** The transmitter's checks of its environment that need I/O (IMAGE_PATH readable, AUTH_TOKEN_FILE trusted). */
export function transmitterEnvChecks(env: NodeJS.ProcessEnv): ConfigIssue[] {
  return [...imagePathIssues(env), ...authTokenFileIssues(env)];
}
