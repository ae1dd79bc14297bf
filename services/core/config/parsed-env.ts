import type { z } from 'zod';
import type { ConfigIssue, TransportSpec } from './config-types.js';
import { REDACTED, redactUrl } from './redact.js';
import { passwordVariables, schemaFor, urlVariables, type Env } from './schema.js';

// The first step of parseConfig(): each variable parsed on its own, so one bad value never hides another, and what
// the later steps (the rules relating variables, the transports' settings) need to judge and report what parsed.

/** The environment after each variable went through its schema: what parsed, and every issue found so far. */
export interface ParsedEnv {
  env: Env;
  specs: readonly TransportSpec[];
  /** Each variable that parsed, by name, as its schema gave it (defaults filled in); a bad one is absent. */
  values: Record<string, unknown>;
  /** Every issue found so far, in the order they are reported; the later steps push theirs. */
  issues: ConfigIssue[];
  /** The URL settings of the transports (REDIS_URL once for the Redis ones). */
  urlVars: string[];
  /** What an issue shows of a value (the message goes to stderr): never a password, a URL without its credentials. */
  shown(name: string): string | undefined;
}

/** Parses every variable of `specs`' schema on its own, collecting an issue for each bad one. */
export function parseEachVariable(env: Env, specs: readonly TransportSpec[]): ParsedEnv {
  const shape = schemaFor(specs).shape as Record<string, z.ZodType<unknown, string | undefined>>;
  const issues: ConfigIssue[] = [];
  const values: Record<string, unknown> = {};
  const urlVars = urlVariables(specs);
  // AUTH_TOKEN too: a refused secret is still someone's secret, perhaps with one character wrong.
  const secretVars = new Set(['AUTH_TOKEN', ...urlVars.map((envVar) => passwordVariables(envVar).password)]);
  const shown = (name: string): string | undefined => {
    const raw = env[name];
    if (raw === undefined) return raw;
    if (secretVars.has(name)) return REDACTED;
    return urlVars.includes(name) ? redactUrl(raw) : raw;
  };
  for (const [name, schema] of Object.entries(shape)) {
    const parsed = schema.safeParse(env[name]);
    if (parsed.success) values[name] = parsed.data;
    else
      issues.push({ variable: name, value: shown(name), allowed: parsed.error.issues[0]?.message ?? 'a valid value' });
  }
  return { env, specs, values, issues, urlVars, shown };
}

/** Whether variable `name` parsed (a bad one did not, and the rules judge others against its default). */
export function parsedOk(parsed: ParsedEnv, name: string): boolean {
  return name in parsed.values;
}

/**
 * What a rule relating a variable to `name` adds to its issue when `name` is itself bad: the rule judged it against
 * `name`'s default (what runs once the bad one is unset) and says so, so that no bad variable hides another.
 */
export function standIn(parsed: ParsedEnv, name: string): string {
  return parsedOk(parsed, name) ? '' : `, its default: ${name} itself is bad`;
}

/** Whether `name` was set to something other than blanks: rules about two variables set together judge on that. */
export function isSet(parsed: ParsedEnv, name: string): boolean {
  return (parsed.env[name]?.trim() ?? '') !== '';
}
